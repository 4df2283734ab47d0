"""`doctor` on real journals: each kind of damage found, set aside, and the rest kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from reins import Agent, LogCorrupted, RunState, SQLiteLog, StopReason, tool
from reins.store._doctor import doctor
from reins.testing import ScriptedModel

from .helpers import call, reply


@tool
def act() -> str:
    """Do something."""
    return "done"


SCRIPT = [reply("", call("act", "a1")), reply("", call("act", "a2")), "FINAL_ANSWER: ok"]


async def one_run(store: Path, workspace: Path) -> tuple[str, Path]:
    log = SQLiteLog(store)
    result = await Agent(
        model=ScriptedModel(SCRIPT), tools=[act], workspace=workspace, log=log
    ).run("go")
    await log.close()
    return result.run_id, store / "sessions" / f"{result.session_id}.jsonl"


async def test_a_journal_cut_short_at_a_line_is_indexed_again(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    run_id, journal = await one_run(store, workspace)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-3]))  # whole lines, fewer than the index says
    log = SQLiteLog(store)
    with pytest.raises(LogCorrupted, match="is shorter"):
        await log.events(run_id)
    [finding] = doctor(log, repair=True)
    assert finding.problem.startswith("is shorter")
    assert (finding.kept_lines, finding.moved_bytes, finding.repaired) == (len(lines) - 3, 0, True)
    events = await log.events(run_id)
    assert len(events) == len(lines) - 3
    assert RunState.fold(events).finished is None  # unfinished now: resumable
    resumed = await Agent(
        model=ScriptedModel(SCRIPT), tools=[act], workspace=workspace, log=log
    ).resume(run_id)
    assert resumed.stop_reason is StopReason.END_TURN
    assert doctor(log, repair=False) == []
    await log.close()


async def test_an_event_out_of_order_is_where_the_cut_goes(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    run_id, journal = await one_run(store, workspace)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:3], lines[4], lines[3], *lines[5:]]))
    (store / "reins.db").unlink()
    log = SQLiteLog(store)
    [finding] = doctor(log, repair=True)
    assert finding.problem == (
        f"line 4 holds event 5 of run {run_id}, whose MAC does not match: the journal was "
        "changed after it was written"
    )
    assert journal.read_bytes() == b"".join(lines[:3])
    [aside] = journal.parent.glob("*.corrupt-*")
    assert aside.read_bytes() == b"".join([lines[4], lines[3], *lines[5:]])
    [account] = finding.runs
    assert (account.run_id, account.kept, account.moved) == (run_id, 3, len(lines) - 3)
    assert len(await log.events(run_id)) == 3
    await log.close()


async def test_a_missing_journal_drops_its_runs_from_the_index(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    gone, journal = await one_run(store, workspace)
    kept, _ = await one_run(store, workspace)
    journal.unlink()
    log = SQLiteLog(store)
    with pytest.raises(LogCorrupted, match="its journal cannot be read"):
        await log.events(gone)
    [finding] = doctor(log, repair=True)
    assert finding.problem.startswith("is missing")
    assert [r.run_id for r in await log.runs()] == [kept]
    await log.close()


async def test_a_session_being_written_is_left_alone(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    run_id, journal = await one_run(store, workspace)
    writer = SQLiteLog(store)
    agent = Agent(model=ScriptedModel(SCRIPT * 2), tools=[act], workspace=workspace, log=writer)
    turn = agent.iter("more", session_id=journal.stem)
    await anext(turn)  # holds the session's journal
    before = journal.read_bytes()
    checker = SQLiteLog(store)
    assert doctor(checker, repair=True) == []
    assert journal.read_bytes() == before
    await turn.aclose()
    await writer.close()
    await checker.close()
    assert run_id
