"""`reins chat` in a real terminal (tmux): turns in one session, a line that steers the run
at work, history on the arrow keys, and the slash commands."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reins.core._paths import project_store

from .servers import SlowOpenAI
from .terminal import Terminal, run_in_terminal
from .test_cli import _env, reins

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def chat_in(project: Path, *replies: object, flags: tuple[str, ...] = ("-y",)) -> Terminal:
    script = project / "s.json"
    script.write_text(json.dumps(list(replies)))
    command = [sys.executable, "-m", "reins", "chat", "-m", f"script:{script}", "-w", "ws"]
    return Terminal(project, [*command, *flags])


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


SLEEP = {
    "text": "Waiting.",
    "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 2"}}],
}


def test_turns_share_a_session_and_a_typed_line_steers_the_working_run(
    project: Path, terminals: list[Terminal]
) -> None:
    chat = chat_in(project, SLEEP, "FINAL_ANSWER: counted", "FINAL_ANSWER: again")
    terminals.append(chat)
    chat.wait_for("new session ·")
    chat.line("count to three")
    chat.wait_for("→ run_command")
    chat.wait_for("working · step 1")  # the toolbar (redrawn each 0.25 s), while it works
    chat.line("also say blue")
    chat.wait_for("» steered: also say blue")
    chat.wait_for("tokens ")
    chat.line("and again")
    chat.wait_for("tokens ", count=2)

    chat.type("Up")
    chat.type("Up")  # the history: the steer, before the second goal
    time.sleep(0.3)
    prompt = [line for line in chat.screen(history=False).splitlines() if line.startswith("›")]
    assert prompt[-1] == "› also say blue"
    chat.type("C-u")

    chat.line("/compact")  # the scripted model cannot summarize: a digest, recorded
    chat.wait_for("context compacted (digested (no model))")
    chat.line("/sessions")
    chat.wait_for("started (UTC)")
    chat.line("/exit")
    screen = chat.wait_for("EXITED 0")
    runs = sqlite3.connect(project_store(project) / "reins.db").execute(
        "SELECT session_id, run_id FROM runs ORDER BY started_at"
    )
    (session, first), (same, second) = runs.fetchall()
    assert session == same
    listed = screen[screen.index("started (UTC)") :]
    assert first[:7] in listed  # each id's shortest unique prefix
    assert second[:7] in listed

    shown = reins("show", first, cwd=project)
    assert "also say blue" in shown.stdout  # told to the model, in the run's log
    assert "counted" in reins("show", first, cwd=project).stdout
    assert "again" in reins("show", second, cwd=project).stdout


def test_stop_ends_the_run_and_the_chat_goes_on(project: Path, terminals: list[Terminal]) -> None:
    long_sleep = {
        "text": "Waiting long.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}}],
    }
    chat = chat_in(project, long_sleep, "FINAL_ANSWER: later")
    terminals.append(chat)
    chat.wait_for("new session ·")
    started = time.monotonic()
    chat.line("wait for a while")
    chat.wait_for("→ run_command")
    chat.line("/new")  # refused while it works: it would change the session under the run
    chat.wait_for("a run is working: /new is for between runs; /stop it, or wait")
    chat.line("/sessions")  # a listing is fine meanwhile
    chat.wait_for("wait for a while", count=2)
    chat.line("/stop")
    chat.wait_for("stopped: cancelled")
    assert time.monotonic() - started < 20
    chat.line("/model script:/nowhere.json")
    chat.wait_for("error:")
    chat.line("/bogus")
    chat.wait_for("no command /bogus")
    chat.type("C-d")
    chat.wait_for("EXITED 0")


def test_an_approval_is_answered_on_the_chat_line(project: Path, terminals: list[Terminal]) -> None:
    echo = {
        "text": "Running.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi"}}],
    }
    chat = chat_in(project, echo, "FINAL_ANSWER: ran it", flags=())
    terminals.append(chat)
    chat.wait_for("new session ·")
    chat.line("say hi with a command")
    chat.wait_for("Allow? [y]es")
    chat.wait_for("the run waits for your answer")  # the toolbar: a line answers, not steers
    chat.line("y")
    chat.wait_for("allowed run_command (by user")
    chat.wait_for("tokens ")
    assert "Allow? [y]es" in chat.screen()  # the question stays above its answer
    # A command for the chat is not taken as the answer: /stop stops the run that asks.
    chat.line("/new")
    chat.line("say hi with a command")
    chat.wait_for("Allow? [y]es", count=2)
    chat.line("/stop")
    chat.wait_for("stopped: cancelled")
    chat.line("/exit")
    chat.wait_for("EXITED 0")


def test_without_a_terminal_it_says_to_use_run(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reins", "chat"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert done.returncode == 2
    assert "reins chat needs a terminal" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project_store(project)).exists()  # nothing opened, nothing written


def test_a_workspace_that_is_not_there_is_said_at_the_start(project: Path) -> None:
    code, screen = run_in_terminal(project, ["chat", "-w", "nowhere"], [], prompt=b"\x00")
    assert code == 2, screen
    assert "workspace 'nowhere' is not an existing directory" in screen
    assert "Traceback" not in screen


def replies_in_the_log(project: Path) -> list[str]:
    """The assistant's texts of the session, as its log holds them (`reins show --json` of
    its last run holds the turns before it too)."""
    messages = json.loads(reins("show", "last", "--json", cwd=project).stdout)
    return [m["text"] for m in messages if m["role"] == "assistant" and m["text"]]


def test_a_reply_streamed_word_by_word_shows_whole_as_the_log_has_it(
    project: Path, terminals: list[Terminal]
) -> None:
    steered = {
        "text": "Let me look first.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 2"}}],
    }
    replies = ["The folder holds some files. Done.", steered, "As you asked: the sky is blue."]
    with SlowOpenAI(replies, gap=0.05) as server:  # as a real server streams
        chat = Terminal(
            project, [sys.executable, "-m", "reins", "chat", "-m", server.url, "-w", "ws", "-y"]
        )
        terminals.append(chat)
        chat.wait_for("new session ·")
        chat.line("what is here")
        chat.wait_for("tokens ")
        chat.line("look again")
        chat.wait_for("→ run_command")
        chat.line("also say blue")  # while the command sleeps: told before the next step
        chat.wait_for("» steered: also say blue")
        chat.wait_for("tokens ", count=2)
        chat.line("/exit")
        screen = chat.wait_for("EXITED 0")
    said = replies_in_the_log(project)
    assert said == [
        "The folder holds some files. Done.",
        "Let me look first.",
        "As you asked: the sky is blue.",
    ]
    lines = [line.strip() for line in screen.splitlines()]
    for text in said:
        assert text in lines, screen  # each reply on a line of its own, whole
    assert "also say blue" in server.requests[-1]["messages"][-1]["content"]


def test_a_turn_takes_the_run_options_given_to_chat(
    project: Path, terminals: list[Terminal]
) -> None:
    flags = ("-y", "--tools", "read_file,run_command", "--mode", "explore", "--max-steps", "1")
    flags += ("--token-budget", "90000", "--check", "true", "--planning", "--no-guard", "loop")
    chat = chat_in(project, SLEEP, "FINAL_ANSWER: never", flags=flags)
    terminals.append(chat)
    chat.wait_for("new session ·")
    chat.line("count to three")
    chat.wait_for("run_command is not available in explore mode")  # the mode holds
    chat.wait_for("Continue? [1] +20 steps")  # the cap of one step; the chat asks on
    chat.line("s")
    chat.wait_for("stopped: max_steps")
    chat.line("/exit")
    chat.wait_for("EXITED 0")
    first = reins("replay", "last", "--json", cwd=project).stdout.splitlines()[0]
    config = json.loads(first)["config"]
    assert config["max_steps"] == 1
    assert config["token_budget"] == 90000
    assert config["mode"] == "explore"
    assert config["checks"] == ["true"]
    assert config["guards"]["loop"] is False
    assert set(config["tools"]) >= {"read_file", "run_command", "plan", "todo"}
    assert not {"write_file", "edit_file", "grep"} & set(config["tools"])


def test_chat_help_lists_the_run_options() -> None:
    shown = reins("chat", "--help", cwd=Path("."))
    assert shown.returncode == 0
    for flag in ("--max-steps", "--token-budget", "--time-budget", "--cost-budget", "--tools"):
        assert flag in shown.stdout
    for flag in ("--mode", "--check", "--planning", "--subagents", "--at-cap", "--no-guard"):
        assert flag in shown.stdout


def test_the_line_streaming_shows_in_the_toolbar_until_it_is_whole(
    project: Path, terminals: list[Terminal]
) -> None:
    with SlowOpenAI(["one two three four five six seven eight nine ten"], gap=0.3) as server:
        chat = Terminal(
            project, [sys.executable, "-m", "reins", "chat", "-m", server.url, "-w", "ws", "-y"]
        )
        terminals.append(chat)
        chat.wait_for("new session ·")
        chat.line("count")
        chat.wait_for("· …one two three")  # the toolbar, as the words come
        assert "one two three four five six seven eight nine ten" not in chat.screen()
        chat.wait_for("tokens ")
        chat.line("/exit")
        screen = chat.wait_for("EXITED 0")
    assert "one two three four five six seven eight nine ten" in screen.splitlines()
