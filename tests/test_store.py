"""The event log on real SQLite: durability, the JSONL mirror, concurrency, corruption; the
contract every log keeps, on SQLite and on a real PostgreSQL (`backend`, `any_log`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Continue,
    LogCorrupted,
    LogUnverified,
    MemoryLog,
    Message,
    Policy,
    RunNotFound,
    RunState,
    SessionBusy,
    SQLiteLog,
    StopReason,
    StoreError,
    ToolSpec,
    UsageError,
    UserMessage,
    tool,
)
from reins.core._paths import log_key_path
from reins.events import EVENT, Event, Notice, RunConfig, RunFinished, RunStarted
from reins.policies import BeforeRound
from reins.store import EventLog, IndexedLog
from reins.store._doctor import doctor
from reins.testing import FunctionModel, ScriptedModel

from .helpers import Backend, call, journal_events, reply


@tool
async def pause(step: int = 0) -> str:
    """Yield to other runs.

    Args:
        step: Which step calls it (distinct calls: the same call again and again is a loop).
    """
    await asyncio.sleep(0)
    return "ok"


def per_turn(n_tools: int) -> FunctionModel:
    """Calls `pause` n times in every turn, then answers: usable for any turn of a session."""

    def answer(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        last_goal = max(  # notices and the goal anchor's reminders are user messages too
            i
            for i, m in enumerate(messages)
            if isinstance(m, UserMessage)
            and not m.content.startswith(("[", "Reminder of your goal"))
        )
        done = sum(isinstance(m, AssistantMessage) for m in messages[last_goal:])
        return reply("", call("pause", f"c{done}", step=done)) if done < n_tools else "done"

    return FunctionModel(answer)


async def recorded_runs(log: IndexedLog, session_id: str) -> set[str]:
    """The runs with any event of the session in the store (in its journal, or its rows),
    whether or not the index lists them."""
    if isinstance(log, SQLiteLog):
        path = log.directory / "sessions" / f"{session_id}.jsonl"
        return {json.loads(line)["run_id"] for line in path.read_text().splitlines()}
    from reins.store import PostgresLog  # psycopg: only with a PostgreSQL store

    assert isinstance(log, PostgresLog)
    return {run for run, session in (await log.recorded_runs()).items() if session == session_id}


def scripted(n_tools: int) -> ScriptedModel:
    calls = (reply("", call("pause", f"c{i}", step=i)) for i in range(n_tools))
    return ScriptedModel([*calls, "done"])


async def test_a_run_survives_closing_and_reopening(backend: Backend, workspace: Path) -> None:
    log = backend.open()
    result = await Agent(model=scripted(2), tools=[pause], workspace=workspace, log=log).run("go")
    before = await log.events(result.run_id)
    await log.close()

    reopened = backend.open()
    assert await reopened.events(result.run_id) == before
    [info] = await reopened.runs()
    assert (info.run_id, info.session_id, info.goal, info.stop_reason) == (
        result.run_id,
        result.session_id,
        "go",
        StopReason.END_TURN,
    )
    await reopened.close()


async def test_a_durable_log_syncs_each_commit_and_each_new_journals_name(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is synced, seen at the system call: the lines before the next step acts, and the
    sessions folder once a journal is in it (else power loss could lose the file's name)."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log = SQLiteLog(tmp_path / "store", durable=True)
    result = await Agent(model=scripted(2), tools=[pause], workspace=workspace, log=log).run("go")
    journal = str(tmp_path / "store" / "sessions" / f"{result.session_id}.jsonl")
    folder = str(tmp_path / "store" / "sessions")
    synced = [path for path in synced if path.startswith(str(tmp_path))]  # not the new key's
    assert synced[0] == folder  # before the first line is acknowledged
    commits = [path for path in synced if path == journal]
    # run_started; per tool round the calls, then the result; the finish
    assert len(commits) == 1 + 2 * 2 + 1
    await log.close()


async def test_the_journal_holds_exactly_the_run_events(
    sqlite_log: SQLiteLog, workspace: Path
) -> None:
    agent = Agent(model=scripted(3), tools=[pause], workspace=workspace, log=sqlite_log)
    result = await agent.run("go")
    path = sqlite_log.directory / "sessions" / f"{result.session_id}.jsonl"
    assert journal_events(path.read_bytes()) == await sqlite_log.events(result.run_id)


async def test_concurrent_runs_never_interleave_or_duplicate_seq(
    any_log: IndexedLog, workspace: Path
) -> None:
    agent = Agent(model=per_turn(20), tools=[pause], workspace=workspace, log=any_log)
    first = await agent.run("seed")
    results = await asyncio.gather(*(agent.run(f"run {i}") for i in range(6)))
    for result in [first, *results]:
        events = await any_log.events(result.run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert {e.run_id for e in events} == {result.run_id}
        assert result.stop_reason is StopReason.END_TURN


async def test_two_new_turns_of_one_session_at_once_one_runs_the_other_is_refused(
    any_log: IndexedLog, workspace: Path
) -> None:
    """In one process as across processes: the session is claimed before its history is
    read, so two turns never fork it; the refused one writes nothing."""
    agent = Agent(model=per_turn(5), tools=[pause], workspace=workspace, log=any_log)
    first = await agent.run("seed")
    outcomes = await asyncio.gather(
        *(agent.run(f"turn {i}", session_id=first.session_id) for i in range(2)),
        return_exceptions=True,
    )
    [done] = [o for o in outcomes if not isinstance(o, BaseException)]
    [refused] = [o for o in outcomes if isinstance(o, BaseException)]
    assert isinstance(refused, SessionBusy)
    assert f"session {first.session_id} has a run going on in this process" in str(refused)
    assert done.stop_reason is StopReason.END_TURN
    runs = await recorded_runs(any_log, first.session_id)
    assert runs == {first.run_id, done.run_id}  # nothing of the refused turn
    assert [r.run_id for r in await any_log.runs(first.session_id)] == [
        first.run_id,
        done.run_id,
    ]
    later = await agent.run("after", session_id=first.session_id)  # one at a time is fine
    goals = [
        m for m in later.messages if isinstance(m, UserMessage) and "Reminder" not in m.content
    ]
    assert goals[-3:] == [
        UserMessage(content="seed"),
        UserMessage(content=next(g for g in ("turn 0", "turn 1") if g in str(done.messages))),
        UserMessage(content="after"),
    ]


async def test_two_new_turns_at_once_on_the_in_memory_log(workspace: Path) -> None:
    agent = Agent(model=per_turn(3), tools=[pause], workspace=workspace)
    first = await agent.run("seed")
    outcomes = await asyncio.gather(
        *(agent.run(f"turn {i}", session_id=first.session_id) for i in range(2)),
        return_exceptions=True,
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["RunResult", "SessionBusy"]
    assert len(await agent.log.runs(first.session_id)) == 2


async def test_a_second_writer_of_a_session_is_refused_while_a_run_goes_on(
    backend: Backend, workspace: Path
) -> None:
    first = backend.open()
    run = Agent(model=scripted(3), tools=[pause], workspace=workspace, log=first).iter("go")
    started = await anext(run)
    await anext(run)
    second = backend.open()  # its own file or connection: as another process would
    agent = Agent(model=per_turn(0), workspace=workspace, log=second)
    with pytest.raises(StoreError, match="is being written by another process"):
        await agent.run("again", session_id=started.session_id)
    assert (await run.result()).stop_reason is StopReason.END_TURN  # the first is unharmed
    later = await agent.run("again", session_id=started.session_id)  # the session is free now
    assert later.stop_reason is StopReason.END_TURN
    await first.close()
    await second.close()


async def test_runs_of_one_session_interleaved_in_one_write_read_back_apart(
    backend: Backend, tmp_path: Path
) -> None:
    """Two runs of a session going on at once can share a commit: their lines alternate in
    the journal, and each run still reads back exactly its own events, in the index too."""
    log = backend.open()
    config = RunConfig(model="m", workspace=str(tmp_path), max_steps=3)

    def run(run_id: str) -> list[Event]:
        ids = {"session_id": "s1", "run_id": run_id}
        return [
            RunStarted(**ids, seq=1, goal=run_id, config=config, messages=()),
            Notice(**ids, seq=2, text=f"{run_id} goes on", source="test"),
            RunFinished(**ids, seq=3, stop_reason=StopReason.END_TURN, final_answer=run_id),
        ]

    a, b = run("run-a"), run("run-b")
    for pair in zip(a, b, strict=True):
        for event in pair:
            await log.append(event, commit=False)
    await log.commit()
    assert (await log.events("run-a"), await log.events("run-b")) == (a, b)
    await log.close()

    reopened = backend.open()  # from the index alone
    assert (await reopened.events("run-a"), await reopened.events("run-b")) == (a, b)
    assert [(r.run_id, r.stop_reason) for r in await reopened.runs("s1")] == [
        ("run-a", StopReason.END_TURN),
        ("run-b", StopReason.END_TURN),
    ]
    await reopened.close()


async def test_a_run_seq_out_of_order_is_refused(any_log: IndexedLog, workspace: Path) -> None:
    result = await Agent(model=scripted(0), workspace=workspace, log=any_log).run("go")
    events = await any_log.events(result.run_id)
    due = len(events) + 1
    with pytest.raises(StoreError, match=f"event 2 arrived where {due} was due"):
        await any_log.append(events[1])


async def run_once(store: Path, workspace: Path) -> str:
    log = SQLiteLog(store)
    result = await Agent(model=scripted(1), tools=[pause], workspace=workspace, log=log).run("go")
    await log.close()
    return result.session_id


def journal(store: Path, session: str) -> Path:
    return store / "sessions" / f"{session}.jsonl"


async def journal_of_one_run(store: Path, workspace: Path) -> tuple[Path, list[bytes]]:
    """A finished run's journal and its lines (newlines kept), to tamper with."""
    path = journal(store, await run_once(store, workspace))
    return path, path.read_bytes().splitlines(keepends=True)


async def test_a_torn_last_line_is_kept_aside_and_the_run_goes_on(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    agent = Agent(model=scripted(2), tools=[pause], workspace=workspace, log=log)
    events = [e async for e in agent.iter("go")]
    log.journals.close()  # the process dies: nothing more is written, the index lags
    path = journal(store, events[0].session_id)
    whole = path.read_bytes()
    cut = whole.rfind(b"\n", 0, len(whole) - 1) + 1  # start of the last line
    path.write_bytes(whole[: cut + 20])  # ... and the last write was cut off

    with caplog.at_level(logging.WARNING, logger="reins.store"):
        reopened = SQLiteLog(store)
    assert "ended in a partial line" in caplog.text
    [aside] = list((store / "sessions").glob("*.torn-*"))
    assert aside.read_bytes() == whole[cut : cut + 20]  # nothing is thrown away
    assert path.read_bytes() == whole[:cut]  # the journal ends on a whole event
    logged = [e for e in events if e.kind not in ("text_delta", "thinking_delta")]
    assert await reopened.events(events[0].run_id) == logged[:-1]
    resumed = await Agent(
        model=scripted(2), tools=[pause], workspace=workspace, log=reopened
    ).resume(events[0].run_id)
    assert resumed.stop_reason is StopReason.END_TURN
    await reopened.close()


async def test_an_index_that_lags_is_caught_up_from_the_journal(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    writer = SQLiteLog(store)
    agent = Agent(model=scripted(3), tools=[pause], workspace=workspace, log=writer)
    result = await agent.run("go")
    written = journal_events(journal(store, result.session_id).read_bytes())
    reader = SQLiteLog(store)  # another process, while the writer has not indexed yet
    assert await reader.events(result.run_id) == written
    [info] = await reader.runs()
    assert info.stop_reason is StopReason.END_TURN
    await writer.close()  # its own late indexing adds nothing twice
    assert await reader.events(result.run_id) == written
    await reader.close()


async def test_a_deleted_index_is_rebuilt(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    session = await run_once(store, workspace)
    before = SQLiteLog(store)
    [info] = await before.runs()
    events = await before.events(info.run_id)
    await before.close()
    for name in ("reins.db", "reins.db-wal", "reins.db-shm"):
        (store / name).unlink(missing_ok=True)
    after = SQLiteLog(store)
    assert await after.runs() == [info]
    assert await after.events(info.run_id) == events
    assert info.session_id == session
    await after.close()


async def test_a_journal_shorter_than_its_index_sets_its_session_aside(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    other = await run_once(store, workspace)
    path.write_bytes(b"".join(lines[:-2]))
    log = SQLiteLog(store)  # opens: the damage is the one session's
    damaged, fine = sorted(await log.runs(), key=lambda r: r.session_id != path.stem)
    with pytest.raises(LogCorrupted, match=r"is shorter .* than the index says.*reins doctor"):
        await log.events(damaged.run_id)
    assert fine.session_id == other
    assert RunState.fold(await log.events(fine.run_id)).finished is not None
    await log.close()


async def test_a_corrupt_line_sets_its_session_aside_and_names_its_place(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    other = await run_once(store, workspace)
    (store / "reins.db").unlink()
    lines[2] = b'{"kind": "nonsense"}\n'
    path.write_bytes(b"".join(lines))
    with caplog.at_level(logging.WARNING, logger="reins.store"):
        log = SQLiteLog(store)
    assert caplog.text.count("line 3, is not a reins event") == 1  # said once, at open
    runs = {r.session_id: r for r in await log.runs()}
    assert set(runs) == {path.stem, other}  # the damaged run is listed (its start is sound)
    message = (
        rf"{path}, line 3, is not a reins event: .*session {path.stem} is set aside "
        r"\(the other sessions are not affected\): run `reins doctor`"
    )
    with pytest.raises(LogCorrupted, match=message):
        await log.events(runs[path.stem].run_id)
    agent = Agent(model=per_turn(1), tools=[pause], workspace=workspace, log=log)
    with pytest.raises(LogCorrupted, match=message):  # a new turn of it: refused, unwritten
        await agent.run("more", session_id=path.stem)
    assert path.read_bytes() == b"".join(lines)
    more = await agent.run("more", session_id=other)  # the others go on
    assert more.stop_reason is StopReason.END_TURN
    assert (await agent.run("new")).stop_reason is StopReason.END_TURN
    await log.close()


def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "reins.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LogCorrupted, match="is not a readable reins database"):
        SQLiteLog(store)
    assert (store / "reins.db").read_bytes() == b"this is not sqlite" * 100


async def test_a_journal_line_changed_after_indexing_is_reported(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    lines[1] = b"{" + b" " * (len(lines[1]) - 3) + b"}\n"  # same length: the index still fits
    path.write_bytes(b"".join(lines))
    log = SQLiteLog(store)
    [info] = await log.runs()
    with pytest.raises(LogCorrupted, match=r"\.jsonl, line 2, is not a reins event"):
        await log.events(info.run_id)
    await log.close()


async def test_a_journal_reordered_after_indexing_is_reported(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    lines[2], lines[3] = lines[3], lines[2]
    path.write_bytes(b"".join(lines))
    log = SQLiteLog(store)
    [info] = await log.runs()
    moved = rf"line 3, holds event 4 of run {info.run_id}, whose MAC does not match"
    with pytest.raises(LogCorrupted, match=moved):
        await log.events(info.run_id)
    await log.close()


async def test_a_gap_in_seq_is_reported_where_it_is(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))  # event 3 is gone
    (store / "reins.db").unlink()  # and the index is rebuilt from the journal
    log = SQLiteLog(store)
    [info] = await log.runs()  # indexed up to the gap
    with pytest.raises(LogCorrupted, match=r"line 3, holds event 4 of run .* does not match"):
        await Agent(model=scripted(0), workspace=workspace, log=log).state(info.run_id)
    await log.close()


async def test_a_run_known_to_a_reader_is_read_whole_after_another_process_goes_on_with_it(
    tmp_path: Path, workspace: Path
) -> None:
    """A read of one run catches up its own session's journal only; what another process
    appended to that run since the reader last looked is in it."""
    store = tmp_path / "store"
    writer = SQLiteLog(store)
    capped = Agent(
        model=scripted(3),
        tools=[pause],
        workspace=workspace,
        log=writer,
        budgets=Budgets(max_steps=2),
    )
    first = await capped.run("go")
    reader = SQLiteLog(store)
    before = await reader.events(first.run_id)
    agent = Agent(model=scripted(3), tools=[pause], workspace=workspace, log=writer)
    await agent.resume(first.run_id, max_steps=10)
    await writer.commit()
    after = await reader.events(first.run_id)
    written = journal_events(journal(store, first.session_id).read_bytes())
    outside = store / "outside.jsonl"  # beside the journals: no session's
    outside.write_bytes(journal(store, first.session_id).read_bytes())
    strays = await reader.runs("../outside"), reader.damage()
    await writer.close()
    await reader.close()
    assert first.stop_reason is StopReason.MAX_STEPS
    assert after[: len(before)] == before
    assert len(after) > len(before)
    assert after == written
    assert strays == ([], [])  # an id is a name: no file elsewhere is read as a journal


async def test_unknown_run_ids(any_log: IndexedLog) -> None:
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        await any_log.events("nope")
    assert await any_log.runs("nope") == []


class Explodes(Policy):
    """A policy with a bug: the run's loop raises in its first round."""

    def __init__(self) -> None:
        self.armed = True

    async def before_round(self, state: RunState) -> BeforeRound:
        if self.armed:
            self.armed = False
            raise RuntimeError("bug")
        return Continue()


async def test_a_run_whose_loop_raised_frees_its_session(
    any_log: IndexedLog, workspace: Path
) -> None:
    await a_loop_that_raised_frees_its_session(any_log, workspace)


async def test_a_run_whose_loop_raised_frees_its_session_in_memory(workspace: Path) -> None:
    await a_loop_that_raised_frees_its_session(MemoryLog(), workspace)


async def a_loop_that_raised_frees_its_session(log: EventLog, workspace: Path) -> None:
    agent = Agent(model=per_turn(1), tools=[pause], workspace=workspace, log=log)
    first = await agent.run("seed")
    broken = Agent(
        model=per_turn(1), tools=[pause], workspace=workspace, log=log, policies=[Explodes()]
    )
    with pytest.raises(RuntimeError, match="bug"):
        await broken.run("turn", session_id=first.session_id)
    [_, stopped] = await log.runs(first.session_id)
    assert stopped.stop_reason is None  # unfinished, and nothing goes on in it
    later = await agent.run("again", session_id=first.session_id)  # not SessionBusy
    assert later.stop_reason is StopReason.END_TURN
    # The later turn closed the stopped run's open calls as not run, in the history it sent:
    # the stopped run going on now would act behind that history's back.
    with pytest.raises(UsageError, match="its session went on with a later turn"):
        await broken.resume(stopped.run_id)


async def test_a_session_claimed_by_another_process_is_refused_before_its_history_is_read(
    backend: Backend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two logs on one store stand for two processes (the journal's lock is per open file;
    PostgreSQL's advisory lock per connection)."""
    first = backend.open()
    seed = await Agent(model=per_turn(1), tools=[pause], workspace=workspace, log=first).run("a")
    first.claim(seed.session_id)  # as a turn about to start elsewhere does
    second = backend.open()
    assert second.writing(seed.session_id)
    before = await recorded_runs(second, seed.session_id)
    read: list[str] = []
    real_events = type(second).events

    async def events(self: IndexedLog, run_id: str) -> list[Event]:
        read.append(run_id)
        return await real_events(self, run_id)  # type: ignore[arg-type]

    monkeypatch.setattr(type(second), "events", events)
    agent = Agent(model=per_turn(1), tools=[pause], workspace=workspace, log=second)
    with pytest.raises(SessionBusy, match="is being written by another process"):
        await agent.run("b", session_id=seed.session_id)
    assert read == []  # refused before the history was read
    assert await recorded_runs(second, seed.session_id) == before
    first.release(seed.session_id)
    later = await agent.run("b", session_id=seed.session_id)
    assert [m.content for m in later.messages if isinstance(m, UserMessage)] == ["a", "b"]
    await first.close()
    await second.close()


def test_a_log_opened_on_a_file_says_the_log_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("not a log")
    with pytest.raises(StoreError, match=r"notes is a file; the log is a folder"):
        SQLiteLog(tmp_path / "notes")
    assert (tmp_path / "notes").read_text() == "not a log"


async def test_many_runs_started_at_once_on_a_new_store_all_run(
    backend: Backend, tmp_path: Path
) -> None:
    """Twenty `reins run` on a store that does not exist yet: each found the schema missing,
    and some failed with 'table runs already exists' (it is made once, under a lock); the
    log key they all need is made once too. On PostgreSQL fewer: its tables are made once,
    under an advisory lock."""
    from .test_cli import _spawned, script

    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: done"])
    count = 20 if backend.kind == "sqlite" else 4
    args = ("-m", model, "-w", "ws", "--store", backend.address)
    started = [_spawned(tmp_path, "run", f"go {i}", *args) for i in range(count)]
    errors = [p.communicate(timeout=300)[1] for p in started]
    assert [p.returncode for p in started] == [0] * count, errors
    log = backend.open()
    runs = await log.runs()
    assert sorted(r.goal for r in runs) == sorted(f"go {i}" for i in range(count))
    for run in runs:  # every journal verifies under the one key
        log.claim(run.session_id)
        log.release(run.session_id)
    await log.close()


async def test_each_journal_line_ends_in_a_mac_chained_on_from_the_line_before(
    tmp_path: Path, workspace: Path
) -> None:
    """The format, recomputed here from the key file: keyed BLAKE2b-256 of the previous MAC
    (first: of the session's id) and the event's bytes; the field last on the line."""
    log = SQLiteLog(tmp_path / "store")
    result = await Agent(model=scripted(1), tools=[pause], workspace=workspace, log=log).run("go")
    await log.close()
    key_file = log_key_path()
    assert (key_file.stat().st_mode & 0o777, key_file.parent.stat().st_mode & 0o777) == (
        0o600,
        0o700,
    )
    key = key_file.read_bytes()
    assert len(key) == 32

    def mac(data: bytes) -> bytes:
        return hashlib.blake2b(data, key=key, digest_size=32).digest()

    head = mac(b"reins journal\0" + result.session_id.encode())
    lines = journal(tmp_path / "store", result.session_id).read_bytes().splitlines()
    for line in lines:
        body, field = line[:-74] + b"}", line[-74:]
        head = mac(head + body)
        assert field == b',"mac":"' + head.hex().encode() + b'"}'
        assert json.loads(line)["mac"] == head.hex()  # a JSON object still
    assert [EVENT.validate_json(line[:-74] + b"}") for line in lines] == await SQLiteLog(
        tmp_path / "store"
    ).events(result.run_id)


@pytest.mark.parametrize("bad", ["a folder", "5 bytes"])
def test_a_key_that_cannot_be_read_is_one_clear_error(tmp_path: Path, bad: str) -> None:
    key_file = log_key_path()
    key_file.parent.mkdir(parents=True)
    if bad == "a folder":
        key_file.mkdir()
        why = "Is a directory"
    else:
        key_file.write_bytes(b"12345")
        why = "it holds 5 bytes, not the 32 of a key"
    with pytest.raises(StoreError) as caught:
        SQLiteLog(tmp_path / "store")
    assert str(caught.value) == (
        f"cannot read {key_file}, the key that signs your event logs ({why}); if it is "
        "damaged, move it aside: a new key is made, and the logs it signed read as not yours"
    )


async def test_a_key_that_cannot_be_made_stops_the_first_write_with_nothing_written(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "not-a-folder"))
    log = SQLiteLog(tmp_path / "store")
    with pytest.raises(StoreError, match=r"cannot make .*log\.key, the key that signs your"):
        await Agent(model=scripted(0), workspace=workspace, log=log).run("go")
    assert not any(p.stat().st_size for p in (tmp_path / "store").glob("sessions/*"))
    await log.close()


async def test_a_key_given_signs_and_another_key_reads_the_log_as_not_its_own(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    mine = SQLiteLog(store, key=b"k" * 32)
    result = await Agent(model=scripted(0), workspace=workspace, log=mine).run("go")
    await mine.close()
    assert not log_key_path().exists()  # the user's key was not needed
    again = SQLiteLog(store, key=b"k" * 32)
    assert again.unverified(result.session_id) is None
    await again.close()
    other = SQLiteLog(store)  # the user's key: made now, another one
    assert other.unverified(result.session_id) is not None
    with pytest.raises(LogUnverified):
        await Agent(model=scripted(0), workspace=workspace, log=other).run(
            "more", session_id=result.session_id
        )
    await other.close()
    with pytest.raises(UsageError, match="key: give at least 16 random bytes"):
        SQLiteLog(store, key=b"short")


async def test_a_store_from_before_logs_were_signed_is_read_and_not_continued(
    tmp_path: Path, workspace: Path
) -> None:
    """Its index (schema 3) is built again; its journals, with no MACs, read as unsigned."""
    store = tmp_path / "store"
    path, lines = await journal_of_one_run(store, workspace)
    path.write_bytes(b"".join(line[:-75] + b"}\n" for line in lines))  # as an older reins wrote
    with closing(sqlite3.connect(store / "reins.db")) as db:
        db.execute("DROP TABLE meta")
        db.execute("PRAGMA user_version = 3")
        db.commit()
    log = SQLiteLog(store)
    [info] = await log.runs()
    assert len(await log.events(info.run_id)) == len(lines)  # read: show, replay
    assert log.unverified(info.session_id) == (
        "its journal is not signed (from a reins before signed logs, or another program)"
    )
    agent = Agent(model=scripted(0), workspace=workspace, log=log)
    with pytest.raises(LogUnverified, match=rf"session {info.session_id} cannot go on: its "):
        await agent.run("more", session_id=info.session_id)
    [finding] = doctor(log, repair=True)
    assert (finding.problem, finding.unverified, finding.repaired) == (
        "is not signed (from a reins before logs were signed, or another program)",
        True,
        False,
    )
    await log.close()
