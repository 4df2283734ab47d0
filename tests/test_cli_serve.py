"""`reins serve` as a user starts it: a process on a free port, its token made once and kept
in the store (mode 600), a run started and streamed over HTTP, a clean exit on SIGINT."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import httpx

from .test_cli import HELLO, REINS, _spawned, script

STARTED = re.compile(r"reins serve: (http://\S+)")
TOKEN = re.compile(r"token \(shown this once; kept in (\S+)\): (\S+)")


def _started(server: subprocess.Popen[str], then: int = 1) -> tuple[str, str]:
    """The URL the server says it serves at, and what it said up to `then` lines after."""
    assert server.stderr is not None
    said = ""
    for line in server.stderr:
        said += line
        if STARTED.search(line):
            break
    for _ in range(then):
        said += server.stderr.readline()
    match = STARTED.search(said)
    assert match is not None, said
    return match.group(1), said


def _server(project: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`reins serve ARGS -w .` in `project`, with `env`, its output piped."""
    return subprocess.Popen(
        [*REINS, *args, "-w", "."],
        cwd=project,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _stop(server: subprocess.Popen[str]) -> tuple[int, str]:
    """Interrupt the server as Ctrl-C does: its exit code and the rest of what it said."""
    server.send_signal(signal.SIGINT)
    try:
        _, rest = server.communicate(timeout=30)
    finally:
        server.kill()
    return server.returncode, rest


def test_reins_serve_runs_a_goal_over_http_with_its_token(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    store = tmp_path / "store"
    model = script(tmp_path / "hello.json", HELLO)
    args = ("serve", "--port", "0", "--store", str(store), "--model", model, "-w", ".", "-y")
    server = _spawned(project, *args)
    try:
        url, said = _started(server, then=2)
        made = TOKEN.search(said)
        assert made is not None, said
        token = made.group(2)
        kept = Path(made.group(1))
        assert f"the page, signed in: {url}/#token={token}" in said
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            page = client.get("/", headers={"Authorization": ""})
            refused = client.post("/api/runs", json={"goal": "x"}, headers={"Authorization": "x"})
            started = client.post("/api/runs", json={"goal": "write hello.txt"})
            run_id = started.json()["run_id"]
            with client.stream("GET", f"/api/runs/{run_id}/events") as response:
                kinds = [
                    json.loads(line[6:])["kind"]
                    for line in response.iter_lines()
                    if line.startswith("data: ")
                ]
            view = client.get(f"/api/runs/{run_id}").json()
    finally:
        code, rest = _stop(server)
    assert code == 130  # as an interrupted `reins run`: the runs going on end cancelled
    assert "Traceback" not in rest
    assert page.status_code == 200
    assert "<title>reins</title>" in page.text
    assert refused.status_code == 401
    assert started.status_code == 201
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    assert view["status"] == "finished"
    assert (project / "hello.txt").read_text() == "hi\n"
    assert kept == store / "server.token"
    assert kept.read_text().strip() == token
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    again = _spawned(project, *args)
    try:
        _, said_again = _started(again)
    finally:
        _stop(again)
    assert token not in said_again  # shown the once it was made
    assert f"token: in {kept}" in said_again


def test_reins_serve_takes_the_token_from_the_environment_and_its_port_from_the_config(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    model = script(tmp_path / "hello.json", HELLO)
    config = tmp_path / "config.toml"
    config.write_text("[server]\nport = 0\n")  # where it listens: the config's, no flag
    env = {
        **os.environ,
        "REINS_SERVER_TOKEN": "from-env-token",
        "COLUMNS": "200",
        "REINS_CONFIG": str(config),
    }
    args = ["serve", "--store", str(tmp_path / "store"), "--model", model]
    server = _server(project, args, env)
    try:
        url, said = _started(server, then=0)
        with httpx.Client(base_url=url, timeout=30) as client:
            ok = client.get("/api/sessions", headers={"Authorization": "Bearer from-env-token"})
    finally:
        _stop(server)
    assert ok.status_code == 200
    assert "from-env-token" not in said
    assert not (tmp_path / "store" / "server.token").exists()


SLEEP_THEN_TOUCH = [
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}, "id": "c1"}]},
    {
        "tool_calls": [
            {"name": "run_command", "arguments": {"command": "touch approved.txt"}, "id": "c2"}
        ]
    },
    "FINAL_ANSWER: done",
]


def _until(client: httpx.Client, run_id: str, status: str) -> dict[str, object]:
    view: dict[str, object] = {}
    for _ in range(600):
        view = client.get(f"/api/runs/{run_id}").json()
        if view["status"] == status:
            return view
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never {status}: {view}")


def _events(client: httpx.Client, run_id: str, after: int = 0) -> list[tuple[int, str]]:
    """The run's logged events (id, kind) after `after`, read until the stream ends."""
    seen: list[tuple[int, str]] = []
    with client.stream("GET", f"/api/runs/{run_id}/events", params={"after": after}) as response:
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line:
                name, _, value = line.partition(": ")
                block[name] = value
                continue
            if "id" in block:  # a logged event (a text delta has no id)
                seen.append((int(block["id"]), json.loads(block["data"])["kind"]))
            block = {}
    return seen


def test_a_killed_server_leaves_runs_to_resume_and_approvals_to_answer(tmp_path: Path) -> None:
    """`kill -9` mid-run: after a restart the run is interrupted and resumes from the API; a
    run waiting for approval when the server dies still waits after the restart, and the
    approval given then lets it finish; its events read once, in order, with none lost."""
    project = tmp_path / "project"
    project.mkdir()
    model = script(tmp_path / "slow.json", SLEEP_THEN_TOUCH)
    env = {**os.environ, "REINS_SERVER_TOKEN": "tok", "COLUMNS": "200"}
    args = ["serve", "--port", "0", "--store", str(tmp_path / "store"), "--model", model]

    def start() -> tuple[subprocess.Popen[str], httpx.Client]:
        server = _server(project, args, env)
        url, _ = _started(server, then=0)
        return server, httpx.Client(
            base_url=url, headers={"Authorization": "Bearer tok"}, timeout=30
        )

    server, client = start()
    try:
        run_id = client.post("/api/runs", json={"goal": "sleep, then touch"}).json()["run_id"]
        first_wait = _until(client, run_id, "waiting")
        client.post(f"/api/runs/{run_id}/approvals/c1", json={"approve": True})
        _until(client, run_id, "running")
        time.sleep(1)  # `sleep 30` runs
    finally:
        server.kill()  # SIGKILL: nothing of the server's own runs after this
        server.communicate()
        client.close()

    server, client = start()
    try:
        interrupted = client.get(f"/api/runs/{run_id}").json()
        resumed = client.post(f"/api/runs/{run_id}/resume", json={})
        second_wait = _until(client, run_id, "waiting")
    finally:
        server.kill()
        server.communicate()
        client.close()

    server, client = start()
    try:
        still = client.get(f"/api/runs/{run_id}").json()
        approved = client.post(f"/api/runs/{run_id}/approvals/c2", json={"approve": True})
        finished = _until(client, run_id, "finished")
        events = _events(client, run_id)
        tail = _events(client, run_id, after=events[-3][0])
    finally:
        _stop(server)
        client.close()
    assert first_wait["awaiting"] == ["c1"]
    assert interrupted["status"] == "interrupted"
    assert resumed.status_code == 202
    assert second_wait["awaiting"] == ["c2"]
    assert still["status"] == "waiting"
    assert still["awaiting"] == ["c2"]
    assert approved.status_code == 202
    assert finished["stop_reason"] == "end_turn"
    assert finished["answer"] == "done"
    assert (project / "approved.txt").exists()
    assert [i for i, _ in events] == list(range(1, len(events) + 1))
    kinds = [k for _, k in events]
    assert kinds.count("run_resumed") == 3  # the approval of c1, the resume, the approval of c2
    assert kinds.count("run_started") == 1
    assert tail == events[-2:]


def test_reins_run_and_sessions_talk_to_a_server(tmp_path: Path) -> None:
    """`reins run --server` shows a run of the server as a local one, ends `waiting` (exit 10)
    where nobody at a terminal can answer, and `reins sessions --server` lists the runs."""
    project = tmp_path / "project"
    project.mkdir()
    touch = {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch t.txt"}}]}
    model = script(tmp_path / "hello.json", [*HELLO[:2], touch, "FINAL_ANSWER: touched"])
    env = {**os.environ, "REINS_SERVER_TOKEN": "tok", "COLUMNS": "200"}
    args = ["serve", "--port", "0", "--store", str(tmp_path / "store"), "--model", model]
    server = _server(project, args, env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def reins(*argv: str, token: str = "tok") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*REINS, *argv],
            cwd=elsewhere,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env={**env, "REINS_SERVER_TOKEN": token},
            timeout=60,
        )

    try:
        url, _ = _started(server, then=0)
        ran = reins("run", "--server", url, "write hello.txt")
        listed = reins("sessions", "--server", url, "--json")
        refused = reins("run", "--server", url, "write", token="")
        wrong = reins("sessions", "--server", url, token="nope")
    finally:
        _stop(server)
    assert ran.returncode == 10, ran.stderr
    assert "hello.txt" in ran.stdout
    assert "the run waits on the server" in ran.stderr
    assert (project / "hello.txt").read_text() == "hi\n"
    assert not (elsewhere / "hello.txt").exists()
    rows = json.loads(listed.stdout)
    assert [(r["goal"], r["last_status"]) for r in rows] == [("write hello.txt", "waiting")]
    assert refused.returncode == 2
    assert "set REINS_SERVER_TOKEN" in refused.stderr
    assert wrong.returncode == 2
    assert "refused the token" in wrong.stderr
    assert "Traceback" not in ran.stderr + refused.stderr + wrong.stderr
