"""reins at scale (issue 33): 1,000 sessions at once against one server and two, on SQLite and
PostgreSQL; an eval of 200 tasks on a Ray cluster of one worker node, then two.

Sessions over HTTP. Each server process (this file with `--serve`) runs `server.py`'s scripted
model: it answers after `--delay` seconds with a read_file call (a line further each step: the
same call again is stopped as going in circles), for `--steps` steps, then a final answer. The
load process starts `--sessions` runs over HTTP, spread evenly over `--ramp` seconds, one client
and one SSE stream per run (`server.py`'s `_watch`). Three configurations, each on fresh state:
one server on SQLite (on /dev/shm); one on a fresh PostgreSQL database; two on one fresh
PostgreSQL database, the sessions dealt round-robin. A client streams from the server it started
its run on; with `--cross`, every other client streams from the other server, which reads the
run's rows from the store (polling it) as a watcher there does. PostgreSQL is `tests/postgres.py`'s:
fsync, synchronous_commit and full_page_writes off, so a commit is no disk flush.

Reported per configuration: events a second (the logged events the streams carried, over the
wall time from the first start to the last stream's end); the time from an event's `ts` to its
arrival at its client, p50 / p99 of the "live" ones (appended once the stream was open, as
server.py counts; text deltas included) and p99 of all (the wait for the stream to open
included); the append latency inside the servers (each call of the log's batch write,
`PostgresLog.commit` / `SQLiteLog._commit`, that had events to write, from the call to its
return: on PostgreSQL the wait for the commit in flight included, as a run waits); memory per
session (each server's peak RSS less its idle RSS, summed, over the sessions); and the CPU
seconds each party used (servers, PostgreSQL, this load client) with the share of the machine's
cores they took: on a small machine the table shows what bounds the rate. Then the store is read
back: every run's seqs 1..N, and its stream's ids exactly those (a missing id is lost, a
repeated one doubled; a stream must end in run_finished).

The defaults (`--delay 0.05`, `--steps 8`) make the servers, not the model, the bound: 1,000
sessions taking a step every 50 ms offer ~80,000 events a second, far past what a server appends,
so events a second measures the servers (and two can beat one if they have cores to run on);
with server.py's 1 s delay the model would bound one server and two at the same rate. The
latencies are then those of saturated servers: mostly queueing.

Ray: a suite of `--tasks` tasks, each a `sleep --task-sleep` setup, then a scripted run that
writes a file and reads it back, run by `reins eval --ray` on a cluster on this machine (a head
node with no CPU, plus one worker node of one CPU, then two): wall time, attempts a second, and
that every attempt was counted once and recorded once (the `--json` results, the eval's record,
the store's runs).

Goals: no event lost or doubled in any run; two servers >= 1.6x one on events a second.

    python benchmarks/scale.py [--sessions 1000] [--steps 8] [--delay 0.05] [--ramp 1.0]
        [--cross] [--tasks 200] [--task-sleep 0.5] [--only http|ray]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from server import TOKEN, _ms, _rss_kb, serve_log

REPO = Path(__file__).resolve().parent.parent
RAY = Path(sys.executable).parent / "ray"
TICK = os.sysconf("SC_CLK_TCK")


def _tests() -> None:
    """Put the repository on the path: `tests.postgres` and `tests.test_eval_ray` help here."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def _more_files() -> None:
    """1,000 SSE connections (and as many journals) need more descriptors than a default 1,024."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# -- the server process


def _timed_log(store: str, durations: list[float]) -> Any:
    """The store's log, each batch write that has events to write timed into `durations`."""
    from reins.store import PostgresLog, SQLiteLog, is_postgres

    if is_postgres(store):

        class TimedPostgres(PostgresLog):
            async def commit(self) -> None:
                if not self._batch.events:  # nothing of its own: not an append's wait
                    return await super().commit()
                begun = time.perf_counter()
                try:
                    await super().commit()
                finally:
                    durations.append(time.perf_counter() - begun)

        return TimedPostgres(store)

    class TimedSQLite(SQLiteLog):
        def _commit(self) -> None:
            if not self._batch:
                return
            begun = time.perf_counter()
            try:
                super()._commit()
            finally:
                durations.append(time.perf_counter() - begun)

    return TimedSQLite(Path(store))


def serve(port_file: Path, store: str, workspace: Path, args: argparse.Namespace) -> None:
    """A server on `store`; its append durations written to `args.timings` once it stops."""
    _more_files()
    # uvicorn raises the SIGTERM it caught again once it has stopped, with the handler it
    # found: a no-op one lets the log close and the timings be written.
    signal.signal(signal.SIGTERM, lambda *_: None)
    durations: list[float] = []
    try:
        asyncio.run(
            serve_log(
                port_file,
                lambda: _timed_log(store, durations),
                workspace,
                args.steps,
                args.delay,
            )
        )
    finally:
        args.timings.write_text(json.dumps(durations))


# -- CPU seconds, from /proc


def _cpu_s(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of `pid` (with `children`: of its reaped children too)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def _postmaster(port: int) -> int | None:
    """The PostgreSQL server listening on `port` (its command line names the port)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if args[0].endswith(b"/postgres") and f"-p {port}".encode() in b" ".join(args):
                return int(entry.name)
    return None


def _postgres_cpu_s(postmaster: int | None) -> float:
    if postmaster is None:
        return 0.0
    from tests.test_eval_ray import _tree

    return _cpu_s(postmaster, children=True) + sum(_cpu_s(p) for p in _tree(postmaster)[1:])


def _servers_cpu_s(servers: list[Any]) -> float:
    return sum(_cpu_s(server.pid) for server in servers)


def _own_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


# -- the load


async def _sessions(
    urls: list[str], pids: list[int], args: argparse.Namespace, cross: bool
) -> dict[str, Any]:
    """`args.sessions` clients, dealt over the servers at `urls` round-robin; the servers'
    RSS (`pids`) sampled as they go."""
    idle = {pid: _rss_kb(pid) for pid in pids}
    peak = dict(idle)
    arrivals: list[float] = []
    every: list[float] = []
    spans: list[tuple[float, float]] = []
    sampling = True

    async def sample() -> None:
        while sampling:
            for pid in pids:
                peak[pid] = max(peak[pid], _rss_kb(pid))
            await asyncio.sleep(0.05)

    async def one(k: int) -> tuple[str, list[int], bool]:
        await asyncio.sleep(k * args.ramp / args.sessions)
        url = urls[k % len(urls)]
        watch = urls[(k + 1) % len(urls)] if cross and k % 2 else None
        begun = time.time()
        try:
            return await _watch_lean(url, f"read notes {k}", arrivals, every, watch)
        finally:
            spans.append((begun, time.time()))

    sampler = asyncio.create_task(sample())
    begun = time.perf_counter()
    streams = await asyncio.gather(*(one(k) for k in range(args.sessions)), return_exceptions=True)
    wall = time.perf_counter() - begun
    sampling = False
    await sampler
    return {
        "streams": streams,
        "arrivals": arrivals,
        "every": every,
        "wall": wall,
        "peak_sessions": _peak(spans),
        "memory_kb": sum(peak[pid] - idle[pid] for pid in pids) / args.sessions,
    }


async def _watch_lean(
    url: str, goal: str, arrivals: list[float], every: list[float], watch: str | None
) -> tuple[str, list[int], bool]:
    """What server.py's `_watch` does (start a run, follow its stream, time each event from
    its append to its arrival), on bare asyncio connections: httpx's machinery per line cost
    the load client a third of this machine's CPU, taken from the servers it measures."""
    reader, writer = await _connect(url)
    try:
        body = json.dumps({"goal": goal}).encode()
        writer.write(_head("POST", "/api/runs", url, len(body)) + body)
        length = int((await _response(reader))["content-length"])
        run_id = str(json.loads(await reader.readexactly(length))["run_id"])
        if watch is not None and watch != url:
            writer.close()
            reader, writer = await _connect(watch)
        writer.write(_head("GET", f"/api/runs/{run_id}/events", watch or url))
        await _response(reader)
        opened = time.time()
        ids: list[int] = []
        last_kind = ""
        pending = b""
        while size := int(await reader.readline(), 16):  # chunked, to the last (0) chunk
            pending += (await reader.readexactly(size + 2))[:-2]
            *blocks, pending = pending.split(b"\n\n")
            now = time.time()
            for block in blocks:
                fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if line)
                if b"data" not in fields:
                    continue  # a comment: the stream is alive
                event = json.loads(fields[b"data"])
                appended = datetime.fromisoformat(event["ts"]).timestamp()
                if appended >= opened:
                    arrivals.append(now - appended)
                every.append(now - appended)
                if b"id" in fields:
                    ids.append(int(fields[b"id"]))
                    last_kind = event["kind"]
        return run_id, ids, last_kind == "run_finished"
    finally:
        writer.close()


async def _connect(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return await asyncio.open_connection(host, int(port), limit=1 << 22)


def _head(method: str, path: str, url: str, length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {url.removeprefix('http://')}"]
    lines.append(f"Authorization: Bearer {TOKEN}")
    if length is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _response(reader: asyncio.StreamReader) -> dict[str, str]:
    """The response's headers (lower-case names); an error status raises."""
    status = (await reader.readline()).decode()
    if not status.split()[1].startswith("2"):
        raise RuntimeError(f"the server answered {status.strip()}")
    headers: dict[str, str] = {}
    while line := (await reader.readline()).decode().strip():
        name, _, value = line.partition(":")
        headers[name.lower()] = value.strip()
    return headers


def _peak(spans: list[tuple[float, float]]) -> int:
    """The most sessions open at one instant."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


# -- one configuration


def _start(store: str, workspace: Path, folder: Path, args: argparse.Namespace) -> Any:
    port_file = folder / "port"
    argv = [sys.executable, __file__, "--serve", str(port_file), "--store", store]
    argv += ["--workspace", str(workspace), "--timings", str(folder / "timings.json")]
    argv += ["--steps", str(args.steps), "--delay", str(args.delay)]
    return subprocess.Popen(argv)


def _port(server: Any, folder: Path) -> str:
    port_file = folder / "port"
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text():
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("a server did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port_file.read_text()}"


def _stop(servers: list[Any]) -> None:
    for server in servers:
        if server.poll() is None:
            server.terminate()
    for server in servers:
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _configuration(
    store: str, servers: int, root: Path, args: argparse.Namespace, postmaster: int | None = None
) -> dict[str, Any]:
    """The sessions against `servers` server processes on `store`, then the store read back."""
    workspace = root / "ws"
    folders = [Path(tempfile.mkdtemp(prefix="server-", dir=root)) for _ in range(servers)]
    started: list[Any] = []
    try:
        started += [_start(store, workspace, folder, args) for folder in folders]
        urls = [_port(server, folder) for server, folder in zip(started, folders, strict=True)]
        time.sleep(0.2)
        cpu = (_servers_cpu_s(started), _postgres_cpu_s(postmaster), _own_cpu_s())
        row = asyncio.run(_sessions(urls, [s.pid for s in started], args, args.cross))
        row["events"] = sum(len(s[1]) for s in row["streams"] if isinstance(s, tuple))
        row["per_s"] = row["events"] / row["wall"]
        row["cpu"] = {
            "servers": _servers_cpu_s(started) - cpu[0],
            "postgres": _postgres_cpu_s(postmaster) - cpu[1],
            "client": _own_cpu_s() - cpu[2],
        }
    finally:
        _stop(started)
    row["appends"] = [d for f in folders for d in _timings(f / "timings.json")]
    row.update(asyncio.run(_check(store, row["streams"])))
    return row


def _timings(path: Path) -> list[float]:
    return list(json.loads(path.read_text())) if path.exists() else []


async def _check(store: str, streams: list[Any]) -> dict[str, Any]:
    """The store read back: each run's seqs gapless, and its stream's ids exactly those."""
    from reins.store import PostgresLog, SQLiteLog, is_postgres

    log = PostgresLog(store) if is_postgres(store) else SQLiteLog(Path(store))
    tally = dict.fromkeys(("failed", "lost", "doubled", "unended", "gaps", "differ", "stored"), 0)
    errors: list[str] = []
    try:
        tally["runs"] = len(await log.runs())
        for stream in streams:
            if isinstance(stream, BaseException):
                tally["failed"] += 1
                errors.append(f"{type(stream).__name__}: {stream}")
                continue
            run_id, ids, ended = stream
            seqs = [event.seq for event in await log.events(run_id)]
            tally["stored"] += len(seqs)
            tally["gaps"] += seqs != list(range(1, len(seqs) + 1))
            tally["lost"] += len(set(seqs) - set(ids))
            tally["doubled"] += len(ids) - len(set(ids))
            tally["differ"] += sorted(set(ids)) != seqs
            tally["unended"] += not ended
    finally:
        await log.close()
    return {**tally, "errors": errors[:3]}


# -- the three configurations


def _http(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    _tests()
    from tests.postgres import INSTALL, postgres_bindir

    rows: list[tuple[str, dict[str, Any]]] = []
    print(HEAD, flush=True)
    with tempfile.TemporaryDirectory(prefix="reins-bench-scale-", dir="/dev/shm") as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "ws" / "notes.txt").write_text("".join(f"note {k}\n" for k in range(50)))
        rows.append(("1 server, SQLite", _configuration(str(root / "store"), 1, root, args)))
        print(_line(*rows[-1]), flush=True)
        if postgres_bindir() is None:
            print(f"no PostgreSQL configurations: there is no initdb here; {INSTALL}")
        else:
            rows += _on_postgres(root, args)
    return rows


def _on_postgres(root: Path, args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """One server, then two, each on a fresh database of one PostgreSQL server."""
    from tests.postgres import run_postgres

    rows = []
    with run_postgres() as pg:
        postmaster = _postmaster(pg.port)
        for servers in (1, 2):
            with pg.database() as url:
                name = f"{servers} server{'s' * (servers > 1)}, PostgreSQL"
                rows.append((name, _configuration(url, servers, root, args, postmaster)))
                print(_line(*rows[-1]), flush=True)
    return rows


def _line(name: str, row: dict[str, Any]) -> str:
    cpu = row["cpu"]
    return (
        f"| {name} | {row['peak_sessions']} | {row['events']} | {row['per_s']:.0f} "
        f"| {len(row['arrivals'])} | {_ms(row['arrivals'], 50):.0f} "
        f"| {_ms(row['arrivals'], 99):.0f} | {_ms(row['every'], 99):.0f} "
        f"| {_ms(row['appends'], 50):.1f} | {_ms(row['appends'], 99):.1f} "
        f"| {row['memory_kb']:.0f} | {row['lost']} | {row['doubled']} "
        f"| {row['failed'] + row['unended']} | {row['gaps']} | {row['differ']} | {row['runs']} "
        f"| {cpu['servers']:.1f} / {cpu['postgres']:.1f} / {cpu['client']:.1f} "
        f"| {100 * sum(cpu.values()) / (row['wall'] * (os.cpu_count() or 1)):.0f} "
        f"| {row['wall']:.1f} |"
    )


HEAD = (
    "| configuration | peak open | events | events/s | live | live p50 ms | live p99 ms "
    "| all p99 ms | append p50 ms | append p99 ms | KB/session | lost | doubled "
    "| failed/unended | runs with gaps | streams ≠ store | runs stored "
    "| CPU s servers / PG / client | CPU use % | wall s |\n" + "|---" * 20 + "|"
)


def _report_http(rows: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> None:
    print(
        f"\n{args.sessions} sessions (started over {args.ramp:.1f} s), {args.steps} steps each, "
        f"model delay {args.delay:.2f} s, {os.cpu_count()} cores; streams from "
        f"{'the other server for every other session' if args.cross else 'the starting server'}"
        "; PostgreSQL with fsync, synchronous_commit and full_page_writes off\n"
    )
    print(HEAD)
    for name, row in rows:
        print(_line(name, row))
    for name, row in rows:
        for error in row["errors"]:
            print(f"{name}: {error}")
    rates = [row["per_s"] for _, row in rows] + [0.0, 0.0]
    sqlite, one, two = rates[:3]
    print(f"\nPostgreSQL / SQLite, one server, events/s: {one / max(sqlite, 1e-9):.2f}x")
    ratio = two / max(one, 1e-9)
    print(f"two servers / one, PostgreSQL, events/s: {ratio:.2f}x")
    checked = ("lost", "doubled", "failed", "unended", "gaps", "differ")
    whole = all(row[k] == 0 for _, row in rows for k in checked)
    print(f"goal (no event lost or doubled, every stream whole): {'met' if whole else 'NOT met'}")
    print(f"goal (two servers >= 1.6x one on events/s): {'met' if ratio >= 1.6 else 'NOT met'}")


# -- Ray


@contextlib.contextmanager
def _cluster(temp: Path, workers: int) -> Iterator[str]:
    """A head node with no CPU and `workers` worker nodes of one CPU each, on this machine:
    the head's address. Every process of it killed after (marked by its environment)."""
    _tests()
    from tests.test_eval_ray import _free_port, _marked, _tree

    port, mark = _free_port(), f"scale-{os.getpid()}-{workers}"
    env = {**os.environ, "REINS_TEST_RAY": mark, "RAY_USAGE_STATS_ENABLED": "0"}
    env["RAY_AUTH_MODE"] = "disabled"  # else a token left in ~/.ray by another Ray is asked for
    common = [f"--temp-dir={temp}", "--disable-usage-stats"]
    head = [str(RAY), "start", "--head", f"--port={port}", "--include-dashboard=false"]
    nodes = [[*head, "--num-cpus=0", *common]]
    for _ in range(workers):
        nodes.append([str(RAY), "start", f"--address=127.0.0.1:{port}", "--num-cpus=1", *common])
    try:
        for command in nodes:
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)}: {done.stdout}{done.stderr}")
        yield f"127.0.0.1:{port}"
    finally:
        for pid in {each for marked in _marked(mark) for each in _tree(marked)}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _suite(folder: Path, tasks: int, sleep: float) -> Path:
    """`tasks` tasks, each `sleep` seconds of setup, then the tests' scripted run (writes
    hello.txt, reads it back, answers)."""
    _tests()
    from tests.test_cli import HELLO

    (folder / "hello.json").write_text(json.dumps(HELLO))
    text = 'model = "script:hello.json"\nmax_steps = 5\n'
    text += "".join(
        f'\n[[tasks]]\nid = "t{k:04d}"\ngoal = "Create hello.txt"\nsetup = ["sleep {sleep}"]\n'
        'checks = ["test -f hello.txt"]\n'
        for k in range(tasks)
    )
    (folder / "suite.toml").write_text(text)
    return folder / "suite.toml"


def _eval(root: Path, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """The suite on a fresh cluster and a fresh store: wall time, and the counts to check."""
    folder = root / f"workers-{workers}"
    folder.mkdir()
    suite, store, out = (
        _suite(folder, args.tasks, args.task_sleep),
        folder / "store",
        folder / "out",
    )
    command = [sys.executable, "-m", "reins", "eval", str(suite), "--trust-suite"]
    command += ["--store", str(store), "--json", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    env["XDG_DATA_HOME"] = str(folder / "data")
    with _cluster(Path(f"/tmp/reins-scale-ray-{os.getpid()}-{workers}"), workers) as address:
        begun = time.perf_counter()
        done = subprocess.run(
            [*command, "--ray", address], capture_output=True, text=True, env=env, cwd=folder
        )
        wall = time.perf_counter() - begun
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"reins eval --ray failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"wall": wall, **_counted(json.loads(out.read_text()), folder, store, env)}


def _counted(
    result: dict[str, Any], folder: Path, store: Path, env: dict[str, str]
) -> dict[str, Any]:
    """Each attempt counted once (the results), recorded once (the eval's record), and its run
    in the store, finished."""
    attempts = [a for t in result["tasks"] for a in t["attempts"]]
    ran = [a["run_id"] for a in attempts]
    (record,) = folder.rglob(f"evals/{result['eval_id']}.jsonl")
    recorded = [
        json.loads(line)["attempt"]["run_id"] for line in record.read_text().splitlines()[1:]
    ]
    listed = subprocess.run(
        [sys.executable, "-m", "reins", "sessions", "--store", str(store), "--json"],
        capture_output=True, text=True, env=env, cwd=folder, check=True,
    )  # fmt: skip
    runs = {r["run_id"]: r["stop_reason"] for r in json.loads(listed.stdout)}
    return {
        "tasks": len(result["tasks"]),
        "attempts": len(attempts),
        "passed": result["passed"],
        "distinct_runs": len(set(ran)),
        "recorded": len(recorded),
        "recorded_once": sorted(recorded) == sorted(set(ran)),
        "stored_finished": sum(1 for r in ran if runs.get(r) == "end_turn"),
        "workers": len({a["worker"] for a in attempts}),
    }


def _ray(args: argparse.Namespace) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="reins-bench-scale-ray-") as tmp:
        for workers in (1, 2):
            rows.append((workers, _eval(Path(tmp), workers, args)))
            print(f"ray, {workers} worker node(s): {rows[-1][1]}", flush=True)
    return rows


def _report_ray(rows: list[tuple[int, dict[str, Any]]], args: argparse.Namespace) -> None:
    print(
        f"\nreins eval --ray: {args.tasks} tasks (setup `sleep {args.task_sleep}`, then a "
        "scripted run of 3 replies), head node with no CPU, worker nodes of 1 CPU each\n"
    )
    print("| worker nodes | wall s | attempts/s | attempts | distinct runs | recorded "
          "| recorded once | runs stored, finished | passed | worker processes |")  # fmt: skip
    print("|---" * 10 + "|")
    for workers, r in rows:
        print(
            f"| {workers} | {r['wall']:.1f} | {r['attempts'] / r['wall']:.2f} | {r['attempts']} "
            f"| {r['distinct_runs']} | {r['recorded']} | {r['recorded_once']} "
            f"| {r['stored_finished']} | {r['passed']} | {r['workers']} |"
        )
    if len(rows) == 2:
        print(
            f"\ntwo worker nodes / one, wall time: {rows[0][1]['wall'] / rows[1][1]['wall']:.2f}x"
        )
    once = all(
        r["attempts"] == r["distinct_runs"] == r["recorded"] == r["stored_finished"] == args.tasks
        and r["recorded_once"]
        for _, r in rows
    )
    print(f"goal (every attempt counted and recorded once): {'met' if once else 'NOT met'}")


def _interrupted(*_: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds a model reply takes")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds the starts spread over")
    parser.add_argument("--cross", action="store_true", help="stream every other session from "
                        "the other server")  # fmt: skip
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--task-sleep", type=float, default=0.5, help="a task's setup sleep, s")
    parser.add_argument("--only", choices=["http", "ray"])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--timings", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.store, args.workspace, args)
        return
    _more_files()
    signal.signal(signal.SIGTERM, _interrupted)  # as Ctrl-C: the servers and clusters stopped
    if args.only != "ray":
        _report_http(_http(args), args)
    if args.only != "http":
        _report_ray(_ray(args), args)


if __name__ == "__main__":
    main()
