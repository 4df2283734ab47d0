"""Modes through the public API: told in the prompt, enforced where tools run, kept by a resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from reins import Agent, Budgets, StopReason, SystemMessage, ToolResultMessage, UsageError
from reins.events import AnswerRejected, ApprovalRequested
from reins.store import MemoryLog
from reins.testing import ScriptedModel

from .helpers import call, reply


def results(messages: list[object]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


@pytest.mark.parametrize(("mode", "folder"), [("explore", "docs/explore"), ("plan", "docs/plan")])
async def test_a_read_only_mode_refuses_changes_but_in_its_folder(
    workspace: Path, mode: str, folder: str
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    replies = [
        reply("", call("write_file", "a", path="app.py", content="x = 2\n")),
        reply("", call("edit_file", "b", path="app.py", old="x = 1", new="x = 3")),
        reply("", call("run_command", "c", command="touch made.txt")),
        reply("", call("write_file", "d", path=f"{folder}/NOTES.md", content="# Notes\n")),
        reply("", call("read_file", "e", path="app.py")),
        "FINAL_ANSWER: noted",
    ]
    log = MemoryLog()
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, log=log, mode=mode)
    result = await agent.run("look around")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    system = result.messages[0]
    assert isinstance(system, SystemMessage)
    assert f"Mode: {mode}. This run is read-only" in system.content
    write, edit, command, note, read = results(result.messages)
    assert write.is_error
    assert write.content == (
        f"write_file may not change 'app.py' in {mode} mode: the run is read-only, but for "
        f"files under {folder}/"
    )
    assert edit.is_error
    assert f"in {mode} mode" in edit.content
    assert command.is_error
    assert command.content.startswith(f"run_command is not available in {mode} mode")
    assert not note.is_error
    assert read.content == "x = 1\n\n[1 line in all]"
    assert (workspace / folder / "NOTES.md").read_text() == "# Notes\n"
    assert not (workspace / "made.txt").exists()
    events = await log.events(result.run_id)
    assert not [e for e in events if isinstance(e, ApprovalRequested)]  # refused, not asked


async def test_write_test_mode_wants_a_test_run_after_the_last_change(workspace: Path) -> None:
    replies = [
        reply("", call("write_file", "a", path="app.py", content="x = 2\n")),
        "FINAL_ANSWER: done",
        reply("", call("run_command", "b", command="python3 -c 'import app'")),
        "FINAL_ANSWER: done, and tested",
    ]
    log = MemoryLog()
    agent = Agent(
        model=ScriptedModel(replies),
        workspace=workspace,
        log=log,
        mode="write-test",
        approval="allow",
    )
    result = await agent.run("set x to 2")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    assert result.final_answer == "done, and tested"
    rejected = [e for e in await log.events(result.run_id) if isinstance(e, AnswerRejected)]
    assert [r.source for r in rejected] == ["TestsAfterChanges"]
    assert rejected[0].observation.startswith("[write-test] You changed files after")
    assert "Mode: write-test." in result.messages[0].content  # type: ignore[union-attr]


async def test_write_no_test_mode_is_told(workspace: Path) -> None:
    told = await Agent(
        model=ScriptedModel(["FINAL_ANSWER: ok"]), workspace=workspace, mode="write-no-test"
    ).run("x")
    assert "do not run tests or builds unless" in told.messages[0].content  # type: ignore[union-attr]


def test_an_unknown_mode_is_refused_when_the_agent_is_made(workspace: Path) -> None:
    """A typo must not change what a run may do: one error naming the modes, as --mode's."""
    with pytest.raises(UsageError) as refused:
        Agent(model=ScriptedModel(["FINAL_ANSWER: ok"]), workspace=workspace, mode="Wander")
    assert str(refused.value) == (
        "mode='Wander': no such mode; the modes: explore, plan, write-test, write-no-test"
    )


async def test_a_resumed_run_keeps_its_mode(workspace: Path) -> None:
    replies = [
        reply("", call("read_file", "a", path=".", start_line=1)),
        reply("", call("write_file", "b", path="a.txt", content="a")),
        "FINAL_ANSWER: ok",
    ]
    log = MemoryLog()
    first = await Agent(
        model=ScriptedModel(replies),
        workspace=workspace,
        log=log,
        mode="plan",
        budgets=Budgets(max_steps=1),
    ).run("x")
    assert first.stop_reason is StopReason.MAX_STEPS
    result = await Agent(model=ScriptedModel(replies), workspace=workspace, log=log).resume(
        first.run_id, max_steps=5
    )
    assert result.stop_reason is StopReason.END_TURN
    assert "in plan mode" in results(result.messages)[-1].content
    assert not (workspace / "a.txt").exists()
