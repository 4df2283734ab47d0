"""`reins eval --ray`: a suite's attempts as Ray tasks on a real two-node cluster the test
starts on this machine, one node killed mid-suite; its attempt is run again elsewhere and every
attempt is counted and recorded once, with the results of a local eval."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_cli import REINS, _env, reins
from .test_eval import FOUR, _how_it_went, suite_at

RAY = Path(sys.executable).parent / "ray"

SLOW = 'model = "script:hello.json"\nmax_steps = 5\n' + "".join(
    f'\n[[tasks]]\nid = "{name}"\ngoal = "Create {made}"\nsetup = ["sleep 1.5"]\n'
    f'checks = ["test -f {made}"]\n'
    for name, made in [("one", "hello.txt"), ("two", "bye.txt"), ("three", "hello.txt")]
)
SLOW += '\n[[tasks]]\nid = "four"\ngoal = "Say it"\nchecks = ["true"]\nanswer = { number = 7 }\n'


def _ray_installed() -> None:
    """The test is skipped without reins[ray] (failed on CI, which installs it)."""
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("ray is not installed; make setup installs reins[ray]")
        pytest.skip("ray is not installed: pip install 'reins[ray]'")


def _reins(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _children() -> dict[int, list[int]]:
    """Each process's children, from /proc."""
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
                kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _args(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    kids, found = _children(), [pid]
    for each in found:
        found += kids.get(each, [])
    return found


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds REINS_TEST_RAY=`mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and f"REINS_TEST_RAY={mark}\0".encode() in (
                (entry / "environ").read_bytes()
            ):
                found.append(int(entry.name))
    return found


def _raylet(node_manager_port: int) -> int | None:
    flag = f"--node_manager_port={node_manager_port}"
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and "raylet" in (args := _args(int(entry.name))) and flag in args:
            return int(entry.name)
    return None


@contextlib.contextmanager
def _cluster(temp: Path) -> Iterator[tuple[str, int]]:
    """A head node and a worker node, one CPU each: the head's address, and the worker's
    node manager port (its raylet's mark). Both stopped after."""
    port, worker_port = _free_port(), _free_port()
    env = {
        **_env(),
        "REINS_TEST_RAY": (mark := f"{temp}-{os.getpid()}"),  # every process it starts
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",  # else a token left in ~/.ray by another Ray is asked for
        # A node that stops answering is dead after 1.5 s, not 30.
        "RAY_health_check_period_ms": "500",
        "RAY_health_check_failure_threshold": "3",
    }
    common = ["--num-cpus=1", f"--temp-dir={temp}", "--disable-usage-stats"]
    head = [str(RAY), "start", "--head", f"--port={port}", "--include-dashboard=false", *common]
    worker = [
        str(RAY),
        "start",
        f"--address=127.0.0.1:{port}",
        f"--node-manager-port={worker_port}",
        *common,
    ]
    try:
        for command in (head, worker):
            started = subprocess.run(command, capture_output=True, text=True, env=env, timeout=90)
            assert started.returncode == 0, started.stdout + started.stderr
        yield f"127.0.0.1:{port}", worker_port
    finally:  # this cluster's processes (marked), and no other Ray's (as `ray stop` would)
        for each in {each for pid in _marked(mark) for each in _tree(pid)}:  # agents: unmarked
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True], ids=["shipped-back", "postgresql"])
def test_an_eval_on_a_ray_cluster_survives_a_dead_node_and_counts_each_attempt_once(
    tmp_path: Path, shared: bool, request: pytest.FixtureRequest
) -> None:
    """The runs shipped back to the driver's store, or written by the nodes to PostgreSQL."""
    _ray_installed()
    suite = suite_at(tmp_path, SLOW)
    folder = tmp_path / "store"
    store = str(request.getfixturevalue("postgres_url")) if shared else str(folder)
    env = {**_env(), "XDG_DATA_HOME": str(tmp_path / "data")}  # with PostgreSQL: the record
    args = [*REINS, "eval", str(suite), "--trust-suite", "--json"]
    here = _reins([*args, "here.json", "--store", str(folder)], tmp_path, env, 60)
    assert here.returncode == 0, here.stderr
    with _cluster(Path(f"/tmp/reins-ray-{os.getpid()}")) as (address, worker_port):
        running = subprocess.Popen(
            [*args, "ray.json", "--store", store, "--ray", address],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        raylet = _raylet(worker_port)
        assert raylet is not None
        deadline = time.monotonic() + 60
        while not (busy := [p for p in _tree(raylet) if "ray::_on_node" in _args(p)]):
            assert time.monotonic() < deadline, "no attempt began on the worker node"
            time.sleep(0.05)
        for pid in _tree(raylet):  # the node dies with the attempt it runs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        out, said = running.communicate(timeout=120)
    assert running.returncode == 0, out + said
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("here.json", "ray.json"))
    assert _how_it_went(two) == _how_it_went(one)
    assert [t["passed"] for t in two["tasks"]] == [True, False, True, False]
    (record,) = tmp_path.rglob(f"evals/{two['eval_id']}.jsonl")
    lines = record.read_text().splitlines()[1:]
    recorded = sorted(json.loads(line)["attempt"]["task"] for line in lines)
    assert recorded == ["four", "one", "three", "two"]  # each attempt once, the killed one too
    assert said.count("#1") == 4
    workers = {a["worker"] for t in two["tasks"] for a in t["attempts"]}
    assert not workers & {None, *busy}  # all ran on the cluster; the killed one elsewhere
    listed = reins("sessions", "--store", store, "--json", cwd=tmp_path)
    runs = {r["run_id"]: r["stop_reason"] for r in json.loads(listed.stdout)}
    ran = {a["run_id"] for t in two["tasks"] for a in t["attempts"]}
    assert ran <= set(runs)
    others = {run: stop for run, stop in runs.items() if run not in ran}
    if shared:  # the killed attempt's run, as far as it went (if it began): unfinished
        assert len(others) <= 1
        assert set(others.values()) <= {None}
    else:  # the local eval's four: the killed attempt's run never came back to be recorded
        assert len(others) == 4


def test_ray_without_the_extra_or_a_cluster_is_one_line(tmp_path: Path) -> None:
    suite = str(suite_at(tmp_path, SLOW))
    store = ("--store", str(tmp_path / "store"))
    without = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['ray'] = None; from reins.cli import main; main()",
            *("eval", suite, *store, "--trust-suite", "--ray"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert (without.returncode, without.stderr) == (
        2,
        "error: --ray runs the attempts on a Ray cluster: pip install 'reins[ray]'\n",
    )
    if importlib.util.find_spec("ray") is None:
        return
    port = _free_port()  # nothing listens there
    nowhere = reins(
        "eval", suite, *store, "--trust-suite", "--ray", f"127.0.0.1:{port}", cwd=tmp_path
    )
    assert nowhere.returncode == 1
    assert nowhere.stderr.startswith(f"error: --ray 127.0.0.1:{port}: no Ray cluster answers")
    assert nowhere.stderr.count("\n") == 1
    jobs = reins("eval", suite, *store, "--trust-suite", "--ray", "-j", "2", cwd=tmp_path)
    assert jobs.returncode == 2
    assert "give no --jobs or --replay with it" in jobs.stderr
    assert not (tmp_path / "store" / "evals").exists()  # nothing begun


@pytest.mark.slow
def test_on_a_local_ray_the_nodes_write_their_runs_to_a_postgresql_store(
    tmp_path: Path, postgres_url: str
) -> None:
    _ray_installed()
    suite = suite_at(tmp_path, FOUR)
    env = {**_env(), "XDG_DATA_HOME": str(tmp_path / "data")}  # the eval's record: there
    args = [*REINS, "eval", str(suite), "--trust-suite", "--json"]
    here = _reins([*args, "here.json", "--store", str(tmp_path / "store")], tmp_path, env, 60)
    assert here.returncode == 0, here.stderr
    # no ADDRESS: a Ray started here for the eval
    shared = _reins([*args, "ray.json", "--store", postgres_url, "--ray"], tmp_path, env, 120)
    assert shared.returncode == 0, shared.stderr
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("here.json", "ray.json"))
    assert _how_it_went(two) == _how_it_went(one)
    (record,) = (tmp_path / "data").rglob(f"evals/{two['eval_id']}.jsonl")
    assert len(record.read_text().splitlines()) == 1 + 4
    listed = reins("sessions", "--store", postgres_url, "--json", cwd=tmp_path)
    runs = {r["run_id"] for r in json.loads(listed.stdout)}
    assert runs == {a["run_id"] for t in two["tasks"] for a in t["attempts"]}


async def test_an_attempt_that_comes_back_twice_is_counted_and_recorded_once() -> None:
    """As when a node thought dead finishes after its task was run again elsewhere."""
    _ray_installed()
    import asyncio

    from reins.core._events import Event, Notice
    from reins.eval import Attempt
    from reins.eval._ray import _shipped
    from reins.store import MemoryLog

    said = Notice(session_id="s1", run_id="r1", seq=1, text="t", source="test")
    home, counted = MemoryLog(), set[tuple[str, int]]()
    seen = []
    for _ in range(2):
        future: asyncio.Future[tuple[Attempt, list[Event]]] = asyncio.Future()
        future.set_result((Attempt("one", 1, True, run_id="r1"), [said]))
        seen.append(await _shipped(future, home, counted))
    assert seen == [Attempt("one", 1, True, run_id="r1"), None]
    assert await home.events("r1") == [said]  # once
