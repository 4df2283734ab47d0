"""Approvals from the command line: the terminal prompt, headless denial, --yes, a pause."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from .test_cli import REINS, _env, reins, script
from .test_sandbox import needs_bwrap

TOUCH = {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]}
TOUCH_AGAIN = {
    "tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt again.txt"}}]
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def run_in_terminal(project: Path, args: list[str], answers: list[bytes]) -> tuple[int, str]:
    """`reins ARGS` on a pseudo-terminal; each answer is typed when a prompt shows."""
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [*REINS, *args], cwd=project, stdin=follower, stdout=follower, stderr=follower, env=_env()
    )
    os.close(follower)
    seen = b""
    prompts = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if seen.count(b"Allow?") > prompts:
                if prompts == len(answers):  # asked once more than the test expects
                    child.kill()
                    break
                os.write(leader, answers[prompts])
                prompts += 1
        elif child.poll() is not None:
            break
    os.close(leader)
    return child.wait(timeout=10), seen.decode(errors="replace")


def test_the_terminal_asks_and_yes_runs_the_exact_command(project: Path) -> None:
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(project, ["run", "go", "-m", model, "-w", "ws"], [b"y\n"])
    assert code == 0, screen
    assert "touch made.txt" in screen
    assert "default: run_command asks" in screen
    assert screen.count("Allow?") == 1
    assert (project / "ws" / "made.txt").exists()


def test_always_is_not_asked_again_and_no_is_a_denial(project: Path) -> None:
    model = script(project / "s.json", [TOUCH, TOUCH_AGAIN, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(project, ["run", "go", "-m", model, "-w", "ws"], [b"a\n"])
    assert code == 0, screen
    assert screen.count("Allow?") == 1
    assert (project / "ws" / "again.txt").exists()

    (project / "ws" / "made.txt").unlink()
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [b"maybe\n", b"n\n", b"no\n"]
    )
    assert code == 0, screen
    assert screen.count("Allow?") == 3  # an unknown answer is asked again; a no is not "always"
    assert "User denied 'run_command'" in screen
    assert not (project / "ws" / "made.txt").exists()


def test_with_no_terminal_an_ask_is_denied_and_yes_approves(project: Path) -> None:
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "User denied 'run_command'" in done.stdout
    assert "denied run_command (by headless" in done.stdout
    assert not (project / "ws" / "made.txt").exists()

    done = reins("run", "go", "-m", model, "-w", "ws", "--yes", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "allowed run_command (by auto" in done.stdout
    assert (project / "ws" / "made.txt").exists()


def test_a_paused_run_is_answered_by_resume(project: Path) -> None:
    (project / "reins.toml").write_text('approval = "pause"\n')
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 10, done.stderr
    assert "stopped: waiting" in done.stdout
    assert "--approve" in done.stdout
    assert not (project / "ws" / "made.txt").exists()
    assert "waiting" in reins("sessions", cwd=project).stdout

    done = reins("resume", "last", "--approve", "all", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "allowed run_command (by user" in done.stdout
    assert (project / "ws" / "made.txt").exists()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('approval = "never-ask"\n', "a project file may only make approvals stricter"),
        ('[permissions]\nwrite_file = "maybe"\n', "permissions.write_file: Input should be"),
        ('[permissions.commands]\n"git \'push" = "ask"\n', "does not parse"),
    ],
)
def test_bad_permission_config_is_one_clear_line(project: Path, toml: str, message: str) -> None:
    (project / "reins.toml").write_text(toml)
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@needs_bwrap
def test_resume_keeps_the_sandbox_the_run_had(project: Path) -> None:
    (project / "reins.toml").write_text('approval = "pause"\n')
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", "--sandbox", "read-only", cwd=project)
    assert done.returncode == 10, done.stderr
    done = reins("resume", "last", "--approve", "all", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Read-only file system" in done.stdout
    assert not (project / "ws" / "made.txt").exists()
