"""The task suite's tools (benchmarks/tasks): its checks judge right, and run.py compares configs
that differ by one change and times each run's first action. A scripted model drives the real
loop; the checks run in real workspaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TASKS = Path(__file__).resolve().parents[1] / "benchmarks" / "tasks"
SRC = Path(__file__).resolve().parents[1] / "src"

WRITE_THEN_ANSWER = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "x"}}]},
    {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "done"}}]},
]


def python(*args: str, cwd: Path = TASKS) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def suite(tmp_path: Path, script: list[Any], *args: str) -> tuple[str, list[dict[str, Any]]]:
    """run.py on a scripted model: its table, and its per-run details."""
    (tmp_path / "script.json").write_text(json.dumps(script))
    details = tmp_path / "details.json"
    done = python(
        "run.py",
        "--model",
        f"script:{tmp_path / 'script.json'}",
        "--details",
        str(details),
        *args,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(details.read_text())


@pytest.mark.slow
def test_every_check_fails_unsolved_passes_solved_and_judges_near_misses() -> None:
    done = python("oracle.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks fail unsolved and pass solved" in done.stdout
    count = int(done.stdout.split()[1])
    assert count >= 40


def test_the_oracle_says_which_check_is_wrong(tmp_path: Path) -> None:
    """A check that passes on the untouched workspace is named (the oracle can fail)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(TASKS)!r})\n"
        "import dataclasses, oracle\n"
        "[task] = [t for t in oracle.TASKS if t.id == 'count_errors']\n"
        "oracle.TASKS[:] = [dataclasses.replace(task, check='true')]\n"
        "sys.argv = ['oracle.py']\n"
        "oracle.main()\n"
    )
    done = python(str(probe))
    assert done.returncode == 1
    assert "count_errors, untouched: the check passes" in done.stdout
    assert "count_errors, near miss 0: the check passes" in done.stdout


def test_configs_differ_by_one_change_and_first_actions_are_timed(tmp_path: Path) -> None:
    table, runs = suite(
        tmp_path,
        WRITE_THEN_ANSWER,
        "--only",
        "hello_reins",
        "--configs",
        "on,on+guard.done-check=off",
        "--set",
        "budget.notices=off",
    )
    by_label = {run["config"]: run for run in runs}
    assert set(by_label) == {
        "reins, policies on",
        "reins, policies on + guard.done-check=off",
    }
    on, changed = (
        by_label["reins, policies on"],
        by_label["reins, policies on + guard.done-check=off"],
    )
    assert on["changes"] == ["budget.notices=off"]
    assert changed["changes"] == ["guard.done-check=off", "budget.notices=off"]

    def asked_if_done(run: dict[str, Any]) -> bool:
        return any(
            m["role"] == "user" and "Is the goal reached" in m["content"] for m in run["transcript"]
        )

    assert asked_if_done(on)  # the only difference the change makes
    assert not asked_if_done(changed)
    for run in runs:
        assert 0 <= run["first_action_s"] <= run["seconds"]
    header, _, *rows = table.splitlines()[:4]
    assert "first action s (median)" in header
    column = header.split(" | ").index("first action s (median)")
    assert all(float(row.split(" | ")[column]) >= 0 for row in rows)


def test_a_run_cut_by_the_timeout_shows_how_far_it_got(tmp_path: Path) -> None:
    write = {"path": "hello.txt", "content": "Hello from reins"}
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": write}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}}]},
    ]
    _, [run] = suite(
        tmp_path, script, "--only", "hello_reins", "--configs", "off", "--task-timeout", "4"
    )
    assert run["stop_reason"] == "timeout"
    assert run["success"]  # the file was written before the time was up
    assert run["steps"] == 2
    assert run["tool_calls"] == 1  # the write; the sleep never finished
    assert run["first_action_s"] < run["seconds"]
    assert any(m["role"] == "tool" and m["name"] == "write_file" for m in run["transcript"])


def test_a_run_that_calls_no_tool_has_no_first_action(tmp_path: Path) -> None:
    table, runs = suite(
        tmp_path, ["There are 5 lines."], "--only", "count_lines", "--configs", "off"
    )
    assert runs[0]["first_action_s"] is None
    assert runs[0]["success"]  # the text reply was the answer, and it says 5
    row = table.splitlines()[2].split(" | ")
    assert row[5] == "—"


@pytest.mark.parametrize(
    ("configs", "sets", "said"),
    [
        ("on+guard.nope=off", [], "Guards has no 'nope'"),
        ("on", ["budget.notices=maybe"], "notices is on or off"),
        ("on", ["guard.loop_threshold=1.5"], "is a whole number"),
        ("on", ["guard.loop_threshold=1"], "loop_threshold must be at least 2"),
        ("on+colour=red", [], "no such key"),
        ("on+agent.guards=[]", [], "by guard.NAME"),
        ("on+agent.nope=1", [], "Agent has no keyword 'nope'"),
        ("pydantic-ai+guard.loop=off", [], "a peer takes no changes"),
        ("on,on", [], "configs named twice"),
        ("onn", [], "unknown config 'onn'"),
        ("on+guard.loop", [], "a change is KEY=VALUE"),
    ],
)
def test_a_bad_config_is_one_clear_error(configs: str, sets: list[str], said: str) -> None:
    done = python("run.py", "--configs", configs, *(a for s in sets for a in ("--set", s)))
    assert done.returncode != 0
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_a_configs_environment_is_set_while_it_runs_and_restored(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(TASKS)!r})\n"
        "import configs\n"
        "os.environ['REINS_PROBE_KEPT'] = 'before'\n"
        "[config] = configs.parse(['on+env.REINS_PROBE_NEW=1'], ['env.REINS_PROBE_KEPT=2'])\n"
        "with config.environment():\n"
        "    print(os.environ['REINS_PROBE_NEW'], os.environ['REINS_PROBE_KEPT'])\n"
        "print(os.environ.get('REINS_PROBE_NEW'), os.environ['REINS_PROBE_KEPT'])\n"
    )
    done = python(str(probe))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1 2", "None before"]


def test_a_named_config_is_on_with_its_change(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(TASKS)!r})\n"
        "import configs\n"
        "from reins import Guards\n"
        "named, spelled = configs.parse(['syntax-refuse', 'on+guard.syntax-check=refuse'], [])\n"
        "assert named.guards == spelled.guards == Guards(syntax_check='refuse')\n"
        "[off] = configs.parse(['on+guard.syntax-check=off'], [])\n"  # a word, not False
        "assert off.guards == Guards(syntax_check='off')\n"
        "print(named.label, named.changes)\n"
    )
    done = python(str(probe))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reins, breaking writes refused ['guard.syntax-check=refuse']"
