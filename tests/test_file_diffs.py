"""A write or an edit records what it changed as a short unified diff, for people: the event
holds it, the terminal shows it coloured under the call, and the model never sees it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from rich.console import Console

from reins import Agent, ToolCall, ToolContext, ToolResultMessage, Workspace
from reins.cli._render import EventRenderer
from reins.events import EVENT, ToolCallFinished, ToolCallStarted
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, ToolExecutor

from .helpers import call, reply


async def changed(workspace: Path, name: str, **arguments: object) -> tuple[str, str | None]:
    """The call's observation (it must succeed) and the diff the executor kept for it."""
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    executor = ToolExecutor(list(BUILTIN_TOOLS), context=ctx)
    result = await executor.execute(ToolCall(id="c", name=name, arguments=arguments))
    assert not result.is_error, result.content
    diff = executor.take_diff("c")
    assert executor.take_diff("c") is None  # taken once
    return result.content, diff


async def test_an_edit_s_diff_is_in_its_event_and_not_in_what_the_model_gets(
    workspace: Path,
) -> None:
    (workspace / "f.py").write_text("a = 0\nx = 1\nb = 2\n")
    replies = [
        reply("", call("edit_file", "e", path="f.py", old="x = 1", new="x = 2")),
        reply("", call("read_file", "r", path="f.py")),
        "done",
    ]
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, tools=list(BUILTIN_TOOLS))
    events = [e async for e in agent.iter("change x")]
    edit, read = [e for e in events if isinstance(e, ToolCallFinished)]
    assert edit.diff == "--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n a = 0\n-x = 1\n+x = 2\n b = 2"
    observation = "Replaced 1 occurrence in f.py; the lines now read:\n2: x = 2"
    assert edit.result.content == observation  # as before: the diff is not in it
    messages = (await agent.state(edit.run_id)).messages  # what the model is sent
    told = [m.content for m in messages if isinstance(m, ToolResultMessage)]
    assert told[0] == observation
    # In the log: a call that changed no file has no diff field at all (as logs had before).
    assert json.loads(EVENT.dump_json(edit))["diff"] == edit.diff
    assert "diff" not in json.loads(EVENT.dump_json(read))
    assert EVENT.validate_json(EVENT.dump_json(edit)) == edit


async def test_a_new_file_diffs_from_nothing(workspace: Path) -> None:
    text, diff = await changed(workspace, "write_file", path="d/new.txt", content="a\nb\n")
    assert text == "Wrote 4 bytes to d/new.txt"
    assert diff == "--- /dev/null\n+++ b/d/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b"


async def test_an_overwrite_diffs_from_the_text_written_over(workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\ntwo\nthree\n")
    text, diff = await changed(workspace, "write_file", path="f.txt", content="one\n2\nthree\n")
    assert text == "Wrote 12 bytes to f.txt"
    assert diff == "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
    assert await changed(workspace, "write_file", path="f.txt", content="one\n2\nthree\n") == (
        "Wrote 12 bytes to f.txt",
        None,  # nothing changed
    )


async def test_an_append_diffs_the_whole_file_before_and_after(workspace: Path) -> None:
    (workspace / "log.txt").write_text("a\nb")  # ends mid-line: the append starts a line
    text, diff = await changed(workspace, "write_file", path="log.txt", content="c\n", append=True)
    assert text == "Appended 2 bytes to log.txt"
    assert diff == (
        "--- a/log.txt\n+++ b/log.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n"
        "+b\n+c"
    )


async def test_replace_all_and_a_loose_match_diff_the_file_s_own_text(workspace: Path) -> None:
    (workspace / "m.txt").write_text("x\ny\nx\n")
    _, diff = await changed(
        workspace, "edit_file", path="m.txt", old="x", new="z", replace_all=True
    )
    assert diff == "--- a/m.txt\n+++ b/m.txt\n@@ -1,3 +1,3 @@\n-x\n+z\n y\n-x\n+z"
    (workspace / "c.yml").write_text('web:\n  ports:\n    - "8000:8000"\n')
    text, diff = await changed(
        workspace, "edit_file", path="c.yml", old='ports: - "8000:8000"', new='ports: - "80:8000"'
    )
    assert "matched with the file's whitespace" in text
    assert "@@" not in text
    assert diff is not None
    assert diff.splitlines()[-2:] == ['-    - "8000:8000"', '+    - "80:8000"']  # as written


async def test_binary_undecodable_huge_or_failed_changes_have_no_diff(workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02")
    assert await changed(workspace, "write_file", path="b.bin", content="text\n") == (
        "Wrote 5 bytes to b.bin",
        None,
    )
    (workspace / "l1.txt").write_bytes(b"caf\xe9\n")  # Latin-1: not UTF-8
    assert (await changed(workspace, "write_file", path="l1.txt", content="cafe\n"))[1] is None
    (workspace.parent / "secret.txt").write_text("outside\n")  # a hard link's other name
    os.link(workspace.parent / "secret.txt", workspace / "linked.txt")
    assert (await changed(workspace, "write_file", path="linked.txt", content="in\n"))[1] is None
    (workspace / "big.txt").write_text("x" * 1_000_001)
    assert (await changed(workspace, "write_file", path="big.txt", content="small\n"))[1] is None
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    executor = ToolExecutor(list(BUILTIN_TOOLS), context=ctx)
    edit = ToolCall(id="e", name="edit_file", arguments={"path": "b.bin", "old": "q", "new": "r"})
    assert (await executor.execute(edit)).is_error
    assert executor.take_diff("e") is None


async def test_a_big_change_is_cut_and_says_how_much_more(workspace: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(500))
    text, diff = await changed(workspace, "write_file", path="many.txt", content=content)
    assert diff is not None
    assert "line" not in text
    lines = diff.split("\n")
    # 2 headers, 1 hunk line, 500 added: 60 kept, then the count of the rest
    assert lines[:4] == ["--- /dev/null", "+++ b/many.txt", "@@ -0,0 +1,500 @@", "+line 0"]
    assert len(lines) == 61
    assert lines[-1] == "… 443 more lines"
    _, diff = await changed(workspace, "write_file", path="wide.txt", content="y" * 50_000)
    assert diff is not None
    assert len(diff) < 500
    assert diff.split("\n")[3] == "+" + "y" * 299 + "…"  # 300 characters, then the cut


def _finished(diff: str | None, *, is_error: bool = False) -> ToolCallFinished:
    result = ToolResultMessage(
        call_id="e", name="edit_file", content="Replaced 1 occurrence in f.py", is_error=is_error
    )
    return ToolCallFinished(session_id="s", run_id="r", seq=3, step=1, result=result, diff=diff)


def _rendered(*events: ToolCallStarted | ToolCallFinished, color: bool = False) -> str:
    screen = io.StringIO()
    console = Console(
        file=screen,
        width=100,
        highlight=False,
        emoji=False,
        force_terminal=color,
        color_system="standard" if color else None,
    )
    render = EventRenderer(console)
    for event in events:
        render(event)
    return screen.getvalue()


DIFF = "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n a = 0\n-x = 1\n+x = 2"


def test_the_terminal_shows_the_diff_under_the_call() -> None:
    edit = ToolCall(id="e", name="edit_file", arguments={"path": "f.py", "old": "x", "new": "y"})
    started = ToolCallStarted(session_id="s", run_id="r", seq=2, step=1, call=edit)
    shown = _rendered(started, _finished(DIFF)).splitlines()
    assert shown[0].startswith("→ edit_file(")
    assert shown[1:] == [
        "← edit_file Replaced 1 occurrence in f.py",
        "  --- a/f.py",
        "  +++ b/f.py",
        "  @@ -1,2 +1,2 @@",
        "   a = 0",
        "  -x = 1",
        "  +x = 2",
    ]
    coloured = _rendered(_finished(DIFF), color=True)
    assert "\x1b[32m+x = 2" in coloured  # green
    assert "\x1b[31m-x = 1" in coloured  # red
    assert "\x1b[36m@@ -1,2 +1,2 @@" in coloured  # cyan
    assert "\x1b[2m--- a/f.py" in coloured  # dim


def test_the_terminal_cuts_a_long_diff_and_shows_none_for_a_failed_call() -> None:
    long = "\n".join(["--- a/f", "+++ b/f", "@@ -1,70 +1,70 @@", *(f"+{i}" for i in range(67))])
    shown = _rendered(_finished(long + "\n… 100 more lines")).splitlines()
    assert len(shown) == 1 + 12 + 1
    assert shown[-2] == "  +8"
    assert shown[-1] == "  … (158 more lines)"  # 70 - 12 shown here, and the 100 cut before
    assert _rendered(_finished(DIFF, is_error=True)).splitlines() == [
        "← edit_file Replaced 1 occurrence in f.py"
    ]
    assert _rendered(_finished(None)).splitlines() == ["← edit_file Replaced 1 occurrence in f.py"]
