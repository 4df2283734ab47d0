"""Resume = fold the log and continue: a run killed between any two events resumes to the
transcript an uninterrupted run produces; one killed inside a writing tool tells the model."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reins import Budgets, Message, RunState, SQLiteLog, StopReason, ToolResultMessage, UsageError

from .crash_driver import KILL_IN_TOOL, make_agent

ROOT = Path(__file__).resolve().parent.parent
Reference = tuple[list[Message], dict[str, str], int]


def run_child(store: Path, workspace: Path, kill_at: int) -> int:
    child = subprocess.run(
        [sys.executable, "-m", "tests.crash_driver", str(store), str(workspace), str(kill_at)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stderr == "", child.stderr
    return child.returncode


def snapshot(workspace: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(workspace.iterdir()) if p.is_file()}


async def crash_and_resume(tmp_path: Path, kill_at: int) -> tuple[RunState, dict[str, str]]:
    workspace = tmp_path / "ws"  # one path for every run, so system prompts agree
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir()
    store = tmp_path / f"store{kill_at}"
    assert run_child(store, workspace, kill_at) == (-9 if kill_at else 0)
    if not kill_at:
        log = SQLiteLog(store)
        [info] = await log.runs()
        state = RunState.fold(await log.events(info.run_id))
        await log.close()
        return state, snapshot(workspace)

    agent = make_agent(str(store), str(workspace))
    [info] = await agent.log.runs()
    assert info.stop_reason is None  # the index says unfinished
    await agent.resume(info.run_id)
    state = await agent.state(info.run_id)
    await agent.log.close()
    return state, snapshot(workspace)


@pytest.fixture
async def reference(tmp_path: Path) -> Reference:
    state, files = await crash_and_resume(tmp_path, 0)
    assert state.finished is not None
    assert state.finished.final_answer == "a.txt says AA"
    assert files == {"a.txt": "AA\n", "progress.txt": "checked\n"}
    return state.transcript(), files, state.next_seq - 1


@pytest.mark.slow
async def test_kill_between_any_two_events_then_resume(
    tmp_path: Path, reference: Reference
) -> None:
    transcript, files, count = reference
    assert count > 20
    for kill_at in range(1, count):
        state, after = await crash_and_resume(tmp_path, kill_at)
        assert state.finished is not None
        assert state.finished.stop_reason is StopReason.END_TURN
        assert state.transcript() == transcript, f"killed after event {kill_at}"
        assert after == files, f"killed after event {kill_at}"


async def test_kill_inside_a_writing_tool_is_reported_not_repeated(
    tmp_path: Path, reference: Reference
) -> None:
    transcript, files, _ = reference
    state, after = await crash_and_resume(tmp_path, KILL_IN_TOOL)
    got = state.transcript()
    [index] = [i for i, m in enumerate(transcript) if getattr(m, "call_id", "") == "c1"]
    interrupted = got[index]
    assert isinstance(interrupted, ToolResultMessage)
    assert interrupted.is_error
    assert interrupted.content.startswith("Interrupted: the run stopped while this call ran")
    assert got[:index] + got[index + 1 :] == transcript[:index] + transcript[index + 1 :]
    assert after == files  # the write happened once, and only once


async def test_a_finished_turn_cannot_be_resumed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert run_child(tmp_path / "store", workspace, 0) == 0
    agent = make_agent(str(tmp_path / "store"), str(workspace))
    [info] = await agent.log.runs()
    with pytest.raises(UsageError, match="already ended its turn"):
        await agent.resume(info.run_id)
    await agent.log.close()


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_capped_run_resumes_with_as_many_steps_again(tmp_path: Path, store: str) -> None:
    from reins import Agent, MemoryLog
    from reins.testing import ScriptedModel

    from .helpers import call, reply

    replies = [*(reply("", call("list_files", f"l{i}")) for i in range(3)), "done"]
    log = SQLiteLog(tmp_path / ".reins") if store == "sqlite" else MemoryLog()
    agent = Agent(
        model=ScriptedModel(replies), workspace=tmp_path, budgets=Budgets(max_steps=2), log=log
    )
    capped = await agent.run("go")
    assert (capped.stop_reason, capped.steps) == (StopReason.MAX_STEPS, 2)
    resumed = await agent.resume(capped.run_id)
    assert (resumed.stop_reason, resumed.steps, resumed.final_answer) == (
        StopReason.END_TURN,
        4,
        "done",
    )
    assert (await agent.state(capped.run_id)).config.max_steps == 4
    await log.close()


async def test_a_run_stopped_by_a_model_error_resumes_with_a_working_model(
    tmp_path: Path,
) -> None:
    from reins import Agent
    from reins.testing import ScriptedModel

    from .helpers import call, reply

    first = reply("", call("list_files", "l1"))
    broken = Agent(model=ScriptedModel([first]), workspace=tmp_path)
    failed = await broken.run("go")
    assert failed.stop_reason is StopReason.ERROR
    fixed = Agent(model=ScriptedModel([first, "recovered"]), workspace=tmp_path, log=broken.log)
    result = await fixed.resume(failed.run_id)
    assert (result.stop_reason, result.final_answer) == (StopReason.END_TURN, "recovered")
    assert result.messages[:-1] == failed.messages
