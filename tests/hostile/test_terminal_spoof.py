"""Issue 26, item 2: text from a model, a tool or a file reached the terminal raw. A command
whose escape sequences erased its own line and drew a fake `→ run_command({"command": "ls
-la"})` in its place was approved as `ls -la`. Now every control and format character from
outside is shown as its escape (`\\x1b`, `\\r`, `\\x9b`, `\\u202e`), rich markup in it is shown
as typed, and the approval prompt shows the command verbatim and whole, each of its lines
behind a bar."""

from __future__ import annotations

import io
import json
import logging
import shutil
import sys
import unicodedata
from pathlib import Path

import pytest
import typer
from rich.console import Console

from reins import ApprovalRequest, CapOffer, QuestionRequest, ReinsError, StopReason, ToolCall
from reins.cli._approve import TerminalApprover, TerminalAsker
from reins.cli._console import WARNINGS, _one_line_errors
from reins.cli._offer import TerminalCapOffer
from reins.cli._render import EventRenderer
from reins.cli._safe import SafeConsole, visible
from reins.events import ModelRequested, Notice, QuestionAsked, RunFinished, ToolCallStarted

from ..terminal import Terminal
from ..test_cli import REINS, reins, script

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

FAKE = '→ run_command({"command": "ls -la"})'
"""What the attacker wants the user to read as the call."""

SEQUENCES = {
    # what the model or a file sends: what the user sees instead
    "\x1b[1K\x1b[1A\x1b[2K": "\\x1b[1K\\x1b[1A\\x1b[2K",  # CSI: erase, cursor up
    "\x1b]0;owned\x07": "\\x1b]0;owned\\x07",  # OSC: the window's title
    "\x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\": (
        "\\x1b]8;;https://evil.example\\x1b\\here\\x1b]8;;\\x1b\\"  # OSC 8: a hidden link
    ),
    "\x1b]52;c;cm0gLXJmIH4=\x07": "\\x1b]52;c;cm0gLXJmIH4=\\x07",  # OSC 52: the clipboard
    "\x1bP1$qm\x1b\\": "\\x1bP1$qm\\x1b\\",  # DCS
    "\x9b2J\x9d0;t\x9c\x85": "\\x9b2J\\x9d0;t\\x9c\\x85",  # C1: 8-bit CSI, OSC, ST, NEL
    "safe\rEVIL": "safe\\rEVIL",  # a bare CR writes over the line
    "rm\x08\x08ls\x07\x7f": "rm\\x08\\x08ls\\x07\\x7f",  # backspaces, BEL, DEL
    "\u202etxt.exe\u2066a\u2069": "\\u202etxt.exe\\u2066a\\u2069",  # bidi overrides, isolates
    "z\u200bw\ufeffj\U000e0041": "z\\u200bw\\ufeffj\\U000e0041",  # zero-width, a tag
}
HOSTILE = " ".join(SEQUENCES)
MARKUP = "[bold red]loud[/] [link=https://evil.example]click[/link]"
"""Rich markup from outside: shown as typed, never a style or a hyperlink."""


def hidden(screen: str) -> set[str]:
    """The characters on `screen` that a terminal obeys or hides rather than shows."""
    return {
        ch
        for ch in screen
        if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    }


def shows_every_escape(screen: str) -> bool:
    return all(shown in screen for shown in SEQUENCES.values())


def test_visible_makes_each_control_its_escape_and_keeps_layout_in_lines() -> None:
    for sent, shown in SEQUENCES.items():
        assert visible(sent) == shown
    assert visible("a\tb\r\nc\n") == "a\\tb\\r\\nc\\n"  # a name, a command: exactly
    assert visible("a\tb\r\nc\n", lines=True) == "a\tb\nc\n"  # output: lines and tabs stay
    assert visible("a\rb\n", lines=True) == "a\\rb\n"
    plain = "écrit 書く \U0001f600 C:\\dir [x] \u00a0"
    assert visible(plain) == plain  # letters, emoji, backslashes, a no-break space: as they are


# The approval prompt, on a real terminal ---------------------------------------------------


@needs_tmux
@pytest.mark.parametrize(
    "command",
    [
        f"touch pwned.txt #\x1b[1K\x1b[1A\x1b[2K\x1b[1G{FAKE}",  # the reported one
        f"touch pwned.txt\n{FAKE}",  # a second line that looks like a call
        f"touch pwned.txt #\r{FAKE}",  # a carriage return
        f"touch pwned.txt #\x9b1K\x9b1A\x9b2K\x9b1G{FAKE}",  # the 8-bit CSI
    ],
)
def test_the_approval_prompt_shows_the_real_command_and_no_fake_call_line(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "ws").mkdir()
    call = {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}
    model = script(tmp_path / "s.json", [call, "FINAL_ANSWER: done"])
    run = Terminal(tmp_path, [*REINS, "run", "go", "-m", model, "-w", "ws"])
    try:
        screen = run.wait_for("Allow?")
        run.line("n")
        run.wait_for("EXITED")
    finally:
        run.close()
    lines = screen.splitlines()
    assert not any(line.startswith(FAKE) for line in lines), screen
    asked = lines.index(next(line for line in lines if "asks for approval (" in line))
    prompt = lines[asked + 1 : next(i for i, line in enumerate(lines) if "Allow?" in line)]
    assert prompt, screen
    assert all(line.startswith("  │ ") for line in prompt), screen  # each line is the command's
    assert "\n".join(line[4:] for line in prompt) == visible(command).replace("\\n", "\n")
    assert "goal go" in screen  # nothing above was erased
    assert not (tmp_path / "ws" / "pwned.txt").exists()


# Every place outside text reaches the terminal, through the real command line ---------------


def test_run_show_replay_and_sessions_show_outside_text_with_its_controls_visible(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text(f"a file says {MARKUP} {HOSTILE}\n")
    printf = "printf '\\033[2J\\033]0;owned\\007\\302\\233done'"  # a command's own output
    replies: list[object] = [
        {
            "thinking": f"thinking {MARKUP} {HOSTILE}",
            "text": f"saying {MARKUP} {HOSTILE}",
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": f"{printf} # \u202e\x9b"}},
                {"name": "read_file", "arguments": {"path": "notes.txt"}},
                {"name": f"no_such_tool{MARKUP}\x1b[2J", "arguments": {}},
            ],
        },
        f"FINAL_ANSWER: the answer {MARKUP} {HOSTILE}",
    ]
    model = script(tmp_path / "s.json", replies)
    run = reins("run", f"go {MARKUP} {HOSTILE}", "-m", model, "-w", "ws", "-y", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    screens = {"run": run.stdout + run.stderr}
    for command in ("show", "replay"):
        done = reins(command, "last", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        screens[command] = done.stdout + done.stderr
    for name, screen in screens.items():
        assert hidden(screen) == set(), (name, screen)
        words = " ".join(screen.split())  # as wrapped to the terminal's width, and indented
        for said in ("go", "thinking", "saying", "the answer"):
            assert f"{said} {MARKUP} {visible(HOSTILE)}" in words, (name, said, screen)
        # read_file gives its lines (a CR and a NEL end one): each shown as the file has it
        assert f"a file says {MARKUP} {visible(HOSTILE[:60])}" in words, (name, screen)
        assert "\\x1b[2J\\x1b]0;owned\\x07\\x9bdone" in words, (name, screen)  # its output
        assert f"no_such_tool{MARKUP}\\x1b[2J" in words, (name, screen)  # a name, as given
        assert "# \\u202e\\x9b" in words, (name, screen)  # in the call's JSON, which keeps them
    sessions = reins("sessions", cwd=tmp_path).stdout
    assert hidden(sessions) == set(), sessions
    assert "go [bold red]" in sessions, sessions  # the goal, cut to its column


def test_json_output_writes_what_a_terminal_obeys_as_escapes_and_keeps_the_data(
    tmp_path: Path,
) -> None:
    """`--json` is read on terminals too: JSON encoders escape ESC but leave C1 (the 8-bit
    CSI), DEL, bidi and zero-width characters raw. They come out as `\\u` escapes: the same
    data to a parser."""
    (tmp_path / "ws").mkdir()
    replies = [
        {"text": f"saying {HOSTILE}", "tool_calls": [{"name": "read_file", "arguments": {}}]},
        f"FINAL_ANSWER: the answer {HOSTILE}",
    ]
    model = script(tmp_path / "s.json", replies)
    run = reins("run", f"go {HOSTILE}", "-m", model, "-w", "ws", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    outputs = {"run": run.stdout}
    for command in ("show", "replay"):
        done = reins(command, "last", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs[command] = done.stdout
    for name, output in outputs.items():
        assert hidden(output) == set(), (name, output)
    said = [json.loads(line) for line in outputs["run"].splitlines()]
    assert said[0]["goal"] == f"go {HOSTILE}"  # the data is whole
    assert said[-1]["final_answer"].startswith("the answer \x1b[1K")
    shown = json.loads(outputs["show"])  # one document, laid out over lines
    assert shown[1]["content"] == f"go {HOSTILE}"
    replayed = [json.loads(line) for line in outputs["replay"].splitlines()]
    assert replayed
    assert all(event in said for event in replayed)  # the live run also streams its deltas


def test_markup_from_outside_makes_no_style_and_no_hyperlink() -> None:
    """On a colour terminal: rich's own escapes are the only ones, and none from the text."""
    screen = io.StringIO()
    console = SafeConsole(file=screen, width=200, force_terminal=True, color_system="truecolor")
    render = EventRenderer(console)
    call = ToolCall(id="c1", name=f"x{MARKUP}", arguments={"a": MARKUP})
    render(QuestionAsked(session_id="s", run_id="r", seq=1, step=1, call_id="c", question=MARKUP,
                         choices=(MARKUP,), default=MARKUP))  # fmt: skip
    render(ToolCallStarted(session_id="s", run_id="r", seq=2, step=1, call=call))
    render(RunFinished(session_id="s", run_id="r", seq=2, stop_reason=StopReason.END_TURN,
                       final_answer=MARKUP))  # fmt: skip
    text = screen.getvalue()
    assert "\x1b]8" not in text  # no hyperlink
    assert "\x1b[1;31m" not in text  # no bold red
    plain = io.StringIO()
    same = EventRenderer(SafeConsole(file=plain, width=200))
    same(ToolCallStarted(session_id="s", run_id="r", seq=2, step=1, call=call))
    assert f"→ x{MARKUP}" in plain.getvalue()


# Each prompt and each line the renderer draws of what is asked ------------------------------


class Typed:
    """A person at the terminal typing `answers`."""

    inline = True

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)

    def prompting(self) -> None:
        pass

    async def line(self) -> str:
        return self.answers.pop(0)


def _console() -> tuple[Console, io.StringIO]:
    screen = io.StringIO()
    return SafeConsole(file=screen, width=80, highlight=False, emoji=False), screen


async def test_the_prompt_shows_a_long_command_whole_and_any_tool_call_exactly() -> None:
    console, screen = _console()
    long = "echo " + "a" * 300 + f" {HOSTILE}"
    request = ApprovalRequest(
        session_id="s",
        run_id="r",
        call=ToolCall(id="c", name="run_command", arguments={"command": long}),
        rule="default: run_command asks",
        grant="echo",
        command_arg="command",
    )
    await TerminalApprover(console, Typed("n"))(request)
    write = ApprovalRequest(
        session_id="s",
        run_id="r",
        call=ToolCall(id="c", name="write_file", arguments={"path": f"a{HOSTILE}", "content": ""}),
        rule=f"a project's rule {HOSTILE}",
        grant="write_file",
    )
    await TerminalApprover(console, Typed("n"))(write)
    text = screen.getvalue()
    assert hidden(text) == set(), text
    block = [line[4:] for line in text.splitlines() if line.startswith("  │ ")]
    assert "".join(block).startswith(visible(long))  # whole: wrapped, never cut
    assert shows_every_escape(text)
    assert "a project's rule \\x1b[1K" in text


async def test_the_question_its_choices_and_the_cap_offer_show_controls_visible() -> None:
    console, screen = _console()
    question = QuestionRequest(
        session_id="s",
        run_id="r",
        call_id="c",
        question=f"which? {HOSTILE}",
        choices=(f"one {HOSTILE}", "two"),
        default=f"one {HOSTILE}",
    )
    assert await TerminalAsker(console, Typed("2"))(question) == "two"
    offer = CapOffer(
        session_id="s",
        run_id="r",
        reason=StopReason.MAX_STEPS,
        detail=f"reached {HOSTILE}",
        choices=("+20 steps",),
    )
    assert await TerminalCapOffer(console, Typed("s"))(offer) is None
    render = EventRenderer(console)
    render(ModelRequested(session_id="s", run_id="r", seq=1, step=1))
    render(QuestionAsked(session_id="s", run_id="r", seq=2, step=1, call_id="c",
                         question=HOSTILE, choices=(HOSTILE,), default=HOSTILE))  # fmt: skip
    render(Notice(session_id="s", run_id="r", seq=3, source=f"Policy{MARKUP}", text=HOSTILE))
    render(RunFinished(session_id="s", run_id="r", seq=4, stop_reason=StopReason.ERROR,
                       detail=f"the model sent {HOSTILE}"))  # fmt: skip
    text = screen.getvalue()
    assert hidden(text) == set(), text
    assert shows_every_escape(text)
    assert f"(Policy{MARKUP})" in " ".join(text.split())


def test_an_error_or_a_warning_quoting_outside_text_shows_its_controls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit), _one_line_errors():
        raise ReinsError(f"the server said: {HOSTILE} {MARKUP}")
    WARNINGS.emit(logging.LogRecord("reins", logging.WARNING, "", 0, HOSTILE, None, None))
    said = capsys.readouterr().err
    assert hidden(said) == set(), said
    assert f"error: the server said: {visible(HOSTILE)} {MARKUP}" in said
    assert said.count("\\x1b[1K\\x1b[1A\\x1b[2K") == 2


# reins chat: prompt_toolkit passes what it is given to the terminal raw ----------------------


@needs_tmux
def test_chat_shows_a_reply_and_a_tool_output_with_their_controls_visible(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    replies: list[object] = [
        {
            "text": f"clearing\x1b[2J\x1b[H\r{FAKE} {MARKUP}",
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "printf 'out\\033[2J\\033[H'"}}
            ],
        },
        f"FINAL_ANSWER: done\x1b]0;owned\x07 {MARKUP}",
    ]
    (tmp_path / "s.json").write_text(json.dumps(replies))
    chat = Terminal(
        tmp_path,
        [sys.executable, "-m", "reins", "chat", "-m", f"script:{tmp_path / 's.json'}", "-w", "ws",
         "-y"],
    )  # fmt: skip
    try:
        chat.wait_for("new session ·")
        chat.line("go")
        screen = chat.wait_for("tokens ")
        chat.line("/exit")
        chat.wait_for("EXITED")
    finally:
        chat.close()
    assert "reins chat" in screen  # the banner was not cleared away
    assert f"clearing\\x1b[2J\\x1b[H\\r{FAKE} {MARKUP}" in screen, screen
    assert "← run_command exit code: 0\n  out\\x1b[2J\\x1b[H" in screen, screen
    assert f"done\\x1b]0;owned\\x07 {MARKUP}" in screen, screen
    assert not any(line.startswith(FAKE) for line in screen.splitlines()), screen
