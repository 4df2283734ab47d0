"""What the person at the terminal (or a pipe) gets: streamed text exactly as sent, --version,
--session last, --tools listing the built-ins, `--json | head` ending quietly as cancelled, and
run_sync in a running loop saying what to do, a spinner while the model or a tool works."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from reins import (
    Agent,
    AssistantMessage,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageError,
)
from reins.cli._render import EventRenderer
from reins.core._paths import project_store
from reins.events import (
    ModelRequested,
    ModelResponded,
    Notice,
    RunFinished,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from reins.policies import GUARD_NAMES
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .terminal import Terminal, run_in_terminal
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
    for guard in GUARD_NAMES:  # --no-guard names them all
        assert guard in shown


def test_session_takes_last_and_a_prefix(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", [f"FINAL_ANSWER: {n}" for n in range(3)])
    assert reins("run", "first", "-m", model, "-w", "ws", cwd=tmp_path).returncode == 0
    run_id = only_run_id(tmp_path)
    for given in ("last", None):
        session = given
        if session is None:
            listed = reins("sessions", cwd=tmp_path).stdout
            session = next(line.split()[0] for line in listed.splitlines() if run_id[:7] in line)
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
    done = _piped(tmp_path, f"run go -m {model} -w ws --max-steps 40 --json | head -n 2")
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 2
    shown = reins("show", "last", cwd=tmp_path)
    assert "stopped: cancelled" in shown.stdout


@pytest.mark.parametrize("command", ["replay last --json", "replay last", "show last --json"])
def test_any_command_into_head_ends_quietly(tmp_path: Path, command: str) -> None:
    (tmp_path / "ws").mkdir()
    steps = [
        {
            "text": "a" * 4000,
            "tool_calls": [{"name": "find_files", "arguments": {"pattern": f"{i}"}}],
        }
        for i in range(30)
    ] + ["FINAL_ANSWER: done"]
    model = script(tmp_path / "s.json", steps)
    reins(
        "run",
        "go",
        "-m",
        model,
        "-w",
        "ws",
        "--max-steps",
        "40",
        "--context-window",
        "999999",
        cwd=tmp_path,
    )
    whole = reins(*command.split(), cwd=tmp_path)
    assert len(whole.stdout) > 100_000  # more than a pipe holds: the reader goes first
    done = _piped(tmp_path, f"{command} | head -c 10")
    assert done.stderr == ""
    assert done.stdout == whole.stdout[:10]


def _piped(cwd: Path, line: str) -> subprocess.CompletedProcess[str]:
    """`reins LINE` through a shell, for its pipes."""
    return subprocess.run(
        f"{' '.join(REINS)} {line}",
        shell=True,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )


async def test_run_sync_in_a_running_loop_says_what_to_do() -> None:
    agent = Agent(model=ScriptedModel(["done"]), tools=[])
    with pytest.raises(UsageError, match=r"use `await agent.run\(goal\)`"):
        agent.run_sync("go")
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN


def _screen(*events: object) -> str:
    screen = io.StringIO()
    render = EventRenderer(Console(file=screen, width=100, highlight=False, emoji=False))
    for event in events:
        render(event)  # type: ignore[arg-type]
    return screen.getvalue()


ENV = {"session_id": "s", "run_id": "r"}


def _responded(message: AssistantMessage, seq: int = 3) -> ModelResponded:
    return ModelResponded(
        **ENV,
        seq=seq,
        step=1,
        message=message,
        usage=Usage(input_tokens=1200, output_tokens=30, requests=1),
        finish="tool_use" if message.tool_calls else "end_turn",
        model="m",
    )


def test_a_json_action_is_shown_as_its_call_and_a_step_line_follows() -> None:
    action = '{"thought": "write it", "name": "write_file", "arguments": {"path": "a"}}'
    call = ToolCall(id="c1", name="write_file", arguments={"path": "a"})
    screen = _screen(
        ModelRequested(**ENV, seq=2, step=1),
        *(
            TextDelta(**ENV, seq=3, step=1, text=action[i : i + 9])
            for i in range(0, len(action), 9)
        ),
        _responded(AssistantMessage(text="write it", tool_calls=(call,))),
        ToolCallStarted(**ENV, seq=4, step=1, call=call),
        ToolCallFinished(
            **ENV,
            seq=5,
            step=1,
            result=ToolResultMessage(call_id="c1", name="write_file", content="one\ntwo\nthree"),
        ),
    )
    assert '"thought"' not in screen  # the raw action is not printed
    assert "write it\n" in screen  # its thought is, once
    assert '→ write_file({"path": "a"})' in screen
    assert "← write_file one\n  two\n  three\n" in screen  # indented under its call
    assert "1200 in, 30 out" in screen


def test_a_notice_of_several_lines_is_indented_under_its_mark() -> None:
    text = "That change succeeded. Is the goal reached now?\nIf it is, call final_answer."
    screen = _screen(Notice(**ENV, seq=2, source="DoneCheck", text=text, to_model=True))
    assert "! That change succeeded. Is the goal reached now?\n  If it is, call final_answer." in (
        screen
    )
    assert screen.rstrip().endswith("(DoneCheck)")


def test_a_final_answer_already_shown_is_not_repeated() -> None:
    screen = _screen(
        ModelRequested(**ENV, seq=2, step=1),
        TextDelta(**ENV, seq=3, step=1, text="FINAL_ANSWER: "),
        TextDelta(**ENV, seq=3, step=1, text="forty-two"),
        _responded(AssistantMessage(text="FINAL_ANSWER: forty-two")),
        RunFinished(**ENV, seq=4, stop_reason=StopReason.END_TURN, final_answer="forty-two"),
    )
    assert screen.count("forty-two") == 1
    assert "✓ final answer (above)" in screen
    text_reply = _screen(
        ModelRequested(**ENV, seq=2, step=1),
        _responded(AssistantMessage(text="", tool_calls=())),
        RunFinished(**ENV, seq=4, stop_reason=StopReason.END_TURN, final_answer="from a tool"),
    )
    assert "final answer" in text_reply
    assert "from a tool" in text_reply  # the panel, for an answer not shown before


def test_sessions_rm_and_prune_remove_journal_index_and_outputs(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: one"])
    for goal in ("first", "second", "third"):
        assert reins("run", goal, "-m", model, "-w", "ws", cwd=tmp_path).returncode == 0
    listed = reins("sessions", cwd=tmp_path).stdout
    rows = [line.split() for line in listed.splitlines()[1:] if line.strip()]
    ids = [row[0] for row in rows]  # each session's shortest unique prefix
    whole = sqlite3.connect(project_store(tmp_path) / "reins.db").execute(
        "SELECT session_id, run_id FROM runs ORDER BY started_at"
    )
    (first, _), _, (_, last_run) = whole.fetchall()
    assert len(ids) == 3
    assert first.startswith(ids[0])
    journals = project_store(tmp_path) / "sessions"
    spill = project_store(tmp_path) / "spill" / last_run  # a run's saved long outputs
    done = reins("sessions", "rm", ids[0], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"removed session {ids[0]} (1 run(s))")
    assert not (journals / f"{first}.jsonl").exists()
    left = reins("sessions", cwd=tmp_path).stdout
    assert ids[0] not in left
    assert ids[1] in left
    spill.mkdir(parents=True)
    assert reins("sessions", "prune", "--older-than", "1d", cwd=tmp_path).stdout.startswith(
        "removed 0 session(s)"
    )
    listed = reins("sessions", "prune", "--older-than", "0s", "--dry-run", cwd=tmp_path).stdout
    assert f"  {ids[1]}  " in listed
    assert "would remove 2 session(s) last used before" in listed
    assert "(--dry-run: none removed)" in listed
    headless = reins("sessions", "prune", "--older-than", "0s", cwd=tmp_path)
    assert headless.returncode == 2
    assert headless.stderr.startswith(
        "error: sessions prune would remove 2 session(s) for good, and there is no terminal to "
        "ask: pass --yes to remove them, or --dry-run to list them"
    )
    assert f"{ids[1]}" in reins("sessions", cwd=tmp_path).stdout  # neither removed anything
    done = reins("sessions", "prune", "--older-than", "0s", "--yes", cwd=tmp_path)
    assert "removed 2 session(s)" in done.stdout
    assert "no runs yet" in reins("sessions", cwd=tmp_path).stdout
    assert list(journals.glob("*.jsonl")) == []
    assert not spill.exists()
    bad = reins("sessions", "prune", "--older-than", "soon", cwd=tmp_path)
    assert bad.returncode == 2
    assert "say a whole number and a unit" in bad.stderr
    gone = reins("sessions", "rm", "zzz", cwd=tmp_path)
    assert gone.returncode == 2


def test_completion_and_verbose(tmp_path: Path) -> None:
    shown = reins("--show-completion", "bash", cwd=tmp_path)
    assert shown.returncode == 0
    assert "_completion()" in shown.stdout  # named after the program as it was started
    assert "COMP_WORDS" in shown.stdout
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: done"])
    quiet = reins("run", "go", "-m", model, "-w", "ws", cwd=tmp_path)
    loud = reins("-v", "run", "go", "-m", model, "-w", "ws", cwd=tmp_path)
    assert "DEBUG" not in quiet.stderr
    assert "DEBUG" in loud.stderr


def test_a_spinner_with_the_time_elapsed_shows_while_a_tool_runs(tmp_path: Path) -> None:
    """On a terminal only; erased when the wait ends, so the transcript stays as it was."""
    (tmp_path / "ws").mkdir()
    slow = [
        {
            "text": "Waiting.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 1.5"}}],
        },
        "FINAL_ANSWER: it slept",
    ]
    args = ["run", "sleep", "-m", script(tmp_path / "s.json", slow), "-w", "ws", "-y"]
    code, screen = run_in_terminal(tmp_path, args, [], prompt=b"\x00never")
    assert code == 0, screen
    shown = re.findall(r"running run_command · (\d+\.\d) s", screen)
    assert shown, screen
    assert max(float(s) for s in shown) >= 1.0  # it counts up while the command sleeps
    piped = reins(*args, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert "running run_command" not in piped.stdout
    assert "← run_command exit code: 0" in piped.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("typed", ["a steer", "Ctrl-C"])
def test_a_line_typed_or_ctrl_c_while_the_spinner_spins_leaves_a_clean_screen(
    tmp_path: Path, typed: str
) -> None:
    """The terminal does not echo onto the spinner's line (the echo's Enter, or ^C, would
    leave that line behind): a steer shows on the spinner until its `steered` line, and the
    line of a Ctrl-C takes the spinner's place."""
    (tmp_path / "ws").mkdir()
    slow = [
        {
            "text": "Waiting.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 3"}}],
        },
        "FINAL_ANSWER: it slept",
    ]
    model = script(tmp_path / "s.json", slow)
    run = Terminal(tmp_path, [*REINS, "run", "sleep", "-m", model, "-w", "ws", "-y"])
    try:
        run.wait_for("running run_command ·")
        if typed == "a steer":
            run.line("also say blue")
            run.wait_for("» also say blue (queued)", timeout=5)
            screen = run.wait_for("EXITED 0")
        else:
            run.type("C-c")
            screen = run.wait_for("EXITED 130")
    finally:
        run.close()
    assert "running run_command" not in screen, screen  # the spinner's line is gone
    assert '→ run_command({"command": "sleep 3"})\n? run_command asks' in screen, screen
    allowed = "✓ allowed run_command (by auto: default: run_command asks)\n"
    if typed == "a steer":
        assert screen.count("also say blue") == 1, screen
        assert allowed + "← run_command exit code: 0\n» steered: also say blue\n" in screen
    else:
        assert "^C" not in screen, screen
        assert allowed + "cancelling… (SIGINT; again to stop at once)\n" in screen


@pytest.mark.parametrize("width", [200, 100, 70, 50, 30])
def test_sessions_never_cut_ids_however_narrow_the_terminal(width: int) -> None:
    from datetime import UTC, datetime

    from reins.cli._render import render_runs
    from reins.store import RunInfo

    runs = [
        RunInfo(
            run_id=f"1a2345678901234567{n:03d}",
            session_id=f"1b2345678901234567{n:03d}",
            goal="a goal long enough to need cutting " * 3,
            model="openai:gpt-4o-mini-2024-07-18",
            started_at=datetime(2026, 12, 1, 10, n, tzinfo=UTC),
            stop_reason=StopReason.END_TURN if n else None,
        )
        for n in range(3)
    ]
    screen = io.StringIO()
    render_runs(Console(file=screen, width=width, highlight=False, emoji=False), runs)
    lines = screen.getvalue().splitlines()
    for run in runs:
        assert any(run.run_id in line for line in lines), screen.getvalue()
        assert any(run.session_id in line for line in lines), screen.getvalue()
    assert max(len(line) for line in lines) <= max(width, len("session ") + 21)
    if width >= 100:
        assert "goal" in lines[0]
        assert "a goal long" in screen.getvalue()
    assert "unfinished" in screen.getvalue()


def test_the_spinner_shows_until_the_first_event() -> None:
    """An embedded model loads for seconds before a run's first event: the wait spins."""
    import time

    screen = io.StringIO()
    render = EventRenderer(Console(file=screen, width=80, force_terminal=True), spinner=True)
    render.starting()
    time.sleep(0.4)
    render.close()
    assert re.search(r"starting · 0\.\d s", screen.getvalue())
    piped = io.StringIO()
    quiet = EventRenderer(Console(file=piped, width=80), spinner=True)  # not a terminal
    quiet.starting()
    quiet.close()
    assert piped.getvalue() == ""


def test_a_call_that_never_runs_is_shown_before_what_is_said_of_it(tmp_path: Path) -> None:
    """Answered from the cache or denied, a call has no start: its line comes with the first
    event that speaks of it, so the user sees what the model asked for."""
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    read = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    replies = [
        {"text": "", "tool_calls": [read]},
        {"text": "", "tool_calls": [read]},  # an exact repeat: answered from the cache
        {"text": "", "tool_calls": [{"name": "run_command", "arguments": {"command": "wc -l x"}}]},
        "FINAL_ANSWER: two lines",
    ]
    model = script(tmp_path / "s.json", replies)
    # (the repeat-block guard would reject an immediate repeat before the cache answers it)
    done = reins("run", "count", "-m", model, "--no-guard", "repeat-block", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    call = '→ read_file({"path": "notes.txt"})\n'
    assert out.count(call) == 2, out
    assert call + "← read_file Cached: you made this exact call before" in out, out
    denied = '→ run_command({"command": "wc -l x"})\n? run_command asks for approval'
    assert denied in out, out
    assert "✗ denied run_command (by headless" in out, out


def test_sessions_prune_in_a_terminal_lists_and_asks(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: one"])
    assert reins("run", "an old goal", "-m", model, "-w", "ws", cwd=tmp_path).returncode == 0
    prune = ["sessions", "prune", "--older-than", "0s"]
    code, screen = run_in_terminal(tmp_path, prune, [b"n\n"], prompt=b"[y/N]")
    assert code == 0, screen
    assert "1 run(s)  an old goal" in screen
    assert "Remove these 1 session(s) for good? [y/N]" in screen
    assert "removed 0 session(s): nothing was removed" in screen
    assert "an old goal" in reins("sessions", cwd=tmp_path).stdout
    code, screen = run_in_terminal(tmp_path, prune, [b"y\n"], prompt=b"[y/N]")
    assert code == 0, screen
    assert "removed 1 session(s) last used before" in screen
    assert "no runs yet" in reins("sessions", cwd=tmp_path).stdout


def test_sessions_json_and_limit(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: one"])
    for goal in ("first", "second", "third"):
        assert reins("run", goal, "-m", model, "-w", "ws", cwd=tmp_path).returncode == 0
    listed = json.loads(reins("sessions", "--json", cwd=tmp_path).stdout)
    assert [run["goal"] for run in listed] == ["first", "second", "third"]
    assert set(listed[0]) == {
        "session_id", "run_id", "goal", "model", "started_at", "stop_reason", "running",
    }  # fmt: skip
    assert listed[0]["stop_reason"] == "end_turn"
    assert listed[0]["running"] is False
    assert listed[0]["model"] == model
    latest = json.loads(reins("sessions", "--json", "--limit", "2", cwd=tmp_path).stdout)
    assert latest == listed[1:]
    table = reins("sessions", "-n", "1", cwd=tmp_path).stdout
    assert "third" in table
    assert "second" not in table
