"""A pattern written to backtrack for ever answers at once, and a tool that never returns still
ends the run and the process: at its timeout, on SIGINT and on SIGTERM (issue 26, item 3:
`grep` with `(a*)*b` on forty `a`s ran past 200 s, deaf to its timeout and to signals)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reins import StopReason
from reins.events import EVENT, Event, RunFinished, ToolCallFinished, ToolCallStarted

from ..test_cli import ROOT, _env, reins, script

CATASTROPHIC = [
    "(a*)*b",
    "(a|a)*b",
    "(a+)+$",
    "(.*a){20}",
    "(a|aa)+c",
    "^(([a-z])+.)+[A-Z]([a-z])+$",
]
"""Each takes Python's `re` hours on a line of forty `a`s (or more: the last one)."""
GLOB = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
"""pathspec makes it a regex that backtracks as long against a long name of `a`s."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def calls(*pairs: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in pairs]}


def run_json(project: Path, replies: list[object], *more: str) -> tuple[list[Event], float]:
    model = script(project / "s.json", replies)
    start = time.monotonic()
    args = ["run", "go", "-m", model, "-w", "ws", "--store", "st", "--json", *more]
    done = reins(*args, cwd=project)
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    return [EVENT.validate_json(line) for line in done.stdout.splitlines()], took


def results(events: list[Event]) -> list[ToolCallFinished]:
    """The calls' results in the order they were called (the script's ids: call_TURN_INDEX),
    not in the order they finished in."""
    found = [e for e in events if isinstance(e, ToolCallFinished)]
    return sorted(found, key=lambda e: int(e.result.call_id.rsplit("_", 1)[1]))


def test_grep_matches_catastrophic_patterns_in_linear_time(project: Path) -> None:
    (project / "ws" / "a40.txt").write_text("a" * 40 + "\n")
    grep = [("grep", {"pattern": p}) for p in CATASTROPHIC]
    events, took = run_json(project, [calls(*grep), "FINAL_ANSWER: done"])
    found = results(events)
    assert [r.result.content for r in found] == [
        "no matches for '(a*)*b' (grep searches contents; find_files matches names)",
        "no matches for '(a|a)*b' (grep searches contents; find_files matches names)",
        f"a40.txt:1: {'a' * 40}\n[1 matching line]",
        f"a40.txt:1: {'a' * 40}\n[1 matching line]",
        "no matches for '(a|aa)+c' (grep searches contents; find_files matches names)",
        "no matches for '^(([a-z])+.)+[A-Z]([a-z])+$' (grep searches contents; find_files "
        "matches names)",
    ]
    assert all(r.duration_ms < 1000 for r in found), [r.duration_ms for r in found]
    assert took < 30  # the whole process, start-up included (Python's re: hours)


def test_a_pattern_re2_cannot_run_is_one_clear_observation(project: Path) -> None:
    (project / "ws" / "a.txt").write_text("aa\n")
    refused = ["(a*)*\\1", "(?=a)a", "(?<=a)a", "a++", "a\\Z"]
    events, _ = run_json(project, [calls(*(("grep", {"pattern": p}) for p in refused)), "done"])
    found = results(events)
    assert all(r.result.is_error for r in found)
    said = [r.result.content for r in found]
    assert said[0] == (
        "bad regular expression '(a*)*\\\\1': invalid escape sequence: \\1; RE2 has no "
        "backreferences: search for the repeated text itself (grep's patterns are RE2's (as "
        "ripgrep's): Python's syntax without backreferences or lookaround)"
    )
    assert "RE2 has no lookahead" in said[1]
    assert "RE2 has no lookbehind" in said[2]
    assert "no possessive quantifiers" in said[3]
    assert "write the end of a line as $" in said[4]


def test_hostile_globs_match_in_linear_time(project: Path) -> None:
    """A glob from the model (find_files, grep's `glob`) or from a cloned project's
    .gitignore, which every walk matches against each path."""
    long_name = "a" * 200
    (project / "ws" / long_name).write_text("needle\n")
    sub = project / "ws" / "sub"
    sub.mkdir()
    (sub / long_name).write_text("needle\n")
    (sub / "x.log").write_text("needle\n")
    # `!` alone is no rule pathspec can read (git skips it): the other lines still hold.
    (sub / ".gitignore").write_text(f"{GLOB}\n!\n*.log\n")
    events, took = run_json(
        project,
        [
            calls(
                ("find_files", {"pattern": GLOB}),
                ("grep", {"pattern": "needle", "glob": GLOB}),
                ("grep", {"pattern": "needle"}),
            ),
            "FINAL_ANSWER: done",
        ],
    )
    found = results(events)
    assert [r.result.content for r in found] == [
        f"no files match {GLOB!r} (find_files matches names; grep searches contents)",
        "no matches for 'needle' (grep searches contents; find_files matches names)",
        f"{long_name}:1: needle\nsub/{long_name}:1: needle\n[2 matching lines in 2 files]",
    ]
    assert all(r.duration_ms < 1000 for r in found), [r.duration_ms for r in found]
    assert took < 30


def test_an_mcp_servers_schema_regex_is_matched_in_linear_time(project: Path) -> None:
    """jsonschema matches a schema's `pattern` with Python's `re`, on the event loop's thread:
    a server's `(a*)*b` against the model's forty `a`s hung the run, signals and all."""
    server = {"command": sys.executable, "args": [str(Path(__file__).parent / "pattern_server.py")]}
    (project / "servers.json").write_text(json.dumps({"mcpServers": {"p": server}}))
    replies = [
        calls(("p__echo", {"text": "a" * 40}), ("p__echo", {"text": "aab"})),
        "FINAL_ANSWER: done",
    ]
    events, took = run_json(project, replies, "--mcp-config", "servers.json", "--yes")
    refused, echoed = results(events)
    assert refused.result.is_error
    assert refused.result.content == (
        f"invalid arguments for p__echo: text: '{'a' * 40}' does not match '(a*)*b'"
    )
    assert refused.duration_ms < 1000
    assert (echoed.result.content, echoed.result.is_error) == ("aab", False)
    assert took < 30


# A tool that never returns, in a real `reins run` (tests/hostile/stuck_tools.py adds them).


def start_stuck(
    project: Path, tool: str, timeout: float, *then: dict[str, object], grace: float = 3
) -> tuple[subprocess.Popen[str], list[str]]:
    """`reins run` calling `tool` (timeout `timeout` s, the watchdog's grace `grace` s), then
    making the calls `then`, read until the first call has started."""
    model = script(project / "s.json", [calls((tool, {})), *then, "FINAL_ANSWER: done"])
    env = {**_env(), "PYTHONPATH": str(ROOT), "STUCK_TIMEOUT": str(timeout)}
    env["STUCK_GRACE"] = str(grace)
    argv = ["run", "go", "-m", model, "-w", "ws", "--store", "st", "--json", "--yes"]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.hostile.stuck_tools", *argv],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        if isinstance(EVENT.validate_json(line), ToolCallStarted):
            break
    return child, lines


def finish(child: subprocess.Popen[str], lines: list[str]) -> tuple[list[Event], str, float]:
    start = time.monotonic()
    try:
        rest, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    events = [EVENT.validate_json(line) for line in [*lines, *rest.splitlines()]]
    return events, stderr, time.monotonic() - start


def test_a_tool_that_never_returns_times_out_and_the_process_exits(project: Path) -> None:
    """Its thread ran on: the event loop's executor waited for it at the end of the run, and
    the interpreter at exit; the run had finished, the process never did."""
    child, lines = start_stuck(project, "spin", timeout=1)
    events, stderr, took = finish(child, lines)
    assert child.returncode == 0, stderr
    assert took < 15
    [result] = results(events)
    assert result.result.content == (
        "spin timed out after 1 s and may still be running: it runs in a thread that cannot be "
        "stopped, so what it does from now on is unknown"
    )
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert (last.stop_reason, last.final_answer) == (StopReason.END_TURN, "done")


@pytest.mark.parametrize("tool", ["quick", "spin"])
def test_the_watchdog_leaves_a_live_process_alone(project: Path, tool: str) -> None:
    """Armed for the call (0.5 s timeout, grace 1 s: it fires 2.5 s on), then put off while
    the loop runs: disarmed when the call is over, re-armed while a call given up runs on."""
    child, lines = start_stuck(project, tool, 0.5, calls(("nap", {"seconds": 4})), grace=1)
    events, stderr, _ = finish(child, lines)
    assert child.returncode == 0, stderr
    assert results(events)[-1].result.content == "rested"
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.stop_reason is StopReason.END_TURN


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_tool_that_never_returns(project: Path, signum: signal.Signals) -> None:
    child, lines = start_stuck(project, "spin", timeout=600)
    time.sleep(0.3)
    child.send_signal(signum)
    events, stderr, took = finish(child, lines)
    assert child.returncode == 130, stderr
    assert took < 10
    assert f"cancelling… ({signum.name}" in stderr
    assert "Traceback" not in stderr
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.stop_reason is StopReason.CANCELLED


@pytest.mark.parametrize("signum", [None, signal.SIGTERM], ids=["alone", "SIGTERM"])
def test_a_tool_holding_the_interpreter_ends_the_process_past_its_timeout(
    project: Path, signum: signal.Signals | None
) -> None:
    """Python's `re` in C holds the GIL: the loop, its timers and its signal handlers cannot
    run, so no `cancelled` can be written; the watchdog ends the process 1 to 2 graces past
    the timeout, the stacks showing where it was, its log whole up to the call."""
    child, lines = start_stuck(project, "hold", timeout=1, grace=1)
    if signum is not None:
        time.sleep(0.3)
        child.send_signal(signum)  # not heard: the handler is Python code
    events, stderr, took = finish(child, lines)
    assert child.returncode == 1
    assert took < 15
    assert stderr.startswith("Timeout (")
    assert "in hold\n" in stderr  # the tool's frame, in its thread's stack
    assert isinstance(events[-1], ToolCallStarted)  # the log ends at a clean event boundary
    shown = reins("show", events[-1].run_id, "--store", "st", cwd=project)
    assert shown.returncode == 0, shown.stderr
