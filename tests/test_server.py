"""`reins.server`: the HTTP API, served by a real uvicorn on a loopback port, driving real
runs (scripted models, a real SQLite store) and streaming them as server-sent events."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from reins import Agent, Ask, Budgets, ContextSettings, Message, ToolSpec, UserMessage
from reins.core._errors import UsageError
from reins.events import RunStarted
from reins.server import RunRequest, Runs, create_app, server_token
from reins.store import IndexedLog, SQLiteLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply

TOKEN = "s3cret-token"


@dataclass
class Sse:
    id: str | None
    data: dict[str, Any]


@asynccontextmanager
async def serving(app: FastAPI, token: str = TOKEN) -> AsyncIterator[httpx.AsyncClient]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=20
        ) as client:
            yield client
    finally:
        server.should_exit = True
        await task


async def stream(
    client: httpx.AsyncClient, run_id: str, headers: dict[str, str] | None = None, **params: Any
) -> list[Sse]:
    """The run's server-sent events until the server ends the stream (30 s at most)."""
    events: list[Sse] = []
    event_id: str | None = None
    data: list[str] = []
    url = f"/api/runs/{run_id}/events"
    async with (
        asyncio.timeout(30),  # keep-alive comments would keep a stream that never ends open
        client.stream("GET", url, params=params, headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and data:
                events.append(Sse(event_id, json.loads("\n".join(data))))
                event_id, data = None, []
    return events


def served(
    workspace: Path,
    log: IndexedLog,
    model: Any,
    *,
    max_steps: int = 10,
    context: ContextSettings | None = None,
) -> tuple[Runs, FastAPI]:
    def make_agent(request: RunRequest) -> Agent:
        return Agent(
            model=model,
            tools=BUILTIN_TOOLS,
            workspace=workspace,
            log=log,
            budgets=Budgets(max_steps=request.max_steps or max_steps),
            approval="pause",
            ask=Ask(answer="pause"),
            context=context or ContextSettings(),
        )

    runs = Runs(log, make_agent, signing_key=TOKEN.encode())
    return runs, create_app(runs, TOKEN)


WRITE_THEN_ANSWER = [
    reply("I will write it.", call("write_file", "w1", path="hello.txt", content="hi\n")),
    reply("", call("final_answer", "f1", answer="hello.txt written")),
]


async def test_a_run_started_over_http_streams_its_logged_events_and_ends(
    workspace: Path, any_log: IndexedLog
) -> None:
    """On a folder's log and on PostgreSQL alike."""
    runs, app = served(workspace, any_log, ScriptedModel(WRITE_THEN_ANSWER))
    async with serving(app) as client:
        started = await client.post("/api/runs", json={"goal": "write hello.txt"})
        assert started.status_code == 201
        run_id = started.json()["run_id"]
        events = await stream(client, run_id)
        view = (await client.get(f"/api/runs/{run_id}")).json()

    logged = await any_log.events(run_id)
    journal = [e for e in events if e.id is not None]
    assert [(int(e.id or 0), e.data["kind"]) for e in journal] == [
        (event.seq, event.kind) for event in logged
    ]
    assert [e.data for e in journal] == [json.loads(event.model_dump_json()) for event in logged]
    assert events[-1].data["kind"] == "run_finished"
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert view["status"] == "finished"
    assert view["stop_reason"] == "end_turn"
    assert view["answer"] == "hello.txt written"
    assert view["steps"] == 2
    assert view["session_id"] == started.json()["session_id"]
    assert not runs.live


async def test_last_event_id_resumes_the_stream_with_no_gap_and_no_repeat(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _, app = served(workspace, sqlite_log, ScriptedModel(WRITE_THEN_ANSWER))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "write hello.txt"})).json()["run_id"]
        whole = [e for e in await stream(client, run_id) if e.id is not None]
        cut = whole[2].id
        assert cut is not None
        by_header = await stream(client, run_id, headers={"Last-Event-ID": cut})
        by_query = await stream(client, run_id, after=cut)
    assert [e.data for e in by_header] == [e.data for e in whole[3:]]
    assert [e.data for e in by_query] == [e.data for e in whole[3:]]


class Gate:
    """A model that waits at its first request until the test opens the gate, then answers
    with what the messages it was sent hold of a steering instruction."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.waiting = asyncio.Event()
        self.calls = 0

    async def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.waiting.set()
            await self.open.wait()
            return reply("reading", call("list_files", "l1", path="."))
        told = [m.content for m in messages if isinstance(m, UserMessage) and "STEER" in m.content]
        return reply("", call("final_answer", "f1", answer=f"told: {told}"))


async def test_a_run_is_steered_and_watched_while_it_works(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    _, app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        watching = asyncio.create_task(stream(client, run_id))
        await gate.waiting.wait()
        running = (await client.get(f"/api/runs/{run_id}")).json()
        steered = await client.post(f"/api/runs/{run_id}/steer", json={"text": "say pineapple"})
        gate.open.set()
        events = await watching
        view = (await client.get(f"/api/runs/{run_id}")).json()
        late = await client.post(f"/api/runs/{run_id}/steer", json={"text": "more"})
    assert running["status"] == "running"
    assert running["stop_reason"] is None
    assert steered.status_code == 202
    kinds = [e.data["kind"] for e in events]
    assert "steered" in kinds
    deltas = [e for e in events if e.data["kind"] == "text_delta"]
    assert "".join(e.data["text"] for e in deltas) == "reading"
    assert all(e.id is None for e in deltas)
    assert kinds[-1] == "run_finished"
    assert "pineapple" in view["answer"]
    assert late.status_code == 409
    assert "not going on" in late.json()["detail"]


async def test_a_stopped_run_ends_cancelled_in_its_log(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    _, app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        watching = asyncio.create_task(stream(client, run_id))
        await gate.waiting.wait()
        stopped = await client.post(f"/api/runs/{run_id}/stop")
        events = await watching
        view = (await client.get(f"/api/runs/{run_id}")).json()
    assert stopped.status_code == 202
    assert events[-1].data["kind"] == "run_finished"
    assert events[-1].data["stop_reason"] == "cancelled"
    assert view["status"] == "finished"
    assert view["stop_reason"] == "cancelled"
    finished = (await sqlite_log.events(run_id))[-1]
    assert finished.kind == "run_finished"


async def until(
    client: httpx.AsyncClient, run_id: str, status: str, awaiting: list[str] | None = None
) -> dict[str, Any]:
    """The run's view once it has `status` (and waits for the calls `awaiting`)."""
    for _ in range(500):
        view: dict[str, Any] = (await client.get(f"/api/runs/{run_id}")).json()
        if view["status"] == status and awaiting in (None, view["awaiting"]):
            return view
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run_id} never {status}: {view}")


async def test_an_approval_waits_for_its_answer_over_http(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    touch = call("run_command", "c1", command="touch made.txt")
    touch_again = call("run_command", "c2", command="touch again.txt")
    script = ScriptedModel([reply("", touch), reply("", touch_again), "FINAL_ANSWER: done"])
    _, app = served(workspace, sqlite_log, script)
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "touch"})).json()["run_id"]
        waiting = await until(client, run_id, "waiting")
        unknown = await client.post(f"/api/runs/{run_id}/approvals/c9", json={"approve": True})
        bad = await client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": "maybe"})
        approved = await client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        second = await until(client, run_id, "waiting", awaiting=["c2"])
        denied = await client.post(f"/api/runs/{run_id}/approvals/c2", json={"approve": False})
        events = await stream(client, run_id)
    assert waiting["awaiting"] == ["c1"]
    assert unknown.status_code == 404
    assert "waits for no answer to an approval of call c9" in unknown.json()["detail"]
    assert bad.status_code == 422
    assert approved.status_code == denied.status_code == 202
    assert second["awaiting"] == ["c2"]
    decided = [e.data for e in events if e.data["kind"] == "permission_decided"]
    assert [(d["call_id"], d["allowed"], d["by"]) for d in decided] == [
        ("c1", True, "user"),
        ("c2", False, "user"),
    ]
    assert (workspace / "made.txt").exists()
    assert not (workspace / "again.txt").exists()
    assert events[-1].data["stop_reason"] == "end_turn"


async def test_a_question_is_answered_over_http_and_the_model_gets_it(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    question = call("ask_user", "q1", question="Overwrite report.md?", default="no")

    def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        results = [m for m in messages if m.role == "tool"]
        if not results:
            return reply("", question)
        return reply("", call("final_answer", "f1", answer=str(results[-1].content)))

    _, app = served(workspace, sqlite_log, FunctionModel(model))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "write"})).json()["run_id"]
        waiting = await until(client, run_id, "waiting")
        as_approval = await client.post(f"/api/runs/{run_id}/approvals/q1", json={"approve": 1})
        answered = await client.post(f"/api/runs/{run_id}/answers/q1", json={"text": "yes, do"})
        events = await stream(client, run_id)
    assert waiting["awaiting"] == ["q1"]
    assert as_approval.status_code == 404
    assert answered.status_code == 202
    assert [e.data["answer"] for e in events if e.data["kind"] == "question_answered"] == [
        "yes, do"
    ]
    assert "yes, do" in events[-1].data["final_answer"]


async def test_a_run_another_process_writes_is_followed_until_it_ends(
    workspace: Path, tmp_path: Path
) -> None:
    """A `reins run` in a terminal, watched from the server: another log on the same store
    (as another process has) writes it; the server reads its events as they are committed."""
    gate = Gate()
    elsewhere = SQLiteLog(tmp_path / "store")
    here = SQLiteLog(tmp_path / "store")
    _, app = served(workspace, here, ScriptedModel(WRITE_THEN_ANSWER))
    terminal = Agent(
        model=FunctionModel(gate), tools=BUILTIN_TOOLS, workspace=workspace, log=elsewhere
    )
    try:
        async with serving(app) as client:
            run = terminal.iter("look around")
            first = await anext(run)
            assert isinstance(first, RunStarted)
            rest = asyncio.create_task(_drain(run))
            await gate.waiting.wait()
            running = (await client.get(f"/api/runs/{first.run_id}")).json()
            watching = asyncio.create_task(stream(client, first.run_id))
            await asyncio.sleep(0.3)
            gate.open.set()
            events = await watching
            await rest
    finally:
        await elsewhere.close()
        await here.close()
    assert running["status"] == "running"
    assert [int(e.id or 0) for e in events] == list(range(1, len(events) + 1))
    assert events[-1].data["kind"] == "run_finished"
    assert events[-1].data["final_answer"] == "told: []"


async def _drain(run: Any) -> None:
    async for _ in run:
        pass


async def test_the_api_needs_the_token_and_health_does_not(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _, app = served(workspace, sqlite_log, ScriptedModel(WRITE_THEN_ANSWER))
    async with serving(app, token="wrong") as client:
        health = await client.get("/api/health")
        wrong = await client.post("/api/runs", json={"goal": "write hello.txt"})
        missing = await client.get("/api/runs/r1", headers={"Authorization": ""})
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert wrong.status_code == missing.status_code == 401
    assert wrong.json() == missing.json() == {"detail": "unauthorized"}
    assert wrong.headers["www-authenticate"] == "Bearer"
    assert not (workspace / "hello.txt").exists()
    with pytest.raises(Exception, match="needs a token"):
        create_app(Runs(sqlite_log, lambda request: Agent(model=ScriptedModel([]))), "")


async def test_bad_requests_get_one_clear_error_each(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    _, app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as client:
        empty = await client.post("/api/runs", json={"goal": ""})
        not_json = await client.post(
            "/api/runs", content=b"{", headers={"content-type": "application/json"}
        )
        unknown = await client.get("/api/runs/nope")
        unknown_events = await client.get("/api/runs/nope/events")
        unknown_stop = await client.post("/api/runs/nope/stop")
        no_session = await client.post("/api/runs", json={"goal": "go", "session_id": "s-none"})
        started = (await client.post("/api/runs", json={"goal": "look around"})).json()
        await gate.waiting.wait()
        busy = await client.post(
            "/api/runs", json={"goal": "again", "session_id": started["session_id"]}
        )
        gate.open.set()
        await stream(client, started["run_id"])
    assert empty.status_code == 422
    assert empty.json()["detail"][0]["loc"] == ["body", "goal"]
    assert not_json.status_code == 422
    for response in (unknown, unknown_events, unknown_stop):
        assert response.status_code == 404
        assert response.json() == {"detail": "no run nope in this store"}
    assert no_session.status_code == 404
    assert "no session s-none" in no_session.json()["detail"]
    assert busy.status_code == 409
    assert "has a run going on" in busy.json()["detail"]


async def test_sessions_are_listed_shown_and_removed(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    model = ScriptedModel([*WRITE_THEN_ANSWER, *WRITE_THEN_ANSWER])
    _, app = served(workspace, sqlite_log, model)
    async with serving(app) as client:
        first = (await client.post("/api/runs", json={"goal": "write hello.txt"})).json()
        await stream(client, first["run_id"])
        again = {"goal": "once more", "session_id": first["session_id"]}
        second = (await client.post("/api/runs", json=again)).json()
        await stream(client, second["run_id"])
        other = (await client.post("/api/runs", json={"goal": "a new one"})).json()
        await stream(client, other["run_id"])
        listed = (await client.get("/api/sessions")).json()
        paged = (await client.get("/api/sessions", params={"offset": 1, "limit": 1})).json()
        shown = (await client.get(f"/api/sessions/{first['session_id']}")).json()
        removed = await client.delete(f"/api/sessions/{first['session_id']}")
        gone = await client.get(f"/api/sessions/{first['session_id']}")
        gone_run = await client.get(f"/api/runs/{first['run_id']}")
        again_removed = await client.delete(f"/api/sessions/{first['session_id']}")
        bad_page = await client.get("/api/sessions", params={"limit": 0})
    assert second["session_id"] == first["session_id"]
    assert listed["total"] == 2
    assert [(s["session_id"], s["goal"], s["runs"]) for s in listed["sessions"]] == [
        (other["session_id"], "a new one", 1),
        (first["session_id"], "write hello.txt", 2),
    ]
    assert listed["sessions"][1]["last_run_id"] == second["run_id"]
    assert listed["sessions"][1]["last_status"] == "finished"
    assert [s["session_id"] for s in paged["sessions"]] == [first["session_id"]]
    assert [r["run_id"] for r in shown["runs"]] == [first["run_id"], second["run_id"]]
    said = [m.get("content") for m in shown["messages"] if m["role"] == "user"]
    assert said[0] == "write hello.txt"
    assert "once more" in said
    assert removed.status_code == 204
    assert gone.status_code == gone_run.status_code == again_removed.status_code == 404
    assert bad_page.status_code == 422


async def test_a_session_with_a_run_going_on_is_not_removed(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    gate = Gate()
    _, app = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as client:
        started = (await client.post("/api/runs", json={"goal": "look around"})).json()
        await gate.waiting.wait()
        busy = await client.delete(f"/api/sessions/{started['session_id']}")
        gate.open.set()
        await stream(client, started["run_id"])
        done = await client.delete(f"/api/sessions/{started['session_id']}")
    assert busy.status_code == 409
    assert "has a run going on" in busy.json()["detail"]
    assert done.status_code == 204


def test_the_token_is_made_once_kept_private_and_an_empty_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REINS_SERVER_TOKEN", raising=False)
    made, new = server_token(tmp_path / "store")
    kept, again = server_token(tmp_path / "store")
    assert (new, again) == (True, False)
    assert kept == made
    assert len(made) >= 40
    assert stat.S_IMODE((tmp_path / "store" / "server.token").stat().st_mode) == 0o600
    (tmp_path / "store" / "server.token").write_text("\n")
    with pytest.raises(UsageError, match=r"server\.token is empty: delete it"):
        server_token(tmp_path / "store")
    monkeypatch.setenv("REINS_SERVER_TOKEN", "given")
    assert server_token(tmp_path / "elsewhere") == ("given", False)
    assert not (tmp_path / "elsewhere").exists()
