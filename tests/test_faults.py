"""Faults the log must survive without being wrong: text UTF-8 cannot hold, an empty reply, a
new turn after a crash, a write that fails half-way; on real SQLite and real files."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    SQLiteLog,
    StopReason,
    StoreError,
    ToolResultMessage,
    tool,
)
from reins.events import Notice, ResponseRejected, RunStarted, ToolCallStarted
from reins.testing import ScriptedModel

from .helpers import call, journal_events, reply, sign_again

ODD = "odd \ud800 text"
"""A lone surrogate: a str Python holds, that UTF-8 (so JSON, SQLite, a terminal) cannot."""


@tool
def shout(text: str) -> str:
    """Repeat a text with an unencodable character in it.

    Args:
        text: Anything.
    """
    return f"{text} \udc80!"


@tool
def touch(name: str) -> str:
    """Create a file (a side effect).

    Args:
        name: The file.
    """
    return "made"


@tool(read_only=True)
def peek(name: str) -> str:
    """Read a file.

    Args:
        name: The file.
    """
    return "seen"


async def test_unencodable_text_from_the_model_and_a_tool_is_stored_escaped(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    script = [
        AssistantMessage(
            text=ODD, thinking="hm \udfff", tool_calls=(call("shout", "c1", text=ODD),)
        ),
        reply(ODD, call("shout", "c2", text="again")),
        f"FINAL_ANSWER: {ODD}",
    ]
    log = SQLiteLog(store)
    agent = Agent(model=ScriptedModel(script), tools=[shout], workspace=workspace, log=log)
    capped = await Agent(
        model=ScriptedModel(script),
        tools=[shout],
        workspace=workspace,
        log=log,
        budgets=Budgets(max_steps=1),
    ).run("go")
    assert capped.stop_reason is StopReason.MAX_STEPS
    resumed = await agent.resume(capped.run_id, max_steps=5)  # a resume folds it back
    assert resumed.stop_reason is StopReason.END_TURN
    assert resumed.final_answer == "odd \\ud800 text"
    await log.close()

    reopened = SQLiteLog(store)
    events = await reopened.events(capped.run_id)
    journal = (store / "sessions" / f"{capped.session_id}.jsonl").read_bytes()
    assert journal_events(journal) == events
    replies = [e.message for e in events if e.kind == "model_response"]
    assert replies[0].text == "odd \\ud800 text"
    assert replies[0].thinking == "hm \\udfff"
    assert replies[0].tool_calls[0].arguments == {"text": "odd \\ud800 text"}
    results = [e.result.content for e in events if e.kind == "tool_call_finished"]
    note = "[reins: text that is not valid Unicode (lone surrogates) was escaped as \\uXXXX]"
    assert results == [f"odd \\ud800 text \\udc80!\n{note}", f"again \\udc80!\n{note}"]
    notices = [e for e in events if isinstance(e, Notice) and e.source == "unicode"]
    assert [n.text for n in notices] == [
        "the reply: text that is not valid Unicode (lone surrogates) was escaped as \\uXXXX"
    ] * 3
    assert not [e for e in events if e.kind == "text_delta"]  # the stream's only, not stored
    assert (await Agent(model=ScriptedModel([]), log=reopened).state(capped.run_id)).finished
    await reopened.close()


async def test_a_goal_that_was_not_utf8_is_stored_escaped(tmp_path: Path, workspace: Path) -> None:
    log = SQLiteLog(tmp_path / "store")
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: ok"]), workspace=workspace, log=log)
    result = await agent.run("fix caf\udce9")  # as argv decodes the byte 0xE9 alone
    [started, *_] = await log.events(result.run_id)
    assert isinstance(started, RunStarted)
    assert started.goal == "fix caf\\udce9"
    await log.close()


async def test_the_store_escapes_what_no_one_else_did(tmp_path: Path) -> None:
    """The last resort: an event appended straight to the log."""
    log = SQLiteLog(tmp_path / "store")
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: ok"]), log=log)
    result = await agent.run("go")
    notice = Notice(session_id=result.session_id, run_id="other", seq=1, text=ODD, source="test")
    started = RunStarted(
        session_id=result.session_id,
        run_id="other",
        seq=1,
        goal=ODD,
        config=(await log.events(result.run_id))[0].config,  # type: ignore[union-attr]
        messages=(),
    )
    await log.append(started)
    await log.append(notice.model_copy(update={"seq": 2}))
    [first, second] = await log.events("other")
    assert (first.goal, second.text) == ("odd \\ud800 text", "odd \\ud800 text")  # type: ignore[union-attr]
    await log.close()


@pytest.mark.parametrize(
    ("script", "stop", "rejections"),
    [
        (["", "FINAL_ANSWER: done"], StopReason.END_TURN, 1),
        (
            [AssistantMessage(text=" \n", thinking="hmm"), "FINAL_ANSWER: done"],
            StopReason.END_TURN,
            1,
        ),
        (["", "", "", "FINAL_ANSWER: never"], StopReason.ERROR, 2),
    ],
)
async def test_an_empty_reply_is_not_an_answer(
    workspace: Path, script: list[object], stop: StopReason, rejections: int
) -> None:
    agent = Agent(model=ScriptedModel(script), workspace=workspace)  # type: ignore[arg-type]
    events = [e async for e in agent.iter("go")]
    rejected = [e for e in events if isinstance(e, ResponseRejected)]
    assert [(r.source, r.observation) for r in rejected] == [
        (
            "EmptyReply",
            "Your reply was empty: no text and no tool call. Act now: call a tool, or give "
            "your final answer.",
        )
    ] * rejections
    finished = events[-1]
    assert finished.kind == "run_finished"
    assert finished.stop_reason is stop
    if stop is StopReason.END_TURN:
        assert finished.final_answer == "done"
    else:
        assert finished.detail == "the model replied with nothing 3 times in a row"


@pytest.mark.parametrize(
    ("cut_after", "expected"),
    [
        (
            "tool_call_started",
            {
                "touch": "Interrupted: the run stopped while this call ran, so it may or may "
                "not have taken effect. Check the current state before repeating it.",
                "peek": "Not run: the run ended.",  # read-only: it did nothing
            },
        ),
        (
            "model_response",
            {"touch": "Not run: the run ended.", "peek": "Not run: the run ended."},
        ),
    ],
)
async def test_a_new_turn_after_a_crash_says_what_a_resume_would(
    tmp_path: Path, workspace: Path, cut_after: str, expected: dict[str, str]
) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    script = [reply("", call("touch", "t", name="a"), call("peek", "p", name="a")), "done"]
    agent = Agent(model=ScriptedModel(script), tools=[touch, peek], workspace=workspace, log=log)
    run = agent.iter("go")
    seen: list[str] = []
    async for event in run:
        seen.append(event.kind)
        if seen.count(cut_after) == (2 if cut_after == "tool_call_started" else 1):
            break
    await log.commit()  # what the loop commits next, before any side effect
    log.journals.close()  # the process dies here
    session = (await log.runs())[0].session_id

    after = SQLiteLog(store)
    turn = Agent(
        model=ScriptedModel(["ok"] * 3), tools=[touch, peek], workspace=workspace, log=after
    )
    result = await turn.run("what happened?", session_id=session)
    got = {m.name: m.content for m in result.messages if isinstance(m, ToolResultMessage)}
    assert got == expected
    await after.close()


async def test_a_log_without_read_only_tools_takes_every_started_call_as_interrupted(
    tmp_path: Path, workspace: Path
) -> None:
    """Logs written before `read_only_tools` was recorded: the safe reading."""
    store = tmp_path / "store"
    log = SQLiteLog(store)
    script = [reply("", call("peek", "p", name="a")), "done"]
    agent = Agent(model=ScriptedModel(script), tools=[peek], workspace=workspace, log=log)
    async for event in agent.iter("go"):
        if isinstance(event, ToolCallStarted):
            break
    await log.commit()
    log.journals.close()
    [info] = await log.runs()
    path = store / "sessions" / f"{info.session_id}.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    del first["config"]["read_only_tools"]
    del first["mac"]  # signed again below
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    sign_again(path)
    (store / "reins.db").unlink()

    after = SQLiteLog(store)
    turn = Agent(model=ScriptedModel(["ok"] * 3), tools=[peek], workspace=workspace, log=after)
    result = await turn.run("again", session_id=info.session_id)
    [peeked] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert peeked.content.startswith("Interrupted: the run stopped while this call ran")
    await after.close()


async def test_a_write_that_fails_half_way_is_cut_back_to_the_last_event(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a full disk: the first write takes part of the data, the next one fails."""
    store = tmp_path / "store"
    log = SQLiteLog(store)
    script = [reply("", call("touch", "t", name="x" * 5000)), "FINAL_ANSWER: done"]
    agent = Agent(model=ScriptedModel(script), tools=[touch], workspace=workspace, log=log)
    run = agent.iter("go")
    started = await anext(run)
    path = store / "sessions" / f"{started.session_id}.jsonl"
    whole = path.read_bytes()
    real_write = os.write
    calls = 0

    def short_then_full(fd: int, data: bytes | memoryview) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data)[:100])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(StoreError) as caught:
        async for _ in run:
            pass
    monkeypatch.setattr(os, "write", real_write)  # not undo(): it would undo the data folder
    assert str(caught.value) == (
        f"the disk holding {store / 'sessions'} is full (No space left on device); the log ends "
        f"at the last whole event: free space and `reins resume {started.run_id}`"
    )
    assert path.read_bytes() == whole  # the torn 100 bytes are gone
    await log.close()
    reopened = SQLiteLog(store)
    resumed = await Agent(
        model=ScriptedModel(script), tools=[touch], workspace=workspace, log=reopened
    ).resume(started.run_id)
    assert resumed.stop_reason is StopReason.END_TURN
    await reopened.close()


async def test_a_reply_nested_too_deep_to_record_stops_the_run_cleanly(
    tmp_path: Path, workspace: Path
) -> None:
    deep: object = "x"
    for _ in range(900):
        deep = [deep]
    store = tmp_path / "store"
    log = SQLiteLog(store)
    script = [reply("", call("touch", "t", name="a", extra=deep)), "FINAL_ANSWER: done"]
    agent = Agent(model=ScriptedModel(script), tools=[touch], workspace=workspace, log=log)
    run = agent.iter("go")
    started = await anext(run)
    with pytest.raises(StoreError) as caught:
        async for _ in run:
            pass
    assert str(caught.value) == (
        f"run {started.run_id}: event 3 (model_response) cannot be recorded (ValueError: "
        "Maximum serialization depth exceeded); nothing of it was written"
    )
    path = store / "sessions" / f"{started.session_id}.jsonl"
    assert [event.seq for event in journal_events(path.read_bytes())] == [1]
    await log.close()


async def test_an_index_that_cannot_be_written_mid_run_does_not_stop_it(
    tmp_path: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The journal is the record: the index catches up from it later."""
    store = tmp_path / "store"
    log = SQLiteLog(store)
    script = [reply("", call("touch", f"t{i}", name="a")) for i in range(3)] + ["FINAL_ANSWER: ok"]
    agent = Agent(model=ScriptedModel(script), tools=[touch], workspace=workspace, log=log)
    real = SQLiteLog._write_index

    def full(self: SQLiteLog, *args: object) -> None:
        raise StoreError("the disk holding reins.db is full")

    monkeypatch.setattr("reins.store._sqlite.INDEX_EVERY", 0.0)  # index at every commit
    monkeypatch.setattr(SQLiteLog, "_write_index", full)
    with caplog.at_level("WARNING", logger="reins.store"):
        run = agent.iter("go")
        started = await anext(run)
        await anext(run)
        monkeypatch.setattr(SQLiteLog, "_write_index", real)
        async for _ in run:
            pass
    assert caplog.text.count("the run goes on, recorded in its journal") == 1
    journal = store / "sessions" / f"{started.session_id}.jsonl"
    written = journal_events(journal.read_bytes())
    assert written[-1].kind == "run_finished"
    await log.close()
    reopened = SQLiteLog(store)
    assert await reopened.events(started.run_id) == written
    [info] = await reopened.runs()
    assert info.stop_reason is StopReason.END_TURN
    await reopened.close()


async def test_an_index_on_a_full_disk_says_the_disk_is_full(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite rolls a transaction back itself when its disk is full (here a page cap makes the
    same SQLITE_FULL): the ROLLBACK after it failed, and 'cannot rollback - no transaction is
    active' was all that was said."""
    store = tmp_path / "store"
    log = SQLiteLog(store)
    [(pages,)] = log._db.execute("PRAGMA page_count").fetchall()
    log._db.execute(f"PRAGMA max_page_count = {pages}")  # not one page more
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: done"]), workspace=workspace, log=log)
    with caplog.at_level("WARNING", logger="reins.store"):
        result = await agent.run("go " + "x" * 10_000)  # a run line that needs pages
        await log.close()
    assert result.stop_reason is StopReason.END_TURN  # the journal is the record
    assert "cannot rollback" not in caplog.text
    assert f"the disk holding {store / 'reins.db'} is full; free space and run the command" in (
        caplog.text
    )
    reopened = SQLiteLog(store)  # room again: the index catches up from the journal
    [info] = await reopened.runs()
    assert (info.run_id, info.stop_reason) == (result.run_id, StopReason.END_TURN)
    await reopened.close()
