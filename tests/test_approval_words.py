"""One set of words for who answers an approval, in Python, the config and the CLI: `ask`,
`allow`, `deny`, `pause` (issue 28); the config's old `never-ask` still reads, with a notice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .terminal import run_in_terminal
from .test_cli import _env, reins, script
from .test_cli_approvals import TOUCH

# A script run by hand: approval="ask" and no function of its own.
ASKING = """
from reins import Agent, UsageError, resolve_model
from reins.tools import BUILTIN_TOOLS

try:
    agent = Agent(
        model=resolve_model("script:s.json"),
        tools=BUILTIN_TOOLS,
        workspace="ws",
        approval="ask",
    )
except UsageError as exc:
    print("refused:", exc)
else:
    print("answer:", agent.run_sync("touch it").final_answer)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "asking.py").write_text(ASKING)
    script(tmp_path / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    return tmp_path


def test_ask_from_python_prompts_on_the_terminal(project: Path) -> None:
    code, screen = run_in_terminal(
        project, ["asking.py"], [b"y\n"], prompt=b"Allow?", program=[sys.executable]
    )
    assert code == 0, screen
    assert "run_command asks for approval (default: run_command asks)" in screen
    assert "touch made.txt" in screen
    assert "answer: done" in screen
    assert (project / "ws" / "made.txt").exists()


def test_ask_from_python_with_no_terminal_is_one_clear_error(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "asking.py"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        'refused: approval="ask": nobody can be asked, as stdin is not a terminal; pass a '
        'function that answers (approval=my_approver), or choose "allow", "deny" or "pause"'
    )
    assert not (project / "ws" / "made.txt").exists()


def _run_with_user_config(project: Path, toml: str) -> subprocess.CompletedProcess[str]:
    user = project / "user.toml"
    user.write_text(toml)
    model = script(project / "s.json", [TOUCH, "FINAL_ANSWER: done"])
    return subprocess.run(
        [sys.executable, "-m", "reins", "run", "go", "-m", model, "-w", "ws"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**_env(), "REINS_CONFIG": str(user)},
    )


def test_the_config_says_allow_as_python_does(project: Path) -> None:
    done = _run_with_user_config(project, 'approval = "allow"\n')
    assert done.returncode == 0, done.stderr
    assert "allowed run_command (by auto" in done.stdout
    assert "notice" not in done.stderr
    assert (project / "ws" / "made.txt").exists()


def test_the_old_never_ask_still_allows_with_a_notice(project: Path) -> None:
    done = _run_with_user_config(project, 'approval = "never-ask"\n')
    assert done.returncode == 0, done.stderr
    assert "allowed run_command (by auto" in done.stdout
    assert (
        f'notice: config {project / "user.toml"}: approval = "never-ask" is now spelled '
        '"allow"; the old word works until reins 0.3'
    ) in " ".join(done.stderr.split())
    assert (project / "ws" / "made.txt").exists()


def test_the_config_says_deny_even_in_a_terminal(project: Path) -> None:
    (project / "user.toml").write_text('approval = "deny"\n')
    code, screen = run_in_terminal(
        project,
        ["run", "go", "-m", f"script:{project / 's.json'}", "-w", "ws"],
        [],
        prompt=b"Allow?",
        env={"REINS_CONFIG": str(project / "user.toml")},
    )
    assert code == 0, screen
    assert "Allow?" not in screen
    assert "denied run_command (by headless" in screen
    assert not (project / "ws" / "made.txt").exists()


@pytest.mark.parametrize("word", ["allow", "never-ask"])
def test_a_project_file_may_not_say_allow_in_either_spelling(project: Path, word: str) -> None:
    (project / "reins.toml").write_text(f'approval = "{word}"\n')
    done = reins("run", "go", "-m", f"script:{project / 's.json'}", "-w", "ws", cwd=project)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(
        f'error: config {project / "reins.toml"}: approval = "allow": a project file may '
        "only make approvals stricter; set it in "
    )
