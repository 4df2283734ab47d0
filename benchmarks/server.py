"""`reins serve` under load: 200 runs at once, each watched by its own SSE client.

A server process (this file with `--serve`) drives runs of a scripted model that answers
after a fixed delay (`--delay`, default 1 s: a hosted model's reply takes seconds) with a
read_file call for `--steps` steps, then a final answer. The load process starts `--runs` runs
over HTTP, spread evenly over `--ramp` seconds (default: one model delay, after which all of
them go on at once; 0: all in the same instant, a thundering herd), and opens one event stream
per run; for every event appended once its stream is open it notes the time from the append
(the event's `ts`) to its arrival. Reported: events a second, p50 / p99 of that time, events
lost (a stream's ids must be 1..N, ending in run_finished), and the server's memory per open
session (its RSS at the peak, less its RSS when idle, over the runs). Then the same runs in
one process, each drained by a task as it is appended (no HTTP), for the ratio. The client runs
on the same cores as the server: its parsing is in the figures. Goal (issue 30): p99 <= 50 ms
at 200 streams on 2 cores, no event lost.

    python benchmarks/server.py [--runs 200] [--steps 5] [--delay 1.0] [--ramp SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

TOKEN = "bench-token"


def _script(steps: int, delay: float) -> Any:
    """The scripted model: `delay` seconds a reply, a read_file for `steps` steps (a line
    further each step: a run repeating one call is stopped as going in circles), then done."""
    from reins import AssistantMessage, Message, ToolCall, ToolSpec
    from reins.testing import FunctionModel

    async def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Any:
        await asyncio.sleep(delay)
        done = sum(1 for m in messages if m.role == "tool")
        if done >= steps:
            return "FINAL_ANSWER: read"
        arguments = {"path": "notes.txt", "start_line": done + 1}
        call = ToolCall(id=f"r{done}", name="read_file", arguments=arguments)
        return AssistantMessage(text=f"reading, step {done}", tool_calls=(call,))

    return FunctionModel(reply)


def _agent(workspace: Path, log: Any, model: Any) -> Any:
    from reins import Agent, Budgets
    from reins.tools import BUILTIN_TOOLS

    return Agent(
        model=model,
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        log=log,
        budgets=Budgets(max_steps=50),
        approval="allow",
    )


def serve(port_file: Path, store: Path, workspace: Path, steps: int, delay: float) -> None:
    """The server process: `reins.server` on uvicorn, its port written to `port_file`."""
    from reins.store import SQLiteLog

    asyncio.run(serve_log(port_file, lambda: SQLiteLog(store), workspace, steps, delay))


async def serve_log(
    port_file: Path,
    make_log: Callable[[], Any],
    workspace: Path,
    steps: int,
    delay: float,
) -> None:
    """`serve` on the log `make_log` opens (made in the server's event loop); closed after."""
    import uvicorn

    from reins.server import Runs, create_app

    log = make_log()
    model = _script(steps, delay)
    runs = Runs(log, lambda request: _agent(workspace, log, model))
    app = create_app(runs, TOKEN)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        backlog=1024,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    port_file.write_text(str(server.servers[0].sockets[0].getsockname()[1]))  # noqa: ASYNC240 (once)
    await task
    await log.close()


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _watch(
    url: str,
    goal: str,
    arrivals: list[float],
    wait: float,
    tls: Any,
    watch: str | None = None,
    every: list[float] | None = None,
) -> tuple[str, list[int], bool]:
    """One client (a connection pool of its own, as a browser has: one pool for all would
    cost the load process O(n²) in httpcore's pool bookkeeping): after `wait` seconds it starts
    a run and follows its stream; for each event appended once the stream is open (those
    before come from the log, not live) the time to its arrival. The stream comes from the
    server at `watch` (default: `url`, where the run was started); `every` gets the time of
    every event, those before the stream opened too. The run's id, the stream's ids, and
    whether it ended with run_finished."""
    import httpx

    await asyncio.sleep(wait)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    ids: list[int] = []
    last_kind = ""
    block_id: str | None = None
    data = ""
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=httpx.Timeout(60, read=None), verify=tls
    ) as client:
        run_id = (await client.post("/api/runs", json={"goal": goal})).json()["run_id"]
        events = f"{watch or url}/api/runs/{run_id}/events"
        async with client.stream("GET", events) as response:
            opened = time.time()
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    block_id = line[4:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif not line and data:
                    now = time.time()
                    event = json.loads(data)
                    appended = datetime.fromisoformat(event["ts"]).timestamp()
                    if appended >= opened:
                        arrivals.append(now - appended)
                    if every is not None:
                        every.append(now - appended)
                    if block_id is not None:
                        ids.append(int(block_id))
                        last_kind = event["kind"]
                    block_id, data = None, ""
    return run_id, ids, last_kind == "run_finished"


async def load(url: str, runs: int, ramp: float, pid: int) -> dict[str, Any]:
    idle = _rss_kb(pid)
    peak = idle
    arrivals: list[float] = []
    sampling = True

    async def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, _rss_kb(pid))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    tls = ssl.create_default_context()  # made once: each client making its own costs ~20 ms
    begun = time.perf_counter()
    streams = await asyncio.gather(
        *(_watch(url, f"read notes {k}", arrivals, k * ramp / runs, tls) for k in range(runs))
    )
    wall = time.perf_counter() - begun
    sampling = False
    await sampler
    lost = sum(1 for _, ids, ended in streams if ids != list(range(1, len(ids) + 1)) or not ended)
    return {
        "events": len(arrivals),
        "per_s": len(arrivals) / wall,
        "arrivals": arrivals,
        "lost": lost,
        "memory_kb_per_run": (peak - idle) / runs,
        "wall": wall,
    }


async def in_process(
    runs: int, ramp: float, steps: int, delay: float, store: Path, workspace: Path
) -> dict[str, Any]:
    """The same runs in this process, each drained as its events come: the floor for the
    server's latency (the model, the loop, the log; no HTTP)."""
    from reins.store import SQLiteLog

    log = SQLiteLog(store)
    agent = _agent(workspace, log, _script(steps, delay))
    arrivals: list[float] = []

    async def drain(k: int) -> None:
        await asyncio.sleep(k * ramp / runs)
        async for event in agent.iter(f"read notes {k}"):
            arrivals.append(time.time() - event.ts.timestamp())

    begun = time.perf_counter()
    await asyncio.gather(*(drain(k) for k in range(runs)))
    wall = time.perf_counter() - begun
    await log.close()
    return {
        "events": len(arrivals),
        "per_s": len(arrivals) / wall,
        "arrivals": arrivals,
        "wall": wall,
    }


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds a model reply takes")
    parser.add_argument(
        "--ramp",
        type=float,
        default=None,
        help="seconds over which the runs start, evenly (default: one model delay, so every "
        "run is going on at once after it; 0: all in the same instant)",
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.store, args.workspace, args.steps, args.delay)
        return
    ramp = args.delay if args.ramp is None else args.ramp

    with tempfile.TemporaryDirectory(prefix="reins-bench-server-", dir="/dev/shm") as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("".join(f"note {k}\n" for k in range(50)))
        port_file = root / "port"
        argv = [
            sys.executable,
            __file__,
            "--serve",
            str(port_file),
            "--store",
            str(root / "store"),
            "--workspace",
            str(workspace),
            "--steps",
            str(args.steps),
            "--delay",
            str(args.delay),
        ]
        server = subprocess.Popen(argv)
        try:
            while not port_file.exists():
                if server.poll() is not None:
                    sys.exit("the server did not start")
                time.sleep(0.05)
            time.sleep(0.2)
            url = f"http://127.0.0.1:{port_file.read_text()}"
            served = asyncio.run(load(url, args.runs, ramp, server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)
        local = asyncio.run(
            in_process(args.runs, ramp, args.steps, args.delay, root / "local-store", workspace)
        )

    rows = [
        ("over HTTP (SSE)", served),
        ("in process", local),
    ]
    print(
        f"\n{args.runs} runs at once (started over {ramp:.1f} s), {args.steps} steps each, "
        f"model delay {args.delay:.2f} s, {os.cpu_count()} cores, store on /dev/shm\n"
    )
    print("| where | events | events/s | p50 ms | p99 ms | lost | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, row in rows:
        print(
            f"| {name} | {row['events']} | {row['per_s']:.0f} | {_ms(row['arrivals'], 50):.1f} "
            f"| {_ms(row['arrivals'], 99):.1f} | {row.get('lost', '-')} | {row['wall']:.1f} |"
        )
    ratio = _ms(served["arrivals"], 99) / max(_ms(local["arrivals"], 99), 1e-6)
    print(
        f"\nserver p99 / in-process p99: {ratio:.1f}x; server memory per open session: "
        f"{served['memory_kb_per_run']:.0f} KB"
    )
    goal = _ms(served["arrivals"], 99) <= 50 and served["lost"] == 0
    print(f"goal (p99 <= 50 ms, no event lost): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
