"""The event log on real SQLite: durability, the JSONL mirror, concurrency, corruption."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path

import pytest

from reins import (
    EVENT,
    Agent,
    AssistantMessage,
    LogCorrupted,
    Message,
    RunNotFound,
    SQLiteLog,
    StopReason,
    StoreError,
    ToolSpec,
    UserMessage,
    tool,
)
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply


@tool
async def pause() -> str:
    """Yield to other runs."""
    await asyncio.sleep(0)
    return "ok"


def per_turn(n_tools: int) -> FunctionModel:
    """Calls `pause` n times in every turn, then answers: usable for any turn of a session."""

    def answer(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        last_goal = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
        done = sum(isinstance(m, AssistantMessage) for m in messages[last_goal:])
        return reply("", call("pause", f"c{done}")) if done < n_tools else "done"

    return FunctionModel(answer)


def scripted(n_tools: int) -> ScriptedModel:
    return ScriptedModel([*(reply("", call("pause", f"c{i}")) for i in range(n_tools)), "done"])


async def test_a_run_survives_closing_and_reopening(tmp_path: Path, workspace: Path) -> None:
    log = SQLiteLog(tmp_path / "store")
    result = await Agent(model=scripted(2), tools=[pause], workspace=workspace, log=log).run("go")
    before = await log.events(result.run_id)
    await log.close()

    reopened = SQLiteLog(tmp_path / "store")
    assert await reopened.events(result.run_id) == before
    [info] = await reopened.runs()
    assert (info.run_id, info.session_id, info.goal, info.stop_reason) == (
        result.run_id,
        result.session_id,
        "go",
        StopReason.END_TURN,
    )
    await reopened.close()


async def test_the_mirror_holds_exactly_the_committed_events(
    sqlite_log: SQLiteLog, workspace: Path
) -> None:
    agent = Agent(model=scripted(3), tools=[pause], workspace=workspace, log=sqlite_log)
    result = await agent.run("go")
    mirror = sqlite_log.directory / "sessions" / f"{result.session_id}.jsonl"
    lines = mirror.read_bytes().splitlines()
    assert [EVENT.validate_json(line) for line in lines] == await sqlite_log.events(result.run_id)


async def test_concurrent_runs_never_interleave_or_duplicate_seq(
    sqlite_log: SQLiteLog, workspace: Path
) -> None:
    agent = Agent(model=per_turn(20), tools=[pause], workspace=workspace, log=sqlite_log)
    first = await agent.run("seed")
    results = await asyncio.gather(
        *(agent.run(f"run {i}") for i in range(6)),
        *(agent.run(f"turn {i}", session_id=first.session_id) for i in range(2)),
    )
    for result in [first, *results]:
        events = await sqlite_log.events(result.run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert {e.run_id for e in events} == {result.run_id}
        assert result.stop_reason is StopReason.END_TURN
    # the shared session's mirror holds each run's events in order, none twice
    mirror = sqlite_log.directory / "sessions" / f"{first.session_id}.jsonl"
    keys = [(r["run_id"], r["seq"]) for r in map(json.loads, mirror.read_text().splitlines())]
    assert len(keys) == len(set(keys))
    for run_id in {k[0] for k in keys}:
        assert [s for r, s in keys if r == run_id] == sorted(s for r, s in keys if r == run_id)


async def test_a_second_writer_of_one_run_is_refused(tmp_path: Path, workspace: Path) -> None:
    first = SQLiteLog(tmp_path / "store")
    result = await Agent(model=scripted(0), workspace=workspace, log=first).run("go")
    events = await first.events(result.run_id)
    second = SQLiteLog(tmp_path / "store")
    with pytest.raises(StoreError, match="already has event 2: another process"):
        await second.append(events[1])
    await first.close()
    await second.close()


async def run_once(store: Path, workspace: Path) -> str:
    log = SQLiteLog(store)
    result = await Agent(model=scripted(1), tools=[pause], workspace=workspace, log=log).run("go")
    await log.close()
    return result.session_id


async def test_a_truncated_mirror_tail_is_kept_aside_and_rebuilt(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    session = await run_once(store, workspace)
    mirror = store / "sessions" / f"{session}.jsonl"
    whole = mirror.read_bytes()
    mirror.write_bytes(whole[:-25])  # a write cut off mid-line

    log = SQLiteLog(store)
    agent = Agent(model=scripted(1), tools=[pause], workspace=workspace, log=log)
    with caplog.at_level(logging.WARNING, logger="reins.store"):
        await agent.run("again", session_id=session)
    await log.close()

    assert "ends in a partial line" in caplog.text
    [aside] = list((store / "sessions").glob("*.corrupt-*"))
    assert aside.read_bytes() == whole[:-25]  # nothing is thrown away
    lines = mirror.read_bytes().splitlines()
    reread = SQLiteLog(store)
    first_run, second_run = await reread.runs()
    expected = [*await reread.events(first_run.run_id), *await reread.events(second_run.run_id)]
    assert [EVENT.validate_json(line) for line in lines] == expected
    await reread.close()


async def test_a_mirror_behind_the_database_is_caught_up(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    session = await run_once(store, workspace)
    mirror = store / "sessions" / f"{session}.jsonl"
    whole = mirror.read_bytes().splitlines(keepends=True)
    mirror.write_bytes(b"".join(whole[:-3]))  # a crash between commit and mirror write

    log = SQLiteLog(store)
    with caplog.at_level(logging.WARNING, logger="reins.store"):
        await Agent(model=scripted(0), workspace=workspace, log=log).run(
            "again", session_id=session
        )
    await log.close()
    assert "was 3 events behind the database; caught up" in caplog.text
    assert mirror.read_bytes().startswith(b"".join(whole))


async def test_a_mirror_ahead_of_the_database_is_reported(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    session = await run_once(store, workspace)
    mirror = store / "sessions" / f"{session}.jsonl"
    record = json.loads(mirror.read_text().splitlines()[-1])
    record["seq"] = 999
    with mirror.open("a") as f:
        f.write(json.dumps(record) + "\n")
    log = SQLiteLog(store)
    agent = Agent(model=scripted(0), workspace=workspace, log=log)
    with pytest.raises(LogCorrupted, match="that the database lacks"):
        await agent.run("again", session_id=session)
    await log.close()


def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "reins.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LogCorrupted, match="is not a readable reins database"):
        SQLiteLog(store)
    assert (store / "reins.db").read_bytes() == b"this is not sqlite" * 100


async def test_an_event_row_that_does_not_parse_is_reported(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    result = await Agent(model=scripted(0), workspace=workspace, log=log).run("go")
    await log.close()
    with sqlite3.connect(store / "reins.db") as db:
        db.execute('UPDATE events SET body = \'{"kind": "nope"}\' WHERE seq = 2')
    log = SQLiteLog(store)
    with pytest.raises(LogCorrupted, match=f"run {result.run_id} event 2 does not parse"):
        await log.events(result.run_id)
    await log.close()


async def test_a_gap_in_seq_is_reported_by_the_fold(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    agent = Agent(model=scripted(0), workspace=workspace, log=log)
    result = await agent.run("go")
    await log.close()
    with sqlite3.connect(store / "reins.db") as db:
        db.execute("DELETE FROM events WHERE seq = 3")
    log = SQLiteLog(store)
    agent = Agent(model=scripted(0), workspace=workspace, log=log)
    with pytest.raises(LogCorrupted, match="expected event seq 3, found 4"):
        await agent.state(result.run_id)
    await log.close()


async def test_unknown_run_ids(sqlite_log: SQLiteLog) -> None:
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        await sqlite_log.events("nope")
