"""A change to a file the run has not read: its text instead of the change.

Small models edit a file they have only found, guessing its text: `old` "http:" in a JSON file
that writes `"http": {`, `old` "version" replaced by "1.3.0" (leaving `"1.3.0": "1.2.9"`), a
write_file of one line over a module of twelve. Claude Code's Edit and Write tools refuse a file
not read first; here the refusal carries the file's text (its head, for a long one), so no step
is spent reading it, and the next call can copy `old` from what is really there.
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

if TYPE_CHECKING:
    from ..tools import Workspace
    from ._guards import RunFacts

CHANGE_TOOLS = frozenset({"edit_file", "write_file"})
READ_NOTE = "Not run: this run has not read"
"""How the refusal begins: the fold of the run's messages counts the file as read after it."""
SHOWN_LINES = 120
SHOWN_CHARS = 6000


class ReadFirst(Policy):
    """An edit_file, or a write_file that would replace a file (not one adding to its end), of
    an existing text file that this run has not read (read_file, a command that named it, a
    change of its own, this refusal) is not run: the model gets the file's text instead."""

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
        if self.facts.update(state).has_read(path) or self.refused(call):
            return CONTINUE
        head = file_head(self.workspace, path)
        if head is None:
            return CONTINUE
        return Replace(refusal(call.name, path, *head))


def _appends(call: ToolCall) -> bool:
    return call.name == "write_file" and call.arguments.get("append") in (True, "true", "True")


def file_head(workspace: Workspace, path: str) -> tuple[str, int, int | None] | None:
    """The first lines of the text file at `path` (read through the workspace, as read_file
    reads it), how many they are, and its number of lines (None: longer than was read); None
    for a file that is missing, empty, not text or refused: the tool reports those itself."""
    try:
        opened = workspace.open(path)
    except (ToolError, OSError):
        return None
    try:
        if not stat.S_ISREG(opened.st.st_mode) or opened.st.st_size == 0:
            return None
        data = os.pread(opened.fd, SHOWN_CHARS * 4 + 1, 0)
    except OSError:
        return None
    finally:
        os.close(opened.fd)
    if b"\0" in data:
        return None
    whole = len(data) == opened.st.st_size
    text = data.decode("utf-8", errors="replace")
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
    return "\n".join(shown) + "\n", len(shown), len(lines) if whole else None


def refusal(tool: str, path: str, head: str, shown: int, count: int | None) -> str:
    """What the model is told instead of the change: the file's text and what to do next."""
    if count == shown:
        lines = f"{count} line{'s' if count != 1 else ''}"
        text = f"Its text ({lines}):\n{head}[{lines} in all]"
    else:
        text = f"Its first {shown} lines:\n{head}[read_file with start_line={shown + 1} reads on]"
    if tool == "write_file":
        why = "and write_file would replace all of it"
        then = (
            "To change part of it, use edit_file with old copied exactly from this text; "
            "to replace all of it, call write_file again."
        )
    else:
        why = "and a change starts from a file's text, not a guess at it"
        then = "Now make the change, with old copied exactly from this text."
    return f"{READ_NOTE} {path}, {why}. {text}\n{then}"
