"""Checkpoints, diffs, undo and rewind: a run's changes to its workspace (file tools and
commands, in the real sandbox) snapshotted in a shadow git repository, shown, and put back."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from reins import Agent
from reins.core._errors import UsageError
from reins.core._state import RunState
from reins.events import Checkpoint, FilesRestored, Notice
from reins.store import MemoryLog, SQLiteLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .test_cli import reins, script

STEPS = [
    reply("", call("write_file", "w1", path="new.txt", content="brand new\n")),
    reply("", call("read_file", "r1", path="kept.txt")),  # reads: no checkpoint
    reply("", call("edit_file", "e1", path="kept.txt", old="old line", new="new line")),
    reply(
        "",
        call(
            "run_command",
            "c1",
            command="rm gone.txt && rm -r olddir && mkdir -p made/sub && echo x > made/sub/f.txt",
        ),
    ),
    "FINAL_ANSWER: done",
]


def _tree(root: Path) -> dict[str, Any]:
    """Every file and folder under `root`: a file's bytes and mode, a folder as such."""
    found: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        mode = stat.S_IMODE(path.lstat().st_mode)
        found[rel] = ("dir", mode) if path.is_dir() else (path.read_bytes(), mode)
    return found


def _plain(step: Any) -> Any:
    """A scripted reply as a script file holds it."""
    if isinstance(step, str):
        return step
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    return {"text": step.text, "tool_calls": calls}


def _lay_out(workspace: Path) -> None:
    (workspace / "kept.txt").write_text("first\nold line\nlast\n")
    (workspace / "gone.txt").write_text("to be deleted\n")
    (workspace / "olddir").mkdir()
    (workspace / "olddir" / "inner.txt").write_text("inside\n")


def _agent(workspace: Path, log: Any, script: list[Any], **more: Any) -> Agent:
    return Agent(
        model=ScriptedModel(script),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        log=log,
        approval="allow",
        **more,
    )


async def test_a_run_is_checkpointed_shown_and_undone(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _lay_out(workspace)
    before = _tree(workspace)
    agent = _agent(workspace, sqlite_log, STEPS)
    result = await agent.run("change things")
    assert result.stop_reason == "end_turn", result
    events = await sqlite_log.events(result.run_id)
    checkpoints = [e for e in events if isinstance(e, Checkpoint)]
    # Before steps 1, 3 and 4 changed something (step 2 only read), then as the run left them.
    assert [(c.step, c.at_end) for c in checkpoints] == [
        (1, False),
        (3, False),
        (4, False),
        (5, True),
    ]
    assert events[-2] == checkpoints[-1]  # taken just before the run finished
    started = next(e.seq for e in events if e.kind == "tool_call_started" and e.step == 1)
    ran = next(e.seq for e in events if e.kind == "tool_call_finished" and e.step == 1)
    assert checkpoints[0].seq < started < ran  # before the call is on record as started
    assert RunState.fold(events).checkpoints == {c.step: c.snapshot for c in checkpoints[:3]}

    whole = await agent.diff(result.run_id)
    assert "+brand new" in whole
    assert "-old line" in whole
    assert "+new line" in whole
    assert "gone.txt" in whole
    assert "-to be deleted" in whole
    assert "made/sub/f.txt" in whole
    assert "olddir/inner.txt" in whole
    step3 = await agent.diff(result.run_id, step=3)
    assert "+new line" in step3
    assert "brand new" not in step3
    assert "gone.txt" not in step3
    assert await agent.diff(result.run_id, step=2) == ""  # it only read

    restored = await agent.undo(result.run_id)
    assert _tree(workspace) == before  # byte for byte: the folder made is gone, the rest back
    assert sorted(restored.paths) == [
        "gone.txt",
        "kept.txt",
        "made/sub/f.txt",
        "new.txt",
        "olddir/inner.txt",
    ]
    assert (restored.to_step, restored.forced) == (0, ())
    logged = await sqlite_log.events(result.run_id)
    assert logged[-1] == restored
    assert isinstance(restored, FilesRestored)
    assert logged[:-1] == events  # the rest of the log as it was
    with pytest.raises(UsageError, match="undone already"):
        await agent.undo(result.run_id)


async def test_undo_to_a_step_keeps_the_steps_before_it(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _lay_out(workspace)
    agent = _agent(workspace, sqlite_log, STEPS)
    result = await agent.run("change things")
    await agent.undo(result.run_id, to_step=3)  # steps 1 to 3 stay, step 4's command goes
    assert (workspace / "new.txt").read_text() == "brand new\n"
    assert "new line" in (workspace / "kept.txt").read_text()
    assert (workspace / "gone.txt").read_text() == "to be deleted\n"
    assert (workspace / "olddir" / "inner.txt").is_file()
    assert not (workspace / "made").exists()


async def test_undo_refuses_a_file_changed_since_unless_forced(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _lay_out(workspace)
    agent = _agent(workspace, sqlite_log, STEPS)
    result = await agent.run("change things")
    (workspace / "new.txt").write_text("the user's own words\n")
    after = _tree(workspace)
    with pytest.raises(UsageError, match=r"changed again since") as refused:
        await agent.undo(result.run_id)
    assert "new.txt" in str(refused.value)
    assert "kept.txt" not in str(refused.value)
    assert _tree(workspace) == after  # nothing was put back
    assert not any(isinstance(e, FilesRestored) for e in await sqlite_log.events(result.run_id))
    restored = await agent.undo(result.run_id, force=True)
    assert restored.forced == ("new.txt",)
    assert not (workspace / "new.txt").exists()
    assert (workspace / "kept.txt").read_text() == "first\nold line\nlast\n"


async def test_rewind_forks_and_puts_the_files_back_to_that_step(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _lay_out(workspace)
    agent = _agent(workspace, sqlite_log, STEPS)
    result = await agent.run("change things")
    original = await sqlite_log.events(result.run_id)
    session_id, fork_id, restored = await agent.rewind(result.run_id, step=3)
    assert restored is not None
    assert restored.to_step == 3
    assert (await sqlite_log.events(result.run_id)) == original  # the original untouched
    forked = await sqlite_log.events(fork_id)
    assert forked[-1] == restored
    assert forked[1].kind == "forked_from"
    assert {e.session_id for e in forked} == {session_id}
    assert (workspace / "gone.txt").is_file()
    assert not (workspace / "made").exists()
    assert (workspace / "new.txt").is_file()
    assert "new line" in (workspace / "kept.txt").read_text()
    # The fork goes on from there, with another approach.
    replies = iter([reply("", call("write_file", "w9", path="other.txt", content="9\n")), "ok"])
    other = Agent(
        model=FunctionModel(lambda messages, tools: next(replies)),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        log=sqlite_log,
    )
    resumed = await other.resume(fork_id)
    assert resumed.stop_reason == "end_turn", resumed.detail
    assert resumed.run_id == fork_id
    assert (workspace / "other.txt").read_text() == "9\n"
    assert "+9" in await other.diff(fork_id, step=4)


async def test_no_checkpoints_when_off_or_the_log_is_in_memory(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    script = [reply("", call("write_file", "w1", path="a.txt", content="a\n")), "FINAL_ANSWER: ok"]
    off = await _agent(workspace, sqlite_log, script, checkpoints=False).run("write")
    events = await sqlite_log.events(off.run_id)
    assert not any(isinstance(e, Checkpoint) for e in events)
    with pytest.raises(UsageError, match="changed no files"):
        await _agent(workspace, sqlite_log, []).undo(off.run_id)
    memory = MemoryLog()
    agent = _agent(workspace, memory, script)
    run = await agent.run("write")
    assert not any(isinstance(e, Checkpoint) for e in await memory.events(run.run_id))
    with pytest.raises(UsageError, match="log on disk"):
        await agent.diff(run.run_id)


async def test_without_git_the_run_says_so_once_and_goes_on(
    workspace: Path, sqlite_log: SQLiteLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    script = [
        reply("", call("write_file", "w1", path="a.txt", content="a\n")),
        reply("", call("write_file", "w2", path="b.txt", content="b\n")),
        "FINAL_ANSWER: ok",
    ]
    result = await _agent(workspace, sqlite_log, script).run("write")
    assert result.stop_reason == "end_turn"
    assert (workspace / "b.txt").read_text() == "b\n"
    events = await sqlite_log.events(result.run_id)
    said = [e for e in events if isinstance(e, Notice) and e.source == "checkpoints"]
    assert len(said) == 1
    assert "git" in said[0].text
    assert "cannot be undone" in said[0].text
    assert not any(isinstance(e, Checkpoint) for e in events)


def test_the_commands_show_a_diff_undo_and_rewind(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _lay_out(project)
    before = _tree(project)
    model = script(tmp_path / "steps.json", [_plain(r) for r in STEPS])
    store = ("--store", str(tmp_path / "store"))
    ran = reins("run", "change things", "--model", model, "--yes", *store, cwd=project)
    assert ran.returncode == 0, ran.stderr
    shown = reins("diff", "last", *store, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "+brand new" in shown.stdout
    assert "+new line" in shown.stdout
    only = reins("diff", "last", "--step", "3", *store, cwd=project)
    assert "+new line" in only.stdout
    assert "brand new" not in only.stdout
    rewound = reins("rewind", "last", "--step", "3", *store, cwd=project)
    assert rewound.returncode == 0, rewound.stderr
    assert "forked run" in rewound.stdout
    assert "reins resume" in rewound.stdout
    assert "put back 3 file(s) as step 3 left them" in rewound.stdout
    original = rewound.stdout.split("forked run ")[1].split()[0]
    assert (project / "gone.txt").is_file()
    assert not (project / "made").exists()
    assert (project / "new.txt").read_text() == "brand new\n"  # step 1's, kept
    (project / "new.txt").write_text("mine now\n")
    refused = reins("undo", original, *store, cwd=project)
    assert refused.returncode != 0
    assert "new.txt" in refused.stderr
    assert "--force" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert (project / "new.txt").read_text() == "mine now\n"
    undone = reins("undo", original, "--force", *store, cwd=project)
    assert undone.returncode == 0, undone.stderr
    assert "put back 5 file(s) as before the run" in undone.stdout
    assert _tree(project) == before


async def test_the_stream_carries_every_checkpoint_the_log_holds(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _lay_out(workspace)
    agent = _agent(workspace, sqlite_log, STEPS)
    streamed = [e async for e in agent.iter("change things") if e.kind != "text_delta"]
    logged = await sqlite_log.events(streamed[0].run_id)
    assert streamed == logged
    assert [e.kind for e in streamed[-2:]] == ["checkpoint", "run_finished"]
