"""`reins.server` past the first turn: runs resumed (at a cap, after a cancel, with answers),
a waiting run's stream held open across its approval, sessions compacted, webhooks signed,
oversized bodies refused, and the WebSocket carrying the same events and commands."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from reins import ContextSettings
from reins.server import SIGNATURE, signature
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .test_server import TOKEN, WRITE_THEN_ANSWER, Gate, served, serving, stream, until

READS = [reply(f"look {k}", call("read_file", f"r{k}", path="notes.txt")) for k in range(6)]


async def test_a_run_stopped_at_its_cap_is_resumed_with_more_steps(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    (workspace / "notes.txt").write_text("notes\n")
    _, app = served(workspace, sqlite_log, ScriptedModel([*READS[:3], "FINAL_ANSWER: read"]))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "read", "max_steps": 2})).json()[
            "run_id"
        ]
        first = await stream(client, run_id)
        capped = (await client.get(f"/api/runs/{run_id}")).json()
        bad = await client.post(f"/api/runs/{run_id}/resume", json={"max_steps": 0})
        misspelt = await client.post(f"/api/runs/{run_id}/resume", json={"max_stepz": 9})
        resumed = await client.post(f"/api/runs/{run_id}/resume", json={})
        rest = await stream(client, run_id, after=first[-1].id)
        done = (await client.get(f"/api/runs/{run_id}")).json()
        again = await client.post(f"/api/runs/{run_id}/resume", json={})
        unknown = await client.post("/api/runs/nope/resume", json={})
    assert capped["stop_reason"] == "max_steps"
    assert capped["status"] == "finished"
    assert bad.status_code == misspelt.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "max_steps"]
    assert misspelt.json()["detail"][0]["loc"] == ["body", "max_stepz"]
    assert resumed.status_code == 202
    assert rest[0].data["kind"] == "run_resumed"
    assert rest[0].data["max_steps"] == 4  # the cap that stopped it, grown by as much again
    assert int(rest[0].id or 0) == int(first[-1].id or 0) + 1
    assert done["stop_reason"] == "end_turn"
    assert done["answer"] == "read"
    assert again.status_code == 409
    assert "ended its turn" in again.json()["detail"]
    assert unknown.status_code == 404


async def test_a_waiting_runs_stream_stays_open_and_goes_on_after_the_approval(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    touch = call("run_command", "c1", command="touch made.txt")
    script = ScriptedModel([reply("touching", touch), "FINAL_ANSWER: touched"])
    runs, app = served(workspace, sqlite_log, script)
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "touch"})).json()["run_id"]
        watching = asyncio.create_task(stream(client, run_id))
        waiting = await until(client, run_id, "waiting")
        await asyncio.sleep(0.2)
        open_while_waiting = not watching.done()
        held = not runs.live  # a waiting run holds no task
        stop = await client.post(f"/api/runs/{run_id}/stop")
        await client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        events = await watching
    assert waiting["awaiting"] == ["c1"]
    assert open_while_waiting
    assert held
    assert stop.status_code == 409
    kinds = [e.data["kind"] for e in events if e.id is not None]
    assert kinds.count("run_finished") == 2
    ends = [e.data["stop_reason"] for e in events if e.data["kind"] == "run_finished"]
    assert ends == ["waiting", "end_turn"]
    after_wait = kinds[kinds.index("run_finished") + 1 :]
    assert after_wait[:2] == ["run_resumed", "permission_decided"]
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == list(range(1, len(ids) + 1))
    assert (workspace / "made.txt").exists()


async def test_two_approvals_of_one_step_answered_at_once_both_count(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    both = reply(
        "",
        call("run_command", "c1", command="touch one.txt"),
        call("run_command", "c2", command="touch two.txt"),
    )
    _, app = served(workspace, sqlite_log, ScriptedModel([both, "FINAL_ANSWER: both"]))
    async with serving(app) as client:
        run_id = (await client.post("/api/runs", json={"goal": "touch two"})).json()["run_id"]
        await until(client, run_id, "waiting", awaiting=["c1", "c2"])
        answers = await asyncio.gather(
            client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True}),
            client.post(f"/api/runs/{run_id}/approvals/c2", json={"approve": True}),
        )
        done = await until(client, run_id, "finished")
    assert [a.status_code for a in answers] == [202, 202]
    assert done["answer"] == "both"
    assert (workspace / "one.txt").exists()
    assert (workspace / "two.txt").exists()


async def test_a_session_is_compacted_on_request(workspace: Path, sqlite_log: SQLiteLog) -> None:
    (workspace / "notes.txt").write_text("".join(f"line {k}: a note\n" for k in range(400)))
    gate = Gate()
    model = ScriptedModel([*READS, "FINAL_ANSWER: read"])
    _, app = served(workspace, sqlite_log, model)
    _, gated = served(workspace, sqlite_log, FunctionModel(gate))
    async with serving(app) as client:
        started = (await client.post("/api/runs", json={"goal": "read"})).json()
        await stream(client, started["run_id"])
        compacted = await client.post(f"/api/sessions/{started['session_id']}/compact")
        twice = await client.post(f"/api/sessions/{started['session_id']}/compact")
        unknown = await client.post("/api/sessions/nope/compact")
    async with serving(gated) as client:
        busy = (await client.post("/api/runs", json={"goal": "look"})).json()
        await gate.waiting.wait()
        live = await client.post(f"/api/sessions/{busy['session_id']}/compact")
        gate.open.set()
        await stream(client, busy["run_id"])
    assert compacted.status_code == 200, compacted.text
    body = compacted.json()
    assert body["messages_after"] < body["messages_before"]
    assert body["tokens_after"] < body["tokens_before"]
    logged = [e.kind for e in await sqlite_log.events(started["run_id"])]
    assert logged[-1] == "context_compacted"
    assert twice.status_code == 409
    assert "nothing to compact" in twice.json()["detail"]
    assert unknown.status_code == 404
    assert live.status_code == 409


async def test_an_oversized_body_is_refused_before_it_is_read_whole(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    _, app = served(workspace, sqlite_log, ScriptedModel(WRITE_THEN_ANSWER))
    big = json.dumps({"goal": "x" * (2 * 1024 * 1024)}).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    async with serving(app) as client:
        declared = await client.post(
            "/api/runs", content=big, headers={"content-type": "application/json"}
        )
        chunked = await client.post(
            "/api/runs", content=chunks(), headers={"content-type": "application/json"}
        )
        fine = await client.post("/api/runs", json={"goal": "write hello.txt"})
        await stream(client, fine.json()["run_id"])
    assert declared.status_code == chunked.status_code == 413
    assert "Content Too Large" in declared.text
    assert fine.status_code == 201
    assert not await sqlite_log.runs() or len(await sqlite_log.runs()) == 1


@asynccontextmanager
async def receiver() -> AsyncIterator[tuple[str, list[tuple[bytes, str]]]]:
    """A webhook's receiver: a real HTTP server keeping each body and its signature."""
    got: list[tuple[bytes, str]] = []
    hooks = FastAPI()

    @hooks.post("/hook")
    async def hook(request: Request) -> dict[str, str]:
        got.append((await request.body(), request.headers.get(SIGNATURE, "")))
        return {}

    server = uvicorn.Server(uvicorn.Config(hooks, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (a flag, no event)
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook", got
    finally:
        server.should_exit = True
        await task


async def test_a_webhook_is_told_when_the_run_waits_and_when_it_ends_signed(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    touch = call("run_command", "c1", command="touch made.txt")
    _, app = served(workspace, sqlite_log, ScriptedModel([reply("", touch), "FINAL_ANSWER: ok"]))
    async with receiver() as (url, got), serving(app) as client:
        bad = await client.post("/api/runs", json={"goal": "touch", "webhook": "not a url"})
        run_id = (await client.post("/api/runs", json={"goal": "touch", "webhook": url})).json()[
            "run_id"
        ]
        await until(client, run_id, "waiting")
        for _ in range(200):
            if got:
                break
            await asyncio.sleep(0.02)
        await client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        await until(client, run_id, "finished")
        for _ in range(200):
            if len(got) == 2:
                break
            await asyncio.sleep(0.02)
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "webhook"]
    views = [json.loads(body) for body, _ in got]
    assert [(v["run_id"], v["status"]) for v in views] == [
        (run_id, "waiting"),
        (run_id, "finished"),
    ]
    assert views[1]["answer"] == "ok"
    assert all(sent == signature(TOKEN.encode(), body) for body, sent in got)
    assert signature(b"another key", got[0][0]) != got[0][1]


async def test_the_websocket_carries_the_same_events_and_commands(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    touch = call("run_command", "c1", command="touch made.txt")
    script = ScriptedModel([reply("touching", touch), "FINAL_ANSWER: touched"])
    _, app = served(workspace, sqlite_log, script)
    async with serving(app) as client:
        ws_url = str(client.base_url).replace("http", "ws", 1) + "/api/ws"
        async with connect(ws_url) as refused:
            await refused.send(json.dumps({"type": "auth", "token": "wrong"}))
            with pytest.raises(ConnectionClosed) as closed:
                await refused.recv()
        async with connect(ws_url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            await ws.send(json.dumps({"type": "start", "goal": "touch", "id": 1}))
            await ws.send(json.dumps({"type": "steer", "id": 2}))
            await ws.send("{not json")
            await ws.send(json.dumps({"type": "stop", "run_id": "nope", "id": 3}))
            got: list[dict[str, Any]] = []
            run_id = ""
            async with asyncio.timeout(30):
                while True:
                    message = json.loads(await ws.recv())
                    got.append(message)
                    if message["type"] == "ok" and message["id"] == 1:
                        run_id = message["run_id"]
                    kind = message.get("event", {}).get("kind")
                    if kind == "approval_requested":
                        approve = {"type": "approve", "run_id": run_id, "call_id": "c1"}
                        await ws.send(json.dumps({**approve, "approve": True, "id": 4}))
                    if message["type"] == "end":
                        break
        via_http = [e for e in await stream(client, run_id) if e.id is not None]
    errors = {m["id"]: m for m in got if m["type"] == "error"}
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4401
    assert errors[2]["status"] == 422
    assert "run_id" in errors[2]["detail"]
    assert errors[None]["status"] == 422
    assert "not a JSON command" in errors[None]["detail"]
    assert errors[3]["status"] == 404
    assert any(m["type"] == "ok" and m["id"] == 4 for m in got)
    logged = [m for m in got if m["type"] == "event" and m["id"] is not None]
    assert [m["event"] for m in logged] == [e.data for e in via_http]
    assert logged[-1]["event"]["stop_reason"] == "end_turn"
    assert (workspace / "made.txt").exists()


async def read_to_the_end(ws: Any) -> None:
    async with asyncio.timeout(30):
        while True:
            await ws.recv()


async def test_a_websocket_client_that_stops_reading_is_dropped(
    workspace: Path, sqlite_log: SQLiteLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What goes out to a socket waits in a bounded queue: a client that reads nothing while
    a run writes megabytes fills it and is closed (1013), and the run goes on regardless."""
    monkeypatch.setattr("reins.server._ws.QUEUE", 8)
    chatter = "x" * 1_000_000
    steps = [reply(chatter, call("calculate", f"c{k}", expression=f"{k} + 1")) for k in range(6)]
    script = ScriptedModel([*steps, "FINAL_ANSWER: said"])
    big = ContextSettings(window=50_000_000)  # the chatter is the point, not a full window
    _, app = served(workspace, sqlite_log, script, max_steps=40, context=big)
    async with serving(app) as client:
        ws_url = str(client.base_url).replace("http", "ws", 1) + "/api/ws"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(ws_url, additional_headers=headers, max_queue=1, max_size=None) as ws:
            await ws.send(json.dumps({"type": "start", "goal": "talk", "id": 1}))
            await asyncio.sleep(3)  # reads nothing meanwhile
            with pytest.raises(ConnectionClosed) as closed:
                await read_to_the_end(ws)
        run_id = (await client.get("/api/sessions")).json()["sessions"][0]["last_run_id"]
        done = await until(client, run_id, "finished")
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1013
    assert (done["stop_reason"], done["answer"]) == ("end_turn", "said"), done["detail"]
