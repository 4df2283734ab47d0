"""`reins serve` as a user starts it: a process on a free port, its token made once and kept
in the store (mode 600), a run started and streamed over HTTP, a clean exit on SIGINT."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
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
        url, said = _started(server)
        made = TOKEN.search(said)
        assert made is not None, said
        token = made.group(2)
        kept = Path(made.group(1))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
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


def test_reins_serve_takes_the_token_from_the_environment(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    model = script(tmp_path / "hello.json", HELLO)
    env = {**os.environ, "REINS_SERVER_TOKEN": "from-env-token", "COLUMNS": "200"}
    args = ["serve", "--port", "0", "--store", str(tmp_path / "store"), "--model", model]
    server = subprocess.Popen(
        [*REINS, *args, "-w", "."],
        cwd=project,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url, said = _started(server, then=0)
        with httpx.Client(base_url=url, timeout=30) as client:
            ok = client.get("/api/sessions", headers={"Authorization": "Bearer from-env-token"})
    finally:
        _stop(server)
    assert ok.status_code == 200
    assert "from-env-token" not in said
    assert not (tmp_path / "store" / "server.token").exists()
