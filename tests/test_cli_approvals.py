"""Approvals from the command line: the terminal prompt, headless denial, --yes, a pause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .terminal import run_in_terminal
from .test_cli import reins, script
from .test_sandbox import needs_bwrap

TOUCH = {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]}
TOUCH_AGAIN = {
    "tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt again.txt"}}]
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def test_the_terminal_asks_and_yes_runs_the_exact_command(project: Path) -> None:
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [b"y\n"], prompt=b"Allow?"
    )
    assert code == 0, screen
    assert "touch made.txt" in screen
    assert "default: run_command asks" in screen
    assert screen.count("Allow?") == 1
    assert screen.count("asks for approval") == 1  # said by the prompt, not again before it
    assert (project / "ws" / "made.txt").exists()


def test_always_is_not_asked_again_and_no_is_a_denial(project: Path) -> None:
    model = script(project / "s.json", [TOUCH, TOUCH_AGAIN, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [b"a\n"], prompt=b"Allow?"
    )
    assert code == 0, screen
    assert screen.count("Allow?") == 1
    assert (project / "ws" / "again.txt").exists()

    (project / "ws" / "made.txt").unlink()
    code, screen = run_in_terminal(
        project,
        ["run", "go", "-m", model, "-w", "ws"],
        [b"maybe\n", b"n\n", b"no\n"],
        prompt=b"Allow?",
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
    assert "? run_command asks for approval (default: run_command asks)" in done.stdout
    assert "stopped: waiting" in done.stdout
    assert "--approve" in done.stdout
    assert not (project / "ws" / "made.txt").exists()
    assert "waiting" in reins("sessions", cwd=project).stdout

    done = reins("resume", "last", "--approve", "all", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "allowed run_command (by user" in done.stdout
    assert (project / "ws" / "made.txt").exists()
    again = reins("resume", "last", "--approve", "all", cwd=project)
    assert again.returncode == 2
    assert "waits on no approval; `all` has nothing to answer" in again.stderr


def test_approve_and_deny_never_both_answer_a_call(project: Path) -> None:
    (project / "reins.toml").write_text('approval = "pause"\n')
    both = {"tool_calls": [TOUCH["tool_calls"][0], TOUCH_AGAIN["tool_calls"][0]]}
    model = script(project / "s.json", [both, "FINAL_ANSWER: done"])
    assert reins("run", "go", "-m", model, "-w", "ws", cwd=project).returncode == 10
    for flags in (
        ["--deny", "call_0_0", "--approve", "call_0_0"],
        ["--deny", "all", "--approve", "all"],
        ["--approve", ""],
    ):
        done = reins("resume", "last", *flags, cwd=project)
        assert done.returncode == 2, flags
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (project / "ws" / "made.txt").exists()
    # `all` takes the calls the other side does not name.
    done = reins("resume", "last", "--deny", "call_0_0", "--approve", "all", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "denied run_command" in done.stdout  # touch made.txt
    assert "allowed run_command" in done.stdout  # touch made.txt again.txt
    assert (project / "ws" / "again.txt").exists()


def test_a_run_its_session_went_on_from_cannot_be_resumed(project: Path) -> None:
    (project / "reins.toml").write_text('approval = "pause"\n')
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", "--json", cwd=project)
    assert done.returncode == 10
    first = json.loads(done.stdout.splitlines()[0])["run_id"]
    later = script(project / "later.json", ["(the first turn)", "FINAL_ANSWER: later"])
    done = reins("run", "next", "-m", later, "-w", "ws", "--session", "last", cwd=project)
    assert done.returncode == 0, done.stderr
    done = reins("resume", first, "--approve", "all", cwd=project)
    assert done.returncode == 2
    assert "its session went on with a later turn" in done.stderr
    assert not (project / "ws" / "made.txt").exists()


def test_a_paused_run_resumed_in_a_terminal_asks(project: Path) -> None:
    (project / "reins.toml").write_text('approval = "pause"\n')
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [], prompt=b"Allow?"
    )
    assert code == 10, screen  # the run itself pauses, as configured
    run = screen.split("run ", 1)[1].split()[0]
    assert (
        f"answer with `reins resume {run} --approve CALL` (or `all`), or `--deny CALL`; "
        f"in a terminal, `reins resume {run}` asks" in screen.replace("\r\n", "")
    )
    code, screen = run_in_terminal(
        project, ["resume", "last"], [b"y\n"], prompt=b"Allow?", think=0.5
    )
    assert code == 0, screen
    assert screen.count("Allow?") == 1
    assert (project / "ws" / "made.txt").exists()
    asking = screen[screen.index("asks for approval") : screen.index("allowed run_command")]
    assert "starting" not in asking  # the spinner stopped for the question: not drawn over it


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


@needs_bwrap
def test_a_line_typed_while_no_prompt_waits_steers_the_run(project: Path) -> None:
    # One reader of the terminal: "y" answers the approval prompt; the next line, typed while
    # the approved command runs, steers the run; the second call's prompt is answered too.
    slow = {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 1"}}]}
    model = script(project / "s.json", [slow, TOUCH, "FINAL_ANSWER: done"])
    code, screen = run_in_terminal(
        project,
        ["run", "go", "-m", model, "-w", "ws"],
        [b"y\nuse the other file\n", b"y\n"],
        prompt=b"Allow?",
    )
    assert code == 0, screen
    assert "» steered: use the other file" in screen
    assert screen.count("Allow?") == 2
    assert (project / "ws" / "made.txt").exists()
    steered, second = screen.index("steered: use the other"), screen.rindex("Allow?")
    assert steered < second  # told before the next round
