"""Near-repeats of a read: the same file read again, with another line range or whole, after
the run read all of it. Small models reread a found answer until the step cap; the lines asked
for are given from what was read, with a nudge to answer, as long as the file still holds
exactly what was read (checked against its bytes: a change by a tool or from outside is read
for real)."""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any

from ..core._errors import ToolError
from ..core._messages import ToolCall

if TYPE_CHECKING:
    from ..tools import Workspace

READ_TOOL = "read_file"
_ARGS = frozenset({"path", "start_line", "end_line"})
_WHOLE = re.compile(r"\n\[(\d+) lines? in all\]\Z")
"""How read_file ends a read that went to the end of the file, in one page."""


def whole_read(call: ToolCall, content: str) -> tuple[str, int] | None:
    """The text and the number of lines of the file `call` read, if it read all of it (from
    line 1, to its end, in one page, as text); else None."""
    if not content.endswith(" in all]"):
        return None  # the usual read: a range, a page, an error, a file cut short
    args = call.arguments
    if not args.keys() <= _ARGS or args.get("end_line") is not None:
        return None
    if _line(args.get("start_line", 1)) != 1:
        return None
    found = _WHOLE.search(content)
    if found is None:
        return None
    text, count = content[: found.start()], int(found.group(1))
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return (text, count) if lines == count else None


def lines_asked(call: ToolCall, text: str, count: int) -> tuple[str, int, int] | None:
    """What read_file gives for `call`'s range of a file of `text` (`count` lines), and the
    range's first and last line; None for a range it would refuse or report past the end."""
    start = _line(call.arguments.get("start_line", 1))
    end = call.arguments.get("end_line")
    last = count if end is None else _line(end)
    if start is None or last is None or not 1 <= start <= count or last < start:
        return None
    last = min(last, count)
    parts = text.split("\n")
    page = "\n".join(parts[start - 1 : last])
    if last < count or text.endswith("\n"):
        page += "\n"
    if last < count:
        return f"{page}\n[{count} lines in all; read on with start_line={last + 1}]", start, last
    return f"{page}\n[{count} lines in all]", start, last


def unchanged(workspace: Workspace, path: str, text: str) -> bool:
    """Whether the file at `path` holds exactly `text` now (read through the workspace, as
    the tool reads it; anything odd counts as changed)."""
    expected = text.encode()
    try:
        opened = workspace.open(path)
    except (ToolError, OSError):
        return False
    try:
        if not stat.S_ISREG(opened.st.st_mode) or opened.st.st_size != len(expected):
            return False
        return os.pread(opened.fd, len(expected) + 1, 0) == expected
    except OSError:
        return False
    finally:
        os.close(opened.fd)


def _line(value: Any) -> int | None:
    """A line number as a model may send it (7, "7"), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None
