"""Forks: a new session whose run holds another run's events up to a point (the original
untouched), then `forked_from`; resumed, it goes on from there; its session takes new turns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reins import Agent, Message, ToolSpec
from reins.core._errors import UsageError
from reins.core._state import RunState
from reins.events import ForkedFrom
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .test_cli import reins

WRITES = [
    reply("One.", call("write_file", "w1", path="one.txt", content="1\n")),
    reply("Two.", call("write_file", "w2", path="two.txt", content="2\n")),
    reply("Three.", call("write_file", "w3", path="three.txt", content="3\n")),
    "FINAL_ANSWER: three written",
]


def _plain(event: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(event.model_dump_json())
    return {k: v for k, v in data.items() if k not in ("session_id", "run_id", "seq")}


async def test_a_fork_holds_the_prefix_leaves_the_original_and_resumes_from_there(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    agent = Agent(
        model=ScriptedModel(WRITES), tools=BUILTIN_TOOLS, workspace=workspace, log=sqlite_log
    )
    original = await agent.run("write three files")
    before = await sqlite_log.events(original.run_id)
    session_id, fork_id = await agent.fork(original.run_id, step=1)
    forked = await sqlite_log.events(fork_id)
    after = await sqlite_log.events(original.run_id)
    second_step = next(e.seq for e in before if e.kind == "model_request" and e.step == 2)
    prefix = [e for e in before if e.seq < second_step]
    assert after == before  # the original untouched
    assert isinstance(forked[1], ForkedFrom)
    assert (forked[1].from_run_id, forked[1].from_seq) == (original.run_id, second_step - 1)
    copied = [forked[0], *forked[2:]]
    assert [_plain(e) for e in copied] == [_plain(e) for e in prefix]
    assert [e.seq for e in forked] == list(range(1, len(forked) + 1))
    assert {e.session_id for e in forked} == {session_id} != {original.session_id}
    state = RunState.fold(forked)
    assert state.transcript() == RunState.fold(prefix).transcript()
    assert state.forked_from == forked[1]

    seen: list[Sequence[Message]] = []

    def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        seen.append(messages)
        return reply("", call("final_answer", "f1", answer="another way"))

    other = Agent(
        model=FunctionModel(model), tools=BUILTIN_TOOLS, workspace=workspace, log=sqlite_log
    )
    resumed = await other.resume(fork_id)
    assert resumed.stop_reason == "end_turn"
    assert resumed.final_answer == "another way"
    results = [m for m in seen[0] if m.role == "tool"]
    assert [m.call_id for m in results] == ["w1"]  # the history stops after step 1
    answer = FunctionModel(lambda messages, tools: "FINAL_ANSWER: next")
    turn = await Agent(model=answer, workspace=workspace, log=sqlite_log).run(
        "and now?", session_id=session_id
    )
    assert turn.final_answer == "next"
    assert await sqlite_log.events(original.run_id) == before


async def test_a_fork_at_a_seq_or_at_the_end_and_bad_points(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    agent = Agent(
        model=ScriptedModel(WRITES), tools=BUILTIN_TOOLS, workspace=workspace, log=sqlite_log
    )
    original = await agent.run("write three files")
    before = await sqlite_log.events(original.run_id)
    _, at_five = await agent.fork(original.run_id, at_seq=5)
    _, whole = await agent.fork(original.run_id)
    assert len(await sqlite_log.events(at_five)) == 6
    ended = RunState.fold(await sqlite_log.events(whole))
    assert ended.finished is not None
    assert ended.finished.final_answer == "three written"
    for bad, said in (
        ({"at_seq": len(before) + 1}, "no seq"),
        ({"step": 9}, "no step 9"),
        ({"at_seq": 2, "step": 1}, "not both"),
    ):
        with pytest.raises(UsageError, match=said):
            await agent.fork(original.run_id, **bad)


def test_reins_fork_prints_the_fork_and_show_names_its_origin(tmp_path: Path) -> None:
    from .test_cli import HELLO, script

    model = script(tmp_path / "hello.json", HELLO)
    store = ("--store", str(tmp_path / "store"))
    ran = reins("run", "write hello.txt", "--model", model, *store, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    forked = reins("fork", "last", "--step", "1", *store, cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.split("run ")[2].split()[0]
    shown = reins("show", fork_id, *store, cwd=tmp_path)
    bad = reins("fork", "last", "--step", "7", *store, cwd=tmp_path)
    tree = reins("sessions", "--tree", *store, cwd=tmp_path)
    assert "forked from run" in shown.stdout
    lines = tree.stdout.splitlines()
    assert len(lines) == 2, tree.stdout
    assert not lines[0].startswith(" ")
    assert "write hello.txt" in lines[0]
    assert lines[1].startswith("  ")  # the fork, under the session it came from
    assert "⑂ run" in lines[1]
    assert bad.returncode == 2
    assert "no step 7" in bad.stderr
