"""Replay regressions: a recorded run driven again through today's harness with its model's
recorded replies. Unchanged, it matches event for event; a guard that now says something else,
or a permission that now decides otherwise, is found at the seq where it first shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reins import Agent
from reins.core._errors import UsageError
from reins.eval import replay_events, replay_run
from reins.events import EVENT
from reins.permissions import PermissionRules, Permissions
from reins.store import MemoryLog, SQLiteLog
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply

SCRIPT = [
    reply("Reading.", call("read_file", "r1", path="notes.txt")),
    reply("Again.", call("read_file", "r2", path="notes.txt")),  # the guard answers from cache
    reply("Writing.", call("write_file", "w1", path="out.txt", content="done\n")),
    "FINAL_ANSWER: out.txt written",
]


async def recorded(workspace: Path, log: SQLiteLog) -> str:
    (workspace / "notes.txt").write_text("a note\n")
    fixture = workspace.parent / "fixture"
    shutil.copytree(workspace, fixture)  # the workspace as the run found it
    agent = Agent(model=ScriptedModel(SCRIPT), tools=BUILTIN_TOOLS, workspace=workspace, log=log)
    result = await agent.run("read the notes, then write out.txt")
    assert result.final_answer == "out.txt written"
    return result.run_id


async def test_an_unchanged_run_replays_with_no_divergence(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    run_id = await recorded(workspace, sqlite_log)
    replayed = await replay_run(sqlite_log, run_id, workspace=workspace.parent / "fixture")
    events = await sqlite_log.events(run_id)
    assert replayed.divergence is None
    # Every event compared, but the checkpoints (where the files were kept, not replayed).
    assert [e.kind for e in events].count("checkpoint") == 2
    assert replayed.compared == len(events) - 2
    assert replayed.replay_run_id not in ("", run_id)
    again = await sqlite_log.events(replayed.replay_run_id)  # the replay is on record too
    assert [e.kind for e in again] == [e.kind for e in events if e.kind != "checkpoint"]


async def test_a_guard_that_changed_is_found_at_the_seq_it_first_shows(
    workspace: Path, sqlite_log: SQLiteLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await recorded(workspace, sqlite_log)
    events = await sqlite_log.events(run_id)
    blocked = next(e for e in events if e.kind == "response_rejected")  # the repeated read
    monkeypatch.setattr(  # today's code says it otherwise
        "reins.policies._repeat_block.REPEAT_NOTE", "Not run again: the same call as before"
    )
    replayed = await replay_run(sqlite_log, run_id, workspace=workspace.parent / "fixture")
    divergence = replayed.divergence
    assert divergence is not None
    assert divergence.seq == blocked.seq
    assert divergence.before is not None
    assert divergence.after is not None
    assert divergence.before["observation"].startswith("Not run: you made this exact call")
    assert divergence.after["observation"].startswith("Not run again: the same call")
    assert replayed.compared == blocked.seq - 1
    stopped = await sqlite_log.events(replayed.replay_run_id)
    assert stopped[-1].kind == "run_finished"  # cancelled at the divergence: nothing invented
    assert stopped[-1].stop_reason == "cancelled"


async def test_a_permission_that_now_decides_otherwise_diverges_at_its_call(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    run_id = await recorded(workspace, sqlite_log)
    denied = Permissions(user=PermissionRules(tools={"write_file": "deny"}))
    replayed = await replay_run(
        sqlite_log, run_id, workspace=workspace.parent / "fixture", permissions=denied
    )
    events = await sqlite_log.events(run_id)
    written = next(e for e in events if e.kind == "tool_call_started" and e.call.id == "w1")
    divergence = replayed.divergence
    assert divergence is not None
    assert divergence.seq == written.seq
    assert divergence.before is not None
    assert divergence.before["kind"] == "tool_call_started"
    assert divergence.after is not None
    assert divergence.after["kind"] == "permission_decided"
    assert divergence.after["allowed"] is False


async def test_an_unknown_run_is_one_clear_error(sqlite_log: SQLiteLog) -> None:
    with pytest.raises(UsageError, match="no run 'nope'"):
        await replay_run(sqlite_log, "nope")


REPLAYS = Path(__file__).parent / "replays"
RECORDED = {path.stem: path.read_text() for path in sorted(REPLAYS.glob("*.jsonl"))}


@pytest.mark.parametrize("name", sorted(RECORDED))
async def test_the_checked_in_runs_replay_unchanged(name: str) -> None:
    """tests/replays/NAME.jsonl is a run's events, NAME/ the workspace it started in: today's
    harness, fed its model's replies, must do what it did then. A change to a guard, a tool's
    output or a permission shows here as the first event that differs."""
    events = [EVENT.validate_json(line) for line in RECORDED[name].splitlines()]
    replayed = await replay_events(events, MemoryLog(), workspace=REPLAYS / name)
    assert replayed.divergence is None, replayed.divergence
    assert replayed.compared == len(events)


def test_reins_eval_replay_says_as_recorded_or_where_it_first_differs(tmp_path: Path) -> None:
    from .test_cli import reins

    recorded = str(REPLAYS / "edit_and_run.jsonl")
    store = ("--store", str(tmp_path / "store"))
    same = reins(
        "eval", "--replay", recorded, "-w", str(REPLAYS / "edit_and_run"), *store, cwd=tmp_path
    )
    empty = reins("eval", "--replay", recorded, *store, cwd=tmp_path)  # no app.toml to edit
    (tmp_path / "bad.jsonl").write_text('{"kind": "nothing"}\n')
    bad = reins("eval", "--replay", "bad.jsonl", *store, cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    assert "as recorded (19 events)" in same.stdout
    assert empty.returncode == 1
    assert "first differs at seq 5" in empty.stdout
    assert "Replaced 1 occurrence" in empty.stdout  # before
    assert bad.returncode == 2
    assert "bad.jsonl: line 1 is not an event" in bad.stderr
