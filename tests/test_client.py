"""`reins.client`: the HTTP API from Python against a real server (uvicorn on a loopback
port): a run's typed events as in process, an approval given while iterating, errors as
reins raises them in process, and a server that is not there."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from reins.client import Client, ServerUnreachable
from reins.core._errors import RunNotFound, SessionBusy, UsageError
from reins.events import ApprovalRequested, RunFinished, RunStarted, TextDelta
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .test_server import TOKEN, WRITE_THEN_ANSWER, Gate, served, serving


async def test_a_run_yields_the_typed_events_its_log_holds(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    _, app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as http, Client(str(http.base_url), TOKEN) as client:
        run = client.run("look around", max_steps=5)
        events = []
        async for event in run:
            events.append(event)
            gate.open.set()  # the model answers once the stream is open: its text comes live
        view = await client.view(run.run_id)
        page = await client.sessions()
    logged = await sqlite_log.events(run.run_id)
    assert isinstance(events[0], RunStarted)
    assert [e for e in events if not isinstance(e, TextDelta)] == logged
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "reading"
    assert run.finished is not None
    assert run.finished.final_answer == "told: []"
    assert view["status"] == "finished"
    assert [s["session_id"] for s in page["sessions"]] == [run.session_id]


async def test_an_approval_is_given_while_the_run_is_iterated(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    touch = call("run_command", "c1", command="touch made.txt")
    script = ScriptedModel([reply("", touch), "FINAL_ANSWER: touched"])
    _, app = served(workspace, sqlite_log, script)
    async with serving(app) as http, Client(str(http.base_url), TOKEN) as client:
        run = client.run("touch")
        kinds = []
        async for event in run:
            kinds.append(event.kind)
            if isinstance(event, ApprovalRequested):
                await run.approve(event.call.id)
    assert kinds.count("run_finished") == 2  # waiting, then the end
    assert isinstance(run.finished, RunFinished)
    assert run.finished.final_answer == "touched"
    assert (workspace / "made.txt").exists()


async def test_errors_come_back_as_reins_raises_them(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _, app = served(workspace, sqlite_log, ScriptedModel(WRITE_THEN_ANSWER))
    async with serving(app) as http:
        async with Client(str(http.base_url), TOKEN) as client:
            run_id, _ = await client.start("write hello.txt")
            _ = [event async for event in client.events(run_id)]
            with pytest.raises(RunNotFound, match="no run nope in this store"):
                await client.view("nope")
            with pytest.raises(RunNotFound):
                _ = [event async for event in client.events("nope")]
            with pytest.raises(SessionBusy, match="not going on"):
                await client.steer(run_id, "more")
            with pytest.raises(UsageError, match="goal"):
                await client.start("")
        async with Client(str(http.base_url), "wrong") as stranger:
            with pytest.raises(UsageError, match="refused the token"):
                await stranger.sessions()


async def test_a_server_that_is_not_there_is_said_so() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    async with Client(f"http://127.0.0.1:{port}", TOKEN) as client:
        with pytest.raises(ServerUnreachable, match=f"127.0.0.1:{port}"):
            await client.sessions()
