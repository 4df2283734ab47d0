"""A change to a file the run has not read, made from a guess: the file's text instead.

Small models change a file they have only found, guessing its text: `old` "http:" in a JSON
file that writes `"http": {`, a write_file of one header line over a module of twelve. Claude
Code's Edit and Write tools refuse a file not read first; here the refusal carries the file's
text (its head, for a long one), so no step is spent reading it. An edit whose `old` is in the
file (as written, or loosely: `tools._near_match`) runs all the same: the guess was right, and a
refusal cost a 1.5B model the task (it wrote the text it was shown to a new file).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core._errors import ToolError
from ..core._messages import ToolCall
from ..core._policy import CONTINUE, BeforeTool, Policy, Replace
from ..core._state import RunState
from ..tools._near_match import near_match

if TYPE_CHECKING:
    from ..tools import Workspace
    from ._guards import RunFacts

CHANGE_TOOLS = frozenset({"edit_file", "write_file"})
READ_NOTE = "Not run: this run has not read"
"""How the refusal begins: the fold of the run's messages counts the file as read after it."""
SHOWN_LINES = 120
SHOWN_CHARS = 6000
MAX_CHECKED = 256 * 1024
"""The largest file whose text is checked for an edit's `old` here (a larger one: the tool's)."""


class ReadFirst(Policy):
    """A write_file that would replace an existing text file (not add to its end), or an
    edit_file whose `old` is not in it, is not run when the run has not read that file
    (read_file, a command that named it, a change of its own, this refusal): the model gets the
    file's text instead."""

    def __init__(
        self,
        facts: RunFacts,
        workspace: Workspace,
        refused: Callable[[ToolCall], bool] = lambda call: False,
    ) -> None:
        self.facts = facts
        self.workspace = workspace
        self.refused = refused
        """Whether the run's mode refuses a call: then it is left to fail on that."""

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        if call.name not in CHANGE_TOOLS:
            return CONTINUE  # the usual case, with no fold needed
        path = call.arguments.get("path")
        if not isinstance(path, str) or _appends(call):
            return CONTINUE
        if self.workspace.runs_code(path) is not None:
            return CONTINUE  # a person is asked for each write there: not a guess to repair
        if self.facts.update(state).has_read(path) or self.refused(call):
            return CONTINUE
        text = file_text(self.workspace, path)
        if text is None or (call.name == "edit_file" and _applies(call, text)):
            return CONTINUE
        return Replace(refusal(call.name, path, text))


def _appends(call: ToolCall) -> bool:
    return call.name == "write_file" and call.arguments.get("append") in (True, "true", "True")


def _applies(call: ToolCall, text: str) -> bool:
    """Whether the edit finds its `old` (or the tool has its own error to give)."""
    old, new = call.arguments.get("old"), call.arguments.get("new")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        return True  # the tool says what is wrong with the arguments
    return old in text or near_match(text, old, new) is not None


def file_text(workspace: Workspace, path: str) -> str | None:
    """The text of the file at `path` (read through the workspace, as read_file reads it);
    None for a file that is missing, empty, not text, too big or refused: the tool reports
    those itself."""
    try:
        opened = workspace.open(path)
    except (ToolError, OSError):
        return None
    try:
        size = opened.st.st_size
        if not stat.S_ISREG(opened.st.st_mode) or not 0 < size <= MAX_CHECKED:
            return None
        data = os.pread(opened.fd, size + 1, 0)
    except OSError:
        return None
    finally:
        os.close(opened.fd)
    if b"\0" in data or len(data) > MAX_CHECKED:
        return None
    return data.decode("utf-8", errors="replace")


def refusal(tool: str, path: str, text: str) -> str:
    """What the model is told instead of the change: the file's text and what to do next."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    shown: list[str] = []
    size = 0
    for line in lines[:SHOWN_LINES]:
        if shown and size + len(line) > SHOWN_CHARS:
            break
        shown.append(line[:SHOWN_CHARS])
        size += len(line) + 1
    head = "\n".join(shown) + "\n"
    if len(shown) == len(lines):
        count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
        said = f"Its text ({count}):\n{head}[{count} in all]"
    else:
        said = f"Its first {len(shown)} lines:\n{head}[read_file with start_line={len(shown) + 1}"
        said += " reads on]"
    if tool == "write_file":
        why = "and write_file would replace all of it"
        then = (
            "To change part of it, use edit_file with old taken from this text exactly as "
            "written; to replace all of it, call write_file again."
        )
    else:
        why = "and old is not in it: a change starts from a file's text, not a guess at it"
        then = "Now make the change, with old taken from this text exactly as written."
    return f"{READ_NOTE} {path}, {why}. {said}\n{then}"
