"""Two servers on one PostgreSQL store (issue 33, part 2): a run started through one is
watched, steered, stopped and approved through the other. Each server has a log of its own
(its own connections and session locks, as a process of its own has), on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from reins import Agent, Budgets, Message, ToolSpec
from reins.agent import AgentRun
from reins.events import Event
from reins.server import RunRequest, Runs, create_app
from reins.store import PostgresLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS, tool

from .helpers import call, reply
from .test_cli import script
from .test_cli_serve import SLEEP_THEN_TOUCH, _events, _server, _started, _stop, _until
from .test_server import TOKEN, Gate, served, serving, stream, until


@asynccontextmanager
async def two_servers(
    workspace: Path, url: str, model_a: Any, model_b: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, PostgresLog]]:
    """Servers A and B on the store at `url`: their clients, and A's log."""
    log_a, log_b = PostgresLog(url), PostgresLog(url)
    try:
        _, app_a = served(workspace, log_a, model_a)
        _, app_b = served(workspace, log_b, model_b)
        async with serving(app_a) as a, serving(app_b) as b:
            yield a, b, log_a
    finally:
        await log_a.close()
        await log_b.close()


def no_model(*_: Any) -> Any:
    raise AssertionError("server B runs nothing in this test")


async def test_a_run_of_server_a_is_watched_to_its_end_through_server_b(
    workspace: Path, postgres_url: str
) -> None:
    gate = Gate()
    async with two_servers(workspace, postgres_url, FunctionModel(gate), no_model) as (a, b, log):
        run_id = (await a.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        await gate.waiting.wait()
        running = (await b.get(f"/api/runs/{run_id}")).json()
        watching = asyncio.create_task(stream(b, run_id))
        await asyncio.sleep(0.2)
        gate.open.set()
        events = await watching
        logged = await log.events(run_id)
        tail, none = await log.events_after(run_id, 3), await log.events_after("r-none", 0)
    assert running["status"] == "running"
    assert [(int(e.id or 0), e.data["kind"]) for e in events] == [
        (event.seq, event.kind) for event in logged
    ]
    assert (tail, none) == (logged[3:], [])
    assert events[-1].data["kind"] == "run_finished"
    assert events[-1].data["final_answer"] == "told: []"


def steer_told(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Set once a run here is told a steer (the server that runs it got the command)."""
    told = asyncio.Event()
    steer = AgentRun.steer

    def steered(run: AgentRun, text: str) -> None:
        steer(run, text)
        told.set()

    monkeypatch.setattr(AgentRun, "steer", steered)
    return told


async def test_a_run_of_server_a_is_steered_through_server_b(
    workspace: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    told = steer_told(monkeypatch)
    gate = Gate()
    async with two_servers(workspace, postgres_url, FunctionModel(gate), no_model) as (a, b, _):
        run_id = (await a.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        await gate.waiting.wait()
        blank = await b.post(f"/api/runs/{run_id}/steer", json={"text": "  "})
        queued = await b.post(f"/api/runs/{run_id}/steer", json={"text": "say pineapple"})
        async with asyncio.timeout(10):
            await told.wait()  # server A got it: its run tells the model at its next round
        gate.open.set()
        events = await stream(b, run_id)
        late = await b.post(f"/api/runs/{run_id}/steer", json={"text": "more"})
    assert blank.status_code == 422
    assert queued.status_code == 202
    assert [e.data["kind"] for e in events].count("steered") == 1
    assert "pineapple" in events[-1].data["final_answer"]
    assert late.status_code == 409
    assert "not going on" in late.json()["detail"]


async def test_a_run_of_server_a_is_stopped_through_server_b(
    workspace: Path, postgres_url: str
) -> None:
    gate = Gate()  # never opened: the run waits on its model until it is stopped
    async with two_servers(workspace, postgres_url, FunctionModel(gate), no_model) as (a, b, log):
        run_id = (await a.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        await gate.waiting.wait()
        watching = asyncio.create_task(stream(b, run_id))
        stopped = await b.post(f"/api/runs/{run_id}/stop")
        events = await watching
        view = (await a.get(f"/api/runs/{run_id}")).json()
        logged = await log.events(run_id)
    assert stopped.status_code == 202
    assert events[-1].data["kind"] == "run_finished"
    assert events[-1].data["stop_reason"] == "cancelled"
    assert view["status"] == "finished"
    assert logged[-1].kind == "run_finished"


async def test_a_run_of_server_a_is_followed_and_steered_over_bs_websocket(
    workspace: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's WebSocket does for A's run what B's HTTP routes do: its events read from the log,
    a steer sent to A through the store."""
    told = steer_told(monkeypatch)
    gate = Gate()
    async with two_servers(workspace, postgres_url, FunctionModel(gate), no_model) as (a, b, log):
        run_id = (await a.post("/api/runs", json={"goal": "look around"})).json()["run_id"]
        await gate.waiting.wait()
        ws_url = str(b.base_url).replace("http", "ws", 1) + "/api/ws"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        got: list[dict[str, Any]] = []
        async with connect(ws_url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "subscribe", "run_id": run_id, "id": 1}))
            steering = {"type": "steer", "run_id": run_id, "text": "say pineapple", "id": 2}
            await ws.send(json.dumps(steering))
            async with asyncio.timeout(30):
                await told.wait()  # server A got it
                gate.open.set()
                while not got or got[-1]["type"] != "end":
                    got.append(json.loads(await ws.recv()))
        logged = await log.events(run_id)
    replies = {m["id"]: m["type"] for m in got if m["type"] in ("ok", "error")}
    seen = [m["event"] for m in got if m["type"] == "event" and m["id"] is not None]
    assert replies == {1: "ok", 2: "ok"}
    assert [e["seq"] for e in seen] == [event.seq for event in logged]
    assert [e["kind"] for e in seen].count("steered") == 1
    assert "pineapple" in seen[-1]["final_answer"]


async def test_a_run_waiting_on_server_a_is_approved_through_server_b(
    workspace: Path, postgres_url: str
) -> None:
    """A waiting run holds no process: the server that gets the answer resumes it from the
    log, and the other's stream follows it there."""
    touch = call("run_command", "c1", command="touch made.txt")
    model = ScriptedModel([reply("", touch), "FINAL_ANSWER: done"])  # by turn: either server
    async with two_servers(workspace, postgres_url, model, model) as (a, b, log):
        run_id = (await a.post("/api/runs", json={"goal": "touch"})).json()["run_id"]
        waiting = await until(b, run_id, "waiting")
        watching = asyncio.create_task(stream(a, run_id))
        approved = await b.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        events = await stream(b, run_id)
        on_a = await watching
        logged = await log.events(run_id)
    assert waiting["awaiting"] == ["c1"]
    assert approved.status_code == 202
    assert (workspace / "made.txt").exists()
    assert events[-1].data["stop_reason"] == "end_turn"
    assert [int(e.id or 0) for e in on_a if e.id] == [e.seq for e in logged]


async def test_an_approval_sent_to_b_while_a_runs_the_steps_other_call_waits_for_it(
    workspace: Path, postgres_url: str
) -> None:
    """The run asks for c1's approval while A still runs s1, a slow call of the same step:
    B takes the answer, and resumes the run once A has let it go."""
    release = asyncio.Event()

    @tool(read_only=True)
    async def slow() -> str:
        """Takes its time."""
        await release.wait()
        return "slow done"

    touch = call("run_command", "c1", command="touch made.txt")
    model = ScriptedModel([reply("", touch, call("slow", "s1")), "FINAL_ANSWER: done"])
    logs = PostgresLog(postgres_url), PostgresLog(postgres_url)
    apps = [
        create_app(Runs(log, _agents(workspace, log, model, [*BUILTIN_TOOLS, slow])), TOKEN)
        for log in logs
    ]
    try:
        async with serving(apps[0]) as a, serving(apps[1]) as b:
            run_id = (await a.post("/api/runs", json={"goal": "touch"})).json()["run_id"]
            asked = await until(b, run_id, "running", awaiting=["c1"])
            url = f"/api/runs/{run_id}/approvals/c1"
            approving = asyncio.create_task(b.post(url, json={"approve": True}))
            await asyncio.sleep(0.3)
            held = approving.done()
            release.set()
            approved = await approving
            events = await stream(a, run_id)
    finally:
        for log in logs:
            await log.close()
    assert asked["awaiting"] == ["c1"]
    assert not held
    assert approved.status_code == 202
    assert (workspace / "made.txt").exists()
    kinds = [e.data["kind"] for e in events if e.id]
    assert kinds.count("run_resumed") == 1
    assert events[-1].data["stop_reason"] == "end_turn"


def _agents(
    workspace: Path, log: PostgresLog, model: Any, tools: list[Any]
) -> Callable[[RunRequest], Agent]:
    def make_agent(request: RunRequest) -> Agent:
        return Agent(model=model, tools=tools, workspace=workspace, log=log, approval="pause")

    return make_agent


async def test_a_question_of_a_run_of_server_a_is_answered_through_server_b(
    workspace: Path, postgres_url: str
) -> None:
    def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        results = [m for m in messages if m.role == "tool"]
        if not results:
            return reply("", call("ask_user", "q1", question="Overwrite?", default="no"))
        return reply("", call("final_answer", "f1", answer=str(results[-1].content)))

    either = FunctionModel(model)
    async with two_servers(workspace, postgres_url, either, either) as (a, b, _):
        run_id = (await a.post("/api/runs", json={"goal": "write"})).json()["run_id"]
        waiting = await until(b, run_id, "waiting")
        answered = await b.post(f"/api/runs/{run_id}/answers/q1", json={"text": "yes, do"})
        events = await stream(a, run_id)
    assert waiting["awaiting"] == ["q1"]
    assert answered.status_code == 202
    assert "yes, do" in events[-1].data["final_answer"]


async def test_a_lease_left_on_a_run_that_had_stopped_is_given_up_not_resumed(
    workspace: Path, postgres_url: str
) -> None:
    """A server died after its run stopped (at its step cap) and before it gave up the
    lease: the server that claims the lease leaves the run as it stopped."""
    log = PostgresLog(postgres_url)

    def make_agent(request: RunRequest) -> Agent:
        return Agent(model=ScriptedModel(["FINAL_ANSWER: again"]), workspace=workspace, log=log)

    runs = Runs(log, make_agent, lease=1.0)
    try:
        looping = ScriptedModel([reply("", call("list_dir", f"l{k}", path=".")) for k in range(3)])
        capped = Agent(
            model=looping,
            tools=BUILTIN_TOOLS,
            workspace=workspace,
            log=log,
            budgets=Budgets(max_steps=1),
        )
        stopped = await capped.run("look around")
        gone = log.leases("gone", 1.0)
        gone.take(stopped.run_id, stopped.session_id)
        await gone.flush()
        await asyncio.sleep(1.1)  # the lease expires
        await runs.open()
        for _ in range(100):  # the lease is claimed within a third of a lease
            if not await gone.leased(stopped.run_id):
                break
            await asyncio.sleep(0.05)
        left = await gone.leased(stopped.run_id)
    finally:
        await runs.close()
        events = await log.events(stopped.run_id)
        await log.close()
    assert stopped.stop_reason.value == "max_steps"
    assert not left
    assert [e.kind for e in events].count("run_resumed") == 0


@dataclass
class Served:
    """Two `reins serve` processes on one store: their project, processes and clients, and
    what each said once stopped."""

    project: Path
    servers: list[subprocess.Popen[str]]
    a: httpx.Client
    b: httpx.Client
    said: list[str] = field(default_factory=list[str])


@contextmanager
def two_reins_serve(tmp_path: Path, postgres_url: str, *extra: str) -> Iterator[Served]:
    """`reins serve EXTRA` twice on the store, with the sleep-then-touch script; stopped (those
    still alive) at the end."""
    project = tmp_path / "project"
    project.mkdir()
    model = script(tmp_path / "slow.json", SLEEP_THEN_TOUCH)
    env = {**os.environ, "REINS_SERVER_TOKEN": "tok", "COLUMNS": "200"}
    args = ["serve", "--port", "0", "--store", postgres_url, "--model", model, *extra]
    servers = [_server(project, args, env) for _ in range(2)]
    said: list[str] = []
    try:
        urls = [_started(s, then=0)[0] for s in servers]
        auth = {"Authorization": "Bearer tok"}
        with (
            httpx.Client(base_url=urls[0], headers=auth, timeout=30) as a,
            httpx.Client(base_url=urls[1], headers=auth, timeout=30) as b,
        ):
            yield Served(project, servers, a, b, said)
    finally:
        said += [_stop(s)[1] for s in servers if s.poll() is None]


def test_two_reins_serve_processes_share_a_run(tmp_path: Path, postgres_url: str) -> None:
    """`reins serve` twice on one PostgreSQL store: a run started through A waits for an
    approval, which B gets (B resumes it, from the log); A then stops it, through the store,
    and A's stream has every event once, in order."""
    with two_reins_serve(tmp_path, postgres_url) as served:
        a, b = served.a, served.b
        run_id = a.post("/api/runs", json={"goal": "sleep, then touch"}).json()["run_id"]
        waiting = _until(b, run_id, "waiting")
        approved = b.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        _until(a, run_id, "running")  # on B: A sees B hold the session
        stopped = a.post(f"/api/runs/{run_id}/stop")
        events = _events(a, run_id)
        view = a.get(f"/api/runs/{run_id}").json()
    assert waiting["awaiting"] == ["c1"]
    assert approved.status_code == 202
    assert stopped.status_code == 202
    assert view["stop_reason"] == "cancelled"
    assert [i for i, _ in events] == list(range(1, len(events) + 1))
    assert [k for _, k in events].count("run_resumed") == 1
    assert events[-1][1] == "run_finished"
    assert not any("Traceback" in s for s in served.said)


@pytest.mark.parametrize("end", ["kill -9", "interrupt"])
def test_a_run_of_a_server_gone_is_taken_over_by_the_other(
    tmp_path: Path, postgres_url: str, end: str
) -> None:
    """The server that runs a run is killed (`kill -9`: the other takes the run over once its
    lease expires, 2 s here) or stopped (Ctrl-C: it hands the run over, its lease expired at
    once). The other server finishes the run by itself, the interrupted call not run again;
    a stream through it, opened before, goes on to the end, every event once and in order."""
    watcher = ThreadPoolExecutor(1)  # its stream ends when B does: shut down after B
    try:
        with two_reins_serve(tmp_path, postgres_url, "-y", "--lease", "2") as served:
            a, b, gone = served.a, served.b, served.servers[0]
            run_id = a.post("/api/runs", json={"goal": "sleep, then touch"}).json()["run_id"]
            _until(b, run_id, "running")
            watching = watcher.submit(_events, b, run_id)
            time.sleep(1)  # `sleep 30` runs in A
            ended = datetime.now(UTC)
            if end == "kill -9":
                gone.kill()
                gone.communicate()
            else:
                code, said = _stop(gone)
                served.said.append(said)
            finished = _until(b, run_id, "finished")
            streamed = watching.result(timeout=30)
            events = _events(b, run_id)
            logged = events_of(postgres_url, run_id)
    finally:
        watcher.shutdown()
    assert finished["answer"] == "done"
    assert (served.project / "approved.txt").exists()
    assert streamed == events
    assert [i for i, _ in events] == list(range(1, len(events) + 1))
    kinds = [k for _, k in events]
    assert kinds.count("tool_call_started") == 2  # the sleep once, the touch once
    assert kinds.index("run_resumed") < kinds.index("tool_call_finished")  # the sleep's end:
    # recorded as interrupted by the takeover, not run again
    assert kinds.count("run_resumed") == 1
    assert kinds.count("run_finished") == 1  # not cancelled by A on its way out
    if end == "kill -9":  # not taken before A's lease ran out
        resumed = next(e for e in logged if e.kind == "run_resumed")
        assert (resumed.ts - ended).total_seconds() > 1.0
    else:
        assert code == 130  # interrupted, as a lone server is
    assert not any("Traceback" in s for s in served.said)


def events_of(url: str, run_id: str) -> list[Event]:
    async def read() -> list[Event]:
        log = PostgresLog(url, create=False)
        try:
            return await log.events(run_id)
        finally:
            await log.close()

    return asyncio.run(read())
