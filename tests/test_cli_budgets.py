"""Budgets on the command line: the flags, the config keys, the exit codes, resume after a cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .terminal import run_in_terminal
from .test_cli import HELLO, only_run_id, reins, script


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def test_token_budget_exits_5_and_resume_sets_a_new_one(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    capped = reins("run", "say hi", "-m", model, "-w", "ws", "--token-budget", "1", cwd=project)
    assert capped.returncode == 5, capped.stderr
    assert "stopped: token_budget — used " in capped.stdout
    run_id = only_run_id(project)
    resumed = reins("resume", run_id, "--token-budget", "1000000", "--json", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert events[0]["kind"] == "run_resumed"
    assert events[0]["token_budget"] == 1_000_000
    assert events[1]["kind"] == "notice"
    assert events[1]["text"].startswith("[CONTINUING AFTER A CAP] The run stopped at a cap")
    assert events[-1]["final_answer"] == "hello.txt says hi"


def test_time_budget_exits_6(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    capped = reins("run", "say hi", "-m", model, "-w", "ws", "--time-budget", "1e-6", cwd=project)
    assert capped.returncode == 6, capped.stderr
    assert "stopped: time_budget" in capped.stdout
    assert not (project / "ws" / "hello.txt").exists()


def test_budgets_that_are_not_reached_change_nothing(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    done = reins(
        "run",
        "say hi",
        "-m",
        model,
        "-w",
        "ws",
        "--token-budget",
        "1000000",
        "--time-budget",
        "600",
        "--cost-budget",
        "5",
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    assert "hello.txt says hi" in done.stdout
    assert "[BUDGET] step 2 of 30;" in done.stdout  # the notice each round


def test_no_budget_notices_on_the_command_line(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    args = ["run", "say hi", "-m", model, "-w", "ws", "--token-budget", "1000000", "--json"]
    done = reins(*args, "--no-budget-notices", cwd=project)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["config"]["budget_notices"] is False
    assert not [e for e in events if e.get("source") == "BudgetNotices"]
    done = reins(*args, cwd=project)
    assert '"source":"BudgetNotices"' in done.stdout


def test_config_keys_set_the_caps_and_summarize(project: Path) -> None:
    (project / "reins.toml").write_text('token_budget = 1\nat_cap = "summarize"\n')
    model = script(project / "s.json", HELLO)
    capped = reins("run", "say hi", "-m", model, "-w", "ws", cwd=project)
    assert capped.returncode == 5, capped.stderr
    assert "partial answer" in capped.stdout
    assert "Checking." in capped.stdout  # the summary call's reply (its tool call dropped)
    assert "the answer summarizes the partial work" in capped.stdout


def test_config_max_steps_and_the_flag_wins(project: Path) -> None:
    (project / "reins.toml").write_text("max_steps = 1\n")
    model = script(project / "s.json", HELLO)
    capped = reins("run", "say hi", "-m", model, "-w", "ws", cwd=project)
    assert capped.returncode == 3
    assert "reached the cap of 1 steps" in capped.stdout
    done = reins("run", "say hi", "-m", model, "-w", "ws", "--max-steps", "5", cwd=project)
    assert done.returncode == 0, done.stderr


def test_bad_budget_values_exit_2(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    bad_flag = reins("run", "hi", "-m", model, "--at-cap", "maybe", cwd=project)
    assert bad_flag.returncode == 2
    assert "--at-cap 'maybe': say stop or summarize" in bad_flag.stderr
    negative = reins("run", "hi", "-m", model, "--cost-budget", "0", cwd=project)
    assert negative.returncode == 2
    (project / "reins.toml").write_text("token_budget = -5\n")
    bad_config = reins("run", "hi", "-m", model, cwd=project)
    assert bad_config.returncode == 2
    assert "token_budget" in bad_config.stderr


def test_on_a_terminal_a_cap_offers_to_continue(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    args = ["run", "say hi", "-m", model, "-w", "ws", "--max-steps", "1"]
    code, screen = run_in_terminal(project, args, [b"1\n"], prompt=b"Continue?")
    assert code == 0, screen
    assert "The run reached a cap: reached the cap of 1 steps." in screen
    assert "Continue? [1] +20 steps, [2] +60 steps, [s]top (default stop):" in screen
    assert "continued +20 steps (MaxSteps)" in screen
    assert "hello.txt says hi" in screen


def test_on_a_terminal_the_cap_is_said_once_by_its_offer(project: Path) -> None:
    """The loop's notice of the offer is the prompt's to say; the log keeps it for a replay."""
    model = script(project / "s.json", HELLO)
    args = ["run", "say hi", "-m", model, "-w", "ws", "--max-steps", "1"]
    code, screen = run_in_terminal(project, args, [b"s\n"], prompt=b"Continue?")
    assert code == 3, screen
    assert "offered to continue" not in screen
    said = screen[: screen.index("Continue?")]
    assert said.count("reached the cap of 1 steps") == 1, screen  # "The run reached a cap: …"
    replayed = reins("replay", "last", cwd=project)
    notice = "! reached the cap of 1 steps; offered to continue: +20 steps or +60 steps (MaxSteps)"
    assert notice in replayed.stdout


def test_on_a_terminal_stop_stops_at_the_cap(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    args = ["run", "say hi", "-m", model, "-w", "ws", "--max-steps", "1"]
    code, screen = run_in_terminal(project, args, [b"s\n"], prompt=b"Continue?")
    assert code == 3, screen
    assert screen.count("Continue?") == 1
