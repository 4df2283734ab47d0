"""What the person at the terminal (or a pipe) gets: streamed text exactly as sent, --version,
--session last, --tools listing the built-ins, `--json | head` ending quietly as cancelled, and
run_sync in a running loop saying what to do."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from reins import Agent, StopReason, TextDelta, ThinkingDelta, UsageError
from reins.cli._render import EventRenderer
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .test_cli import REINS, _env, only_run_id, reins, script


def test_streamed_chunks_are_shown_as_sent() -> None:
    screen = io.StringIO()
    render = EventRenderer(Console(file=screen, width=100, highlight=False, emoji=False))
    for text in ["C:\\", "dir [bold]x[/] :smile:"]:
        render(TextDelta(session_id="s", run_id="r", seq=1, step=1, text=text))
    render(ThinkingDelta(session_id="s", run_id="r", seq=1, step=1, text=" [red]y\\"))
    assert screen.getvalue() == "C:\\dir [bold]x[/] :smile: [red]y\\"


def test_version_and_the_tools_help(tmp_path: Path) -> None:
    done = reins("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("reins 0.")
    shown = " ".join(reins("run", "--help", cwd=tmp_path).stdout.split())
    for tool in BUILTIN_TOOLS:
        if tool.name != "final_answer":
            assert tool.name in shown


def test_session_takes_last_and_a_prefix(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", [f"FINAL_ANSWER: {n}" for n in range(3)])
    assert reins("run", "first", "-m", model, "-w", "ws", cwd=tmp_path).returncode == 0
    run_id = only_run_id(tmp_path)
    for given in ("last", None):
        session = given
        if session is None:
            listed = reins("sessions", cwd=tmp_path).stdout
            session = next(line.split()[0] for line in listed.splitlines() if run_id in line)[:8]
        done = reins("run", "again", "-m", model, "-w", "ws", "-s", session, "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        started = json.loads(done.stdout.splitlines()[0])
        assert len(started["messages"]) > 2  # the first turn's history came with it
    bad = reins("run", "x", "-m", model, "-w", "ws", "-s", "zzz", cwd=tmp_path)
    assert bad.returncode == 2
    assert "no session matches 'zzz'" in bad.stderr


def test_json_into_head_ends_the_run_quietly_as_cancelled(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    steps = [
        {"text": "a" * 200, "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]}
    ] * 30 + ["FINAL_ANSWER: done"]
    model = script(tmp_path / "s.json", steps)
    done = subprocess.run(
        f"{' '.join(REINS)} run go -m {model} -w ws --max-steps 40 --json | head -n 2",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 2
    shown = reins("show", "last", cwd=tmp_path)
    assert "stopped: cancelled" in shown.stdout


async def test_run_sync_in_a_running_loop_says_what_to_do() -> None:
    agent = Agent(model=ScriptedModel(["done"]), tools=[])
    with pytest.raises(UsageError, match=r"use `await agent.run\(goal\)`"):
        agent.run_sync("go")
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN
