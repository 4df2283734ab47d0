"""A change half done: what a run's edits replaced that still occurs in the workspace.

A rename that updates the definition and not its callers reads as done to a small model. When
an `edit_file` replaced a name (an identifier the new text no longer holds, where it put
another), the files the run touched, then the other files of the workspace that git would not
ignore (small, text), are searched for the old name, within bounds; what is found, and a short
diff of each edit, is what the done-check shows before the answer stands.
"""

from __future__ import annotations

import difflib
import keyword
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core._errors import ToolError
from ..core._messages import ToolCall

if TYPE_CHECKING:
    from ..tools import Workspace

EDIT_TOOL = "edit_file"
WRITE_TOOL = "write_file"
MAX_FILES = 2000
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_HITS = 10
MAX_DIFF_LINES = 12
MAX_EDITS_SHOWN = 6

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERALS = frozenset(
    {"true", "false", "null", "none", "yes", "no", "on", "off", "nil", "undefined", "self"}
)
"""Words an edit of a value replaces (`"debug": true` -> `false`) that are no name to rename."""


def replaced_names(old: str, new: str) -> list[str]:
    """The names an edit of `old` into `new` replaced: identifiers (3 characters or more, no
    keyword or literal) that `old` has and `new` lacks, one or two of them, where `new` brings
    a name of its own (a rename, a replace); none for a deletion or a rewrite."""
    if not new.strip():
        return []
    before = set(_NAME.findall(old))
    after = set(_NAME.findall(new))
    gone = sorted(
        w
        for w in before - after
        if len(w) >= 3 and not keyword.iskeyword(w) and w.lower() not in _LITERALS
    )
    if not gone or len(gone) > 2 or not after - before:
        return []
    return gone


def renamed(old: str, new: str) -> tuple[str, str] | None:
    """(old name, new name) when an edit replaced exactly one name by exactly one other (a
    rename: `def get_user(` -> `def fetch_user(`), else None."""
    gone = replaced_names(old, new)
    brought = set(_NAME.findall(new)) - set(_NAME.findall(old))
    if len(gone) == 1 and len(brought) == 1:
        return gone[0], brought.pop()
    return None


def edit_names(edits: Iterable[ToolCall]) -> list[str]:
    """The names the run's edits replaced, in the order first replaced."""
    names: dict[str, None] = {}
    for call in edits:
        if call.name != EDIT_TOOL:
            continue
        old, new = call.arguments.get("old"), call.arguments.get("new")
        if isinstance(old, str) and isinstance(new, str):
            names.update(dict.fromkeys(replaced_names(old, new)))
    return list(names)


_GOAL_OLD = re.compile(
    r"\b(?:replace|rename)\s+(?:(?:the|every|all)\s+)?(?:(?:function|class|constant|variable"
    r"|method|name|word|string|text|url|link|import)s?\s+)?[`'\"]?(?P<old>[^\s`'\"]+)[`'\"]?"
    r"\s+(?:with|to|by)\s",
    re.IGNORECASE,
)


def goal_names(goal: str, edits: Iterable[ToolCall]) -> list[str]:
    """What the goal asks to replace ("replace http://a.org with ...", "rename the function
    get_user to ...") where an edit of the run replaced it: a URL is no identifier, so
    `replaced_names` misses it."""
    olds = [m.group("old").rstrip(".,;:") for m in _GOAL_OLD.finditer(goal)]
    edited = [
        (str(call.arguments.get("old")), str(call.arguments.get("new")))
        for call in edits
        if call.name == EDIT_TOOL
    ]
    return [  # a deletion (an empty new) is no replacement
        x
        for x in olds
        if len(x) >= 3 and any(x in old and x not in new and new.strip() for old, new in edited)
    ]


_GOAL_FOLDER = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)+)(?![\w/])")
"""A folder written with its slash (`docs/`, `src/app/`), not a URL's path."""


def goal_folders(goal: str) -> list[str]:
    """The folders a goal names ("in every file under docs/"): where the rest of a change
    belongs, not the README beside them."""
    folders = (posixpath.normpath(m[1]) for m in _GOAL_FOLDER.finditer(goal))
    return list(dict.fromkeys(f for f in folders if f != "."))


def leftovers(
    workspace: Workspace,
    names: Sequence[str],
    touched: Sequence[str],
    within: Sequence[str] = (),
) -> list[str]:
    """Lines (`path:line: text`) where one of `names` still occurs as a whole word: the files
    in `touched` first, then the workspace's others that its .gitignore files keep (only those
    under the folders `within`, if given; at most `MAX_FILES` files of `MAX_FILE_BYTES`,
    `MAX_TOTAL_BYTES` in all); `MAX_HITS` at most."""
    from ..tools._stop import Stop  # the walk checks in with one; nobody abandons this one

    # as a whole word: no word character next to it (a URL may begin or end with none)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, names)) + r")(?!\w)")
    hits: list[str] = []
    budget = [MAX_FILES, MAX_TOTAL_BYTES]
    seen: set[str] = set()
    for path in touched:
        try:
            opened = workspace.open(path)
        except (ToolError, OSError):
            continue
        seen.add(opened.rel)
        _search(opened.fd, opened.st, opened.rel, pattern, hits, budget)
        if len(hits) >= MAX_HITS:
            return hits
    try:
        root = workspace.open(".", folder=True)
    except (ToolError, OSError):
        return hits
    try:
        for found in workspace.walk(root, Stop()):
            if found.rel in seen or not _under(found.rel, within):
                continue
            if budget[0] <= 0 or budget[1] <= 0:
                break
            try:
                opened = workspace.open_found(found)
            except (ToolError, OSError):
                continue
            _search(opened.fd, opened.st, found.rel, pattern, hits, budget)
            if len(hits) >= MAX_HITS:
                break
    finally:
        os.close(root.fd)
    return hits


def _under(path: str, folders: Sequence[str]) -> bool:
    return not folders or any(path.startswith(folder + "/") for folder in folders)


def _search(
    fd: int,
    st: os.stat_result,
    rel: str,
    pattern: re.Pattern[str],
    hits: list[str],
    budget: list[int],
) -> None:
    """The file's matching lines into `hits` (closes `fd`); a big or binary file is skipped."""
    try:
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return
        budget[0] -= 1
        budget[1] -= st.st_size
        data = os.pread(fd, MAX_FILE_BYTES, 0)
    except OSError:
        return
    finally:
        os.close(fd)
    if b"\0" in data[:8192]:
        return
    text = data.decode("utf-8", errors="replace")
    if pattern.search(text) is None:
        return
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line):
            hits.append(f"{rel}:{number}: {line.strip()[:160]}")
            if len(hits) >= MAX_HITS:
                return


def edits_shown(edits: Sequence[tuple[ToolCall, tuple[str, ...]]]) -> str:
    """A short diff of each change, in order: an edit's old and new lines, a write's size."""
    parts: list[str] = []
    for call, paths in edits[-MAX_EDITS_SHOWN:]:
        path = paths[0] if paths else "?"
        args = call.arguments
        old, new = args.get("old"), args.get("new")
        if call.name == EDIT_TOOL and isinstance(old, str) and isinstance(new, str):
            lines = list(
                difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1)
            )[2:]  # no ---/+++ header: the path is said
            if len(lines) > MAX_DIFF_LINES:
                lines = [*lines[:MAX_DIFF_LINES], f"… ({len(lines) - MAX_DIFF_LINES} more lines)"]
            every = " (every occurrence)" if args.get("replace_all") else ""
            parts.append(f"{path}{every}:\n" + "\n".join(lines))
        elif call.name == WRITE_TOOL and isinstance(args.get("content"), str):
            content: str = args["content"]
            how = "appended to" if args.get("append") else "written whole"
            parts.append(f"{path}: {how} ({len(content.splitlines())} lines)")
        else:
            parts.append(f"{path}: changed by {call.name}")
    if len(edits) > MAX_EDITS_SHOWN:
        parts.insert(0, f"({len(edits) - MAX_EDITS_SHOWN} earlier changes not shown)")
    return "\n".join(parts)
