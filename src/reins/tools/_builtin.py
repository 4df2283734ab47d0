"""Built-in tools: files, search and commands, all confined to the workspace."""

from __future__ import annotations

import dataclasses
import os
import posixpath
import re
import stat
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate, pairwise
from typing import TYPE_CHECKING, Annotated

from ..core._errors import ToolError, UsageError
from ..core._media import Document, Image, media_from_bytes, sniff
from ..sandbox import SandboxPolicy
from ._calculate import calculate
from ._diff import MAX_TEXT_CHARS, short_diff
from ._escapes import ArgKind
from ._fs import READ, Opened, Target, kind, replace_file
from ._lines import Lines, is_binary
from ._names import as_listed
from ._near_match import near_match, similar_lines
from ._patterns import Regex, glob_spec
from ._stop import Stop
from ._stop import current as current_stop
from ._syntax import MAX_CHECK_CHARS, judge, judged
from ._tool import Tool, ToolContext, WithDiff, tool
from ._workspace import ALWAYS_IGNORED

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

MAX_READ_LINES = 2000
MAX_READ_CHARS = 24_000
"""A page of read_file stays below the executor's output cap, so nothing is cut mid-page."""
MAX_LINE_CHARS = 20_000
MAX_GREP_LINE_CHARS = 64 * 1024
"""grep matches the head of a longer line."""
MISSING = "list_files shows what is there, and write_file creates a file"
"""After "does not exist": small models look for the file they were asked to create, again
and again; this tells them how to make it."""
MAX_SCAN_BYTES = 64 * 1024 * 1024
"""read_file, and grep in each file, stop reading after this much."""
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_LIST_ENTRIES = 1000
MAX_GREP_MATCHES = 200
MAX_COMMAND_OUTPUT = 1_000_000
"""Bytes of a command's output kept (its head and tail): what a spilled result can hold."""


def _stoppable(t: Tool) -> Tool:
    """A file tool checks in with its call's Stop, so a timeout really stops it."""
    return replace(t, stoppable=True)


@_stoppable
@tool(read_only=True, path_args=("path",))
def read_file(
    ctx: ToolContext, path: str, start_line: int = 1, end_line: int | None = None
) -> str | Image | Document:
    """Read a text file, or a range of its lines. An image (PNG, JPEG, GIF, WebP) or a PDF
    comes back as itself if you take images and documents.

    Args:
        path: File path, relative to the workspace root.
        start_line: First line to return, counting from 1.
        end_line: Last line to return (inclusive); omit to read to the end.
    """
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise ToolError(f"bad line range {start_line}-{end_line}; lines count from 1")
    stop = current_stop()
    with _regular_file(ctx, path) as opened:
        size = opened.st.st_size
        if sniff(os.pread(opened.fd, 16, 0)) is not None:
            return _media(opened.fd, path, size)
        if is_binary(opened.fd):
            raise ToolError(f"{path!r} is a binary file")
        lines = Lines(opened.fd, size=size, head=MAX_LINE_CHARS, budget=MAX_SCAN_BYTES, stop=stop)
        text, last, next_line = _page(lines, start_line, end_line)
        if next_line is None:
            return text
        if start_line > max(last, 1) and lines.ended:  # (an empty file reads as "")
            return f"[{path} has {last} lines; start_line={start_line} is past its end]"
        if end_line is not None and next_line > end_line:  # the range ended, not the page
            total = f"{last} lines in all" if lines.ended else "more lines follow"
            return f"{text}\n[{total}; read on with start_line={next_line}]"
        return text + _read_note(lines, size, last, next_line)


def _media(fd: int, path: str, size: int) -> Image | Document:
    """The image or document in the file (the model is sent it where it takes them; one that
    does not is told it was given and not sent)."""
    if size > Document.limit:
        raise ToolError(f"{path!r} is {size} bytes: too big to send to a model")
    try:
        return media_from_bytes(_read_at_most(fd, size + 1), name=path)
    except UsageError as exc:
        raise ToolError(str(exc)) from None


def _page(lines: Lines, start_line: int, end_line: int | None) -> tuple[str, int, int | None]:
    """The page from `start_line`, the number of lines seen (all of them, if the page is cut
    short: the rest are counted), and the line to read on from (0: none; None: the page is
    the whole range asked for, up to `end_line`, and no line after it was seen)."""
    page: list[str] = []
    size = number = shown = 0  # characters and lines in the page, lines before this batch
    batches = iter(lines)
    for batch, cuts in batches:
        first = max(start_line - number - 1, 0)
        end = len(batch) if end_line is None else min(len(batch), end_line - number)
        newline = not (lines.unterminated and end == len(batch))
        take = batch[first:end] if first < end else []
        bulk = "\n".join(take) + "\n" * newline if take and not cuts else ""
        if bulk and shown + len(take) <= MAX_READ_LINES and size + len(bulk) <= MAX_READ_CHARS:
            page.append(bulk)  # the common case, without a step per line
            size, shown = size + len(bulk), shown + len(take)
        else:
            for i in range(first, end):
                line = batch[i]
                if i in cuts:
                    line = f"{line} [... {cuts[i]} more bytes on this line]"
                if newline or i < len(batch) - 1:
                    line += "\n"
                if shown == MAX_READ_LINES or (shown and size + len(line) > MAX_READ_CHARS):
                    rest = len(batch) - i - 1 + sum(len(b) for b, _ in batches)
                    return "".join(page), number + i + 1 + rest, number + i + 1
                page.append(line)
                size, shown = size + len(line), shown + 1
        number += len(batch)
        if end_line is not None and number >= end_line:
            # lines past the range in this batch: say so, or a model reads on line by line
            return "".join(page), number, end_line + 1 if number > end_line else None
    return "".join(page), number, 0


def _read_note(lines: Lines, size: int, last: int, next_line: int) -> str:
    """What a page leaves out: where to read on, and what was not read at all."""
    notes = []
    if next_line:
        whole = lines.ended and lines.binary_at is None
        total = f"{last} lines in all" if whole else "more lines follow"
        notes.append(f"{total}; read on with start_line={next_line}")
    if lines.binary_at is not None:
        notes.append(f"binary data from byte {lines.binary_at} on (of {size}) not shown")
    elif not lines.ended:
        notes.append(f"stopped reading after {lines.read} of {size} bytes")
    if not notes and last and next_line == 0 and lines.ended:
        # Read to its end: its length said, as `cat -n` shows it (small models miscount).
        notes.append("1 line in all" if last == 1 else f"{last} lines in all")
    return f"\n[{'; '.join(notes)}]" if notes else ""


@_stoppable
@tool(path_args=("path",))
def write_file(ctx: ToolContext, path: str, content: str, append: bool = False) -> str | WithDiff:
    """Create a text file, replace its whole content, or add to its end; parent folders are
    created. To change part of a file, use edit_file. A write to a file that runs code later
    (anything in .git/ or .reins/, .envrc, .vscode/tasks.json, .pre-commit-config.yaml and the
    like) needs a person's approval of that call.

    Args:
        path: File path, relative to the workspace root.
        content: The file's whole new content (with append: the text to add at its end).
        append: Add content at the end of the file instead of replacing what it holds.
    """
    stop = current_stop()
    target = ctx.workspace.locate_for_write(path, stop)
    try:
        text = content
        before = None
        if append and target.mode is not None:
            before = _whole_text(target, path)
            # a line appended to a file that ends mid-line starts a line of its own
            gap = "\n" if before and not before.endswith("\n") and content else ""
            text = before + gap + content
        data = text.encode()
        note = _parse_note(ctx, target, data, before) or _emptied_note(target, data)
        # what the diff starts from: the text appended to, none (new), or that written over
        old = before if before is not None else "" if target.mode is None else _text_to_diff(target)
        replace_file(target, data, stop)
    finally:
        os.close(target.dir_fd)
    if append:
        said = f"Appended {len(content.encode())} bytes to {as_listed(target.rel)}{note}"
    else:
        said = f"Wrote {len(data)} bytes to {as_listed(target.rel)}{note}"
    return _with_diff(said, target, old, text)


def _with_diff(said: str, target: Target, before: str | None, after: str) -> str | WithDiff:
    """The tool's text, and the change it made as a short diff for people (the model gets
    the text alone); `before` None: the old content is not one to show (see `_text_to_diff`)."""
    if before is None:
        return said
    diff = short_diff(as_listed(target.rel), before, after, new=target.mode is None)
    return WithDiff(said, diff) if diff else said


def _emptied_note(target: Target, data: bytes) -> str:
    """An empty write over a file that held something: small models "delete" a file so, and
    answer that it is gone."""
    if data or target.mode is None:
        return ""
    try:
        held = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False).st_size
    except OSError:
        return ""
    return (
        f"\n[{as_listed(target.rel)} is now empty (it held {held} bytes); it still exists]"
        if held
        else ""
    )


def _parse_note(ctx: ToolContext, target: Target, data: bytes, before: str | None) -> str:
    """What to say of a write that leaves a file a parser reads unparsable when it parsed
    before (a new one: at all): a note for its result, or, when the run refuses such a write,
    a ToolError before anything is written; "" when it parses, or is not judged."""
    if ctx.syntax_check == "off" or not judged(target.rel):
        return ""
    new = target.mode is None
    if before is None and not new:
        before = _text_to_judge(target)
        if before is None:  # too big to judge, or not text
            return ""
    broken = judge(target.rel, before, data.decode("utf-8", errors="replace"))
    if broken is None:
        return ""
    name = as_listed(target.rel)
    if ctx.syntax_check == "refuse":
        raise ToolError(
            f"not written: {name} would not parse as {broken.kind} ({broken}); "
            + ("no file was made" if new else "the file is left as it was")
        )
    if new:
        return f"\n[{name} does not parse as {broken.kind}: {broken}]"
    return f"\n[{name} no longer parses as {broken.kind}: {broken}; it did before this change]"


def _text_to_judge(target: Target) -> str | None:
    """The text of the file a write replaces, if it is small enough to parse (else None)."""
    data = _small_file(target, MAX_CHECK_CHARS)
    return None if data is None else data.decode("utf-8", errors="replace")


def _text_to_diff(target: Target) -> str | None:
    """The text of the file a write replaces, if it is UTF-8 small enough to diff and has no
    other links (else None)."""
    data = _small_file(target, MAX_TEXT_CHARS, one_link=True)
    try:
        return None if data is None else data.decode()
    except UnicodeDecodeError:
        return None


def _small_file(target: Target, limit: int, *, one_link: bool = False) -> bytes | None:
    """The bytes of the file a write replaces: None if it is gone, not a regular file, over
    `limit` bytes, or binary (`one_link`: or has other links, which may be outside the
    workspace: what it holds is not shown)."""
    try:
        fd = os.open(target.name, READ, dir_fd=target.dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (one_link and st.st_nlink > 1):
            return None
        data = _read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if b"\0" in data or len(data) > limit:
        return None
    return data


@_stoppable
@tool(path_args=("path",))
def edit_file(
    ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False
) -> str | WithDiff:
    """Replace an exact piece of text in a file (new empty: delete it; a whole line deleted
    goes with its line break). Files that run code later need a person's approval, as with
    write_file.

    Args:
        path: File path, relative to the workspace root.
        old: The exact text to replace, whitespace included; it must occur exactly once
            unless replace_all is true.
        new: The text to put in its place.
        replace_all: Replace every occurrence instead of exactly one.
    """
    stop = current_stop()
    try:
        target = ctx.workspace.locate_for_write(path, stop, make_folders=False)
    except ToolError as exc:
        if str(exc).endswith("does not exist"):
            raise ToolError(f"{exc}; {_not_there(ctx, path)}") from None
        if " is a folder" in str(exc) and old.strip():
            raise ToolError(_folder_edit(ctx, path, old, new)) from None
        raise
    try:
        if target.mode is None:
            if not old:
                raise ToolError("old must not be empty; to create a file use write_file")
            raise ToolError(f"{path!r} does not exist; {_not_there(ctx, path)}")
        text = _whole_text(target, path)
        if not old:
            raise ToolError(_empty_old(path, text))
        count = text.count(old)
        loose = ""
        if count == 0:
            old, new, loose = _loosely(text, path, old, new)
            count = text.count(old)
        if old == new:  # a small model's "fix" that changes nothing, reported as done
            raise ToolError(f"old and new are the same text: nothing in {path} would change")
        if count > 1 and not replace_all:
            raise ToolError(_not_unique(path, old, count))
        after = _replaced(text, old, new)
        data = after.encode()
        note = _parse_note(ctx, target, data, text) or _shrunk_note(path, old, new)
        replace_file(target, data, stop)
    finally:
        os.close(target.dir_fd)
    shown = _lines_now(after, text, old, new) if new else ""
    said = f"Replaced {count} occurrence{'s' if count > 1 else ''} in {path}{shown}{loose}{note}"
    return _with_diff(said, target, text, after)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[_A-Z][A-Za-z0-9_]*")
"""A name as code writes one, not a word: `MAX_RETRIES`, `get_user`, `OrderRepository`."""


def _not_unique(path: str, old: str, count: int) -> str:
    """`old` occurs `count` times: a name is most likely renamed everywhere in the file (a
    1.5B model told to "include more surrounding lines" first sent the whole file as old)."""
    if _NAME.fullmatch(old):
        return (
            f"old text `{old}` occurs {count} times in {path}: to replace it everywhere in "
            "the file (a rename), set replace_all to true; to change one of them, include "
            "the surrounding text that makes it unique"
        )
    return (
        f"old text occurs {count} times in {path}; include more surrounding lines to make it "
        "unique, or set replace_all to true"
    )


def _shrunk_note(path: str, old: str, new: str) -> str:
    """An edit that put a line or two where many were: a small model's replacement of a
    whole file by the one name it meant to change."""
    before, after = len(old.splitlines()), len(new.splitlines())
    if not new.strip() or before < 4 or after * 3 > before:
        return ""  # an emptied `new` deletes on purpose
    put = f"{after} line{'s' if after > 1 else ''}"
    return f"\n[this edit put {put} where {before} were: the others are gone from {path}]"


def _empty_old(path: str, text: str) -> str:
    """An empty `old` for a file that exists: small models mean "at the top", and took "to
    create a file use write_file" as leave to write a header over a whole module."""
    first = text.split("\n", 1)[0]
    if not first.strip():
        return f"old must not be empty: give the exact text to replace in {path}"
    return (
        f"old must not be empty. To add text at the top of {path}, give its first line as "
        f"old (`{_shown(first)}`) and your text followed by that line as new; write_file would "
        "replace the whole file"
    )


def _folder_edit(ctx: ToolContext, path: str, old: str, new: str) -> str:
    """edit_file given a folder: the files under it that hold `old`, and the call for the
    first (a small model renaming across a project sent the workspace `.` as the path)."""
    said = f"{path!r} is a folder: edit_file changes one file"
    line = next(line for line in old.splitlines() if line.strip())
    search = _Search(Regex.literal(line), current_stop(), limit=TEXT_MATCHES_SHOWN)
    _search_in(ctx, search, ctx.workspace.open(path, folder=True), path)
    files = list(search.files)
    if not files:
        return f"{said}, and no file under it holds old"
    more = f" (then the same for {', '.join(f'`{f}`' for f in files[1:])})" if files[1:] else ""
    return (
        f"{said}. old occurs in {len(files)} file{'s' if files[1:] else ''} under it: change "
        f"each: edit_file with path `{files[0]}`, old `{old}`, new `{new}`, replace_all true"
        f"{more}"
    )


def _loosely(text: str, path: str, old: str, new: str) -> tuple[str, str, str]:
    """`old` and `new` as the file writes them, when `old` is in it only with other
    whitespace, quotes or backslashes (`reins.tools._near_match`), and a note saying so."""
    near = near_match(text, old, new)
    if near is None:
        similar = similar_lines(text, old)
        shown = "".join(f"\n{n}: {_shown(line)}" for n, line in sorted(similar))
        raise ToolError(
            f"old text not found in {path}; "
            + (f"the lines most like it:{shown}\n" if similar else "read the file and ")
            + "copy the exact text, whitespace and indentation included"
        )
    found, carried = near.found[0], near.new[0]
    if carried is None or len(set(near.found)) > 1:
        raise ToolError(
            f"old text not found in {path} as written; it is there with other {near.how}:\n"
            f"{found}\ncopy that as old, and write new the same way"
        )
    note = (
        f"\n[old was not in {path} as written: it matched with the file's {near.how}, "
        "and new was written with them too]"
    )
    return found, carried, note


def _lines_now(after: str, before: str, old: str, new: str) -> str:
    """The lines each replacement left, numbered as read_file numbers them (split at line
    feeds only; at most `EDITED_LINES`): a small model sees what its edit made (`"version"` ->
    `"1.3.0"` left `"1.3.0": "1.2.9"`), not just that it succeeded."""
    lines = after.split("\n")
    ends = list(accumulate(len(line) + 1 for line in lines))  # each line's end, its \n included
    numbers: dict[int, None] = {}
    shift, start = len(new) - len(old), before.find(old)
    for index in range(EDITED_LINES):
        if start < 0:
            break
        at = start + index * shift  # where this occurrence's new text begins in `after`
        last = at + max(len(new.rstrip("\n")) - 1, 0)
        numbers.update(dict.fromkeys(range(bisect_right(ends, at), bisect_right(ends, last) + 1)))
        start = before.find(old, start + len(old))
    chosen = list(numbers)[:EDITED_LINES]
    more = " (the first)" if len(numbers) > len(chosen) or start >= 0 else ""
    pair = _doubled(lines, before, chosen) if before.count(old) == 1 else None
    if pair:  # the other line of the pair shown too: the text to delete is in view
        chosen = sorted({*chosen, *pair})
    shown = "\n".join(f"{n + 1}: {_shown(lines[n])}" for n in chosen)
    if pair is None:
        return f"; the lines now read{more}:\n{shown}"
    a, b = pair[0] + 1, pair[1] + 1
    return (
        f"; the lines now read{more}:\n{shown}\n[lines {a} and {b} are now the same line: new "
        "repeats a line next to old; if it should be there once, delete one]"
    )


def _doubled(lines: list[str], before: str, edited: list[int]) -> tuple[int, int] | None:
    """The two lines (indices) of a line one replacement doubled: `new` that also holds the
    line after (or before) `old` repeats it, a small model's common slip, and the file reads
    `print('hi')` twice."""
    if not edited:
        return None
    first, last = edited[0], edited[-1]
    for a in (first - 1, last):
        b = a + 1
        if a >= 0 and b < len(lines) and lines[a].strip() and lines[a] == lines[b]:
            pairs = before.split("\n")
            was = sum(x == y == lines[a] for x, y in pairwise(pairs))
            now = sum(x == y == lines[a] for x, y in pairwise(lines))
            if now > was:
                return a, b
    return None


def _shown(line: str) -> str:
    return line.removesuffix("\r")[:EDITED_LINE_CHARS]


EDITED_LINES = 6
EDITED_LINE_CHARS = 200


def _replaced(text: str, old: str, new: str) -> str:
    """`text` with every `old` made `new`; deleting whole lines takes their line breaks too,
    so no empty line is left where one stood (what "remove the line" means)."""
    if new or "\n" in old.rstrip("\n"):
        return text.replace(old, new)
    line = re.escape(old.rstrip("\n"))
    whole = re.compile(rf"(?m)^{line}(?:\r?\n|\Z)")
    if len(whole.findall(text)) == text.count(old.rstrip("\n")):
        return whole.sub("", text)
    return text.replace(old, new)


def _whole_text(target: Target, path: str) -> str:
    """The text of the file a write is about to replace, read from the same folder."""
    try:
        fd = os.open(target.name, READ, dir_fd=target.dir_fd)
    except OSError as exc:  # swapped for a symlink or removed since it was located
        why = exc.strerror
        raise ToolError(f"{path!r} changed while being opened ({why}); try again") from None
    with _checked(Opened(fd, os.fstat(fd), target.rel), path) as opened:
        if opened.st.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"{path!r} has {opened.st.st_size} bytes; edit_file edits files of at most "
                f"{MAX_EDIT_BYTES} bytes"
            )
        data = _read_at_most(opened.fd, MAX_EDIT_BYTES + 1)
    if b"\0" in data:
        raise ToolError(f"{path!r} is a binary file")
    if len(data) > MAX_EDIT_BYTES:
        raise ToolError(f"{path!r} grew past {MAX_EDIT_BYTES} bytes while being read")
    return data.decode("utf-8", errors="replace")


@_stoppable
@tool(read_only=True, path_args=("path",))
def list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the entries of a folder (folders end with /). A name holding a line break or
    another control character is shown as a JSON string, quoted and escaped ("a\\nb.txt"):
    pass it back so.

    Args:
        path: Folder path, relative to the workspace root.
    """
    try:
        with _folder(ctx, path) as folder, os.scandir(folder.fd) as it:
            entries = sorted(
                as_listed(e.name) + ("/" if e.is_dir() else "")
                for e in it
                if e.name not in ALWAYS_IGNORED and not ctx.workspace.hidden_entry(folder, e)
            )
    except ToolError as exc:  # a file is listed as `ls FILE` does: an error sent models searching
        if not str(exc).endswith("is a file, not a folder"):
            raise
        opened = ctx.workspace.open(path)
        os.close(opened.fd)
        rel = as_listed(opened.rel)
        return f"{rel} ({opened.st.st_size} bytes; a file: read_file shows its content)"
    if not entries:
        return f"{path} is empty"
    shown = entries[:MAX_LIST_ENTRIES]
    more = len(entries) - len(shown)
    return "\n".join(shown) + (f"\n[{more} more entries]" if more else "")


@_stoppable
@tool(read_only=True, path_args=("path",))
def find_files(ctx: ToolContext, pattern: Annotated[str, ArgKind.GLOB], path: str = ".") -> str:
    """Find files by glob pattern (gitignore style: `*.py` matches at any depth,
    `src/**/test_*.py` below src). Ignored files are skipped. Names are shown as list_files
    shows them. A pattern without wildcards that no name matches is looked for as text too.

    Args:
        pattern: Glob pattern, relative to `path`.
        path: Folder to search in, relative to the workspace root.
    """
    spec = glob_spec(pattern)
    try:
        with _folder(ctx, path) as folder:
            skip = len(folder.rel) + 1 if folder.rel else 0
            found = [
                as_listed(f.rel)
                for f in ctx.workspace.walk(folder, current_stop())
                if spec.match_file(f.rel[skip:])
            ]
    except ToolError as exc:  # a file: its own name, or (no wildcard) the text in it
        if not str(exc).endswith("is a file, not a folder"):
            raise
        opened = ctx.workspace.open(path)
        os.close(opened.fd)
        name = as_listed(opened.rel)
        if spec.match_file(os.path.basename(opened.rel)):
            return f"{name}\n[1 file]"
        return _named_nowhere(ctx, pattern, path)
    if not found:
        return _named_nowhere(ctx, pattern, path)
    shown = found[:MAX_LIST_ENTRIES]
    more = len(found) - len(shown)
    count = f"{more} more files" if more else "1 file" if len(found) == 1 else f"{len(found)} files"
    return "\n".join(shown) + f"\n[{count}]"


def _named_nowhere(ctx: ToolContext, pattern: str, path: str) -> str:
    """find_files' answer when no name matches. A pattern with no wildcard may have been text
    to look for (a class, a URL): small models search contents with find_files and take "no
    files" for "nowhere", so where the text occurs is searched and shown too."""
    nothing = f"no files match {pattern!r} (find_files matches names; grep searches contents)"
    if any(c in pattern for c in "*?[") or not pattern.strip():
        return nothing
    search = _Search(Regex.literal(pattern), current_stop(), limit=TEXT_MATCHES_SHOWN)
    _search_in(ctx, search, ctx.workspace.open(path), path)
    if not search.matches:
        return f"{nothing}; no file holds it as text either"
    return (
        f"no file names match {pattern!r} (find_files matches names), but the text occurs in "
        f"these files (as grep shows it):\n{search.report(pattern)}"
    )


TEXT_MATCHES_SHOWN = 20


@_stoppable
@tool(read_only=True, path_args=("path",))
def grep(
    ctx: ToolContext,
    pattern: Annotated[str, ArgKind.REGEX],
    path: str = ".",
    glob: Annotated[str, ArgKind.GLOB] | None = None,
    ignore_case: bool = False,
) -> str:
    """Search file contents with a regular expression; prints `file:line: text` (the file's
    name as list_files shows it) and how many lines matched. Files ignored by .gitignore and
    binary files are skipped.

    Args:
        pattern: Regular expression, in RE2 syntax (as ripgrep's): no backreferences or
            lookaround.
        path: File or folder to search, relative to the workspace root.
        glob: Only search files matching this glob, e.g. `*.py`.
        ignore_case: Match without regard to case.
    """
    search = _Search(Regex(pattern, ignore_case=ignore_case), current_stop())
    try:
        target = ctx.workspace.open(path)
    except ToolError as exc:
        if not str(exc).endswith("does not exist"):
            raise
        split = _wildcard_path(path) if glob is None else None
        if split is None:
            raise ToolError(f"{exc}; {_not_there(ctx, path)}") from None
        (path, glob), asked = split, path
        try:
            target = ctx.workspace.open(path)
        except ToolError:
            raise exc from None
        search.notes.append(
            f"path {asked!r} has a wildcard: searched {path} for files named {glob}, at any depth"
        )
    _search_in(ctx, search, target, path, glob_spec(glob) if glob else None)
    return search.report(pattern)


def _wildcard_path(path: str) -> tuple[str, str] | None:
    """A path written with a wildcard (`docs/**`, `src/*.py`, `docs/**/*.md`) as grep's
    arguments: the folder before the wildcard and a glob of file names; None when what follows
    the folder is no single name pattern."""
    parts = path.split("/")
    first = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), None)
    if first is None:
        return None
    names = [part for part in parts[first:] if part not in ("**", "")]
    if len(names) > 1:
        return None
    return "/".join(parts[:first]) or ".", names[0] if names else "*"


def _search_in(
    ctx: ToolContext, search: _Search, target: Opened, path: str, only: GitIgnoreSpec | None = None
) -> None:
    """Search the file `target`, or the files below the folder (those `only` matches by name)."""
    if not stat.S_ISDIR(target.st.st_mode):
        with _checked(target, path) as opened:
            search.file(opened)
        return
    try:
        for found in ctx.workspace.walk(target, search.stop):
            if only and not only.match_file(found.name):
                continue
            try:
                opened = ctx.workspace.open_found(found)
            except (ToolError, OSError):  # gone, or swapped, since the listing
                continue
            try:
                if search.file(opened):
                    break
            finally:
                os.close(opened.fd)
    finally:
        os.close(target.fd)


class _Search:
    """grep's matches and notes, file after file."""

    def __init__(self, regex: Regex, stop: Stop, limit: int = MAX_GREP_MATCHES) -> None:
        self.regex, self.stop, self.limit = regex, stop, limit
        self.matches: list[str] = []
        self.files: dict[str, None] = {}
        self.notes: list[str] = []
        self.linked = 0

    def file(self, opened: Opened) -> bool:
        """Search one file (special, hard-linked and binary ones skipped); True: enough."""
        if not stat.S_ISREG(opened.st.st_mode):
            return False
        if opened.st.st_nlink > 1:
            self.linked += 1
            return False
        if is_binary(opened.fd):
            return False
        lines = Lines(
            opened.fd,
            size=opened.st.st_size,
            head=MAX_GREP_LINE_CHARS,
            budget=MAX_SCAN_BYTES,
            stop=self.stop,
        )
        number, name = 0, as_listed(opened.rel)
        for batch, _ in lines:
            if lines.cr:
                batch = [t.rstrip("\r") for t in batch]
            for i in self.regex.matching(batch):
                self.matches.append(f"{name}:{number + i + 1}: {batch[i][:300]}")
                self.files[name] = None
                if len(self.matches) == self.limit:
                    self.notes.append(f"stopped at {self.limit} matches")
                    return True
            number += len(batch)
        size = opened.st.st_size
        if lines.binary_at is not None:
            self.notes.append(f"{name}: binary from byte {lines.binary_at} on, not searched")
        elif not lines.ended:
            self.notes.append(f"{name}: searched the first {lines.read} of {size} bytes")
        return False

    def report(self, pattern: str) -> str:
        if self.linked:
            self.notes.append(
                f"{self.linked} file(s) with more than one hard link not searched: "
                "their other links may be outside the workspace"
            )
        if not self.matches:
            text = f"no matches for {pattern!r} (grep searches contents; find_files matches names)"
        elif len(self.matches) < self.limit:  # counted, as read_file counts lines: by eye,
            text = "\n".join(self.matches) + f"\n[{self.count()}]"  # small models miscount
        else:
            text = "\n".join(self.matches)
        return text + "".join(f"\n[{n}]" for n in self.notes)

    def count(self) -> str:
        n = len(self.matches)
        lines = "1 matching line" if n == 1 else f"{n} matching lines"
        return lines if len(self.files) == 1 else f"{lines} in {len(self.files)} files"


@tool(timeout=None, command_arg="command")
async def run_command(ctx: ToolContext, command: str, timeout: float = 60.0) -> str:  # noqa: ASYNC109
    """Run a shell command in the workspace root: copy, move or delete files (cp, mv, rm),
    count lines, words or files (wc -l, wc -w), run programs and tests (python3). Prints its
    exit code and output (of a long output, the head and the tail). It runs in a sandbox: it may
    write only inside the workspace (not .git, .reins or the run log) and a private /tmp,
    discarded afterwards; it has no network; it sees a reduced environment; processes it leaves
    in the background are killed when it ends.

    Args:
        command: The command line, run by /bin/sh.
        timeout: Seconds before the command is killed.
    """
    from ..sandbox import run_process  # loaded on first use, as the runner is

    if not timeout > 0:
        raise ToolError(f"timeout must be a positive number of seconds, not {timeout}")
    result = await run_process(
        command,
        workspace=ctx.workspace.root,
        policy=ctx.sandbox,
        timeout=timeout,
        protected=ctx.workspace.protected,
        max_output=MAX_COMMAND_OUTPUT,
    )
    if result.timed_out:
        most = f" (the sandbox allows at most {result.timeout:g} s)" if result.clamped else ""
        output = f"; its output:\n{result.output}" if result.output else ""
        raise ToolError(
            f"command timed out after {result.timeout:g} s and was killed{most}{output}"
        )
    return f"exit code: {result.exit_code}\n{result.output}"


_RUN_COMMAND_HEAD = (
    "Run a shell command (such as cp, mv, wc or python3) in the workspace root; prints its exit "
    "code and output (the middle of a long output is cut)."
)


def sandboxed(tools: Sequence[Tool], policy: SandboxPolicy) -> list[Tool]:
    """`tools`, with run_command's description telling the model what `policy` allows."""
    if (policy.mode, policy.network) == ("workspace-write", False):  # what the docstring says
        return list(tools)
    return list(_described(tuple(tools), f"{_RUN_COMMAND_HEAD} {policy.describe()}"))


@lru_cache(maxsize=16)
def _described(tools: tuple[Tool, ...], description: str) -> tuple[Tool, ...]:
    """Made once per tool set and policy: a new Tool would work out its schema again."""
    return tuple(
        dataclasses.replace(t, description=description) if t is run_command else t for t in tools
    )


@tool(read_only=True)
def final_answer(answer: str) -> str:
    """Finish: call it once the goal is reached, with your answer for the user.

    Args:
        answer: The number, name or text the user asked for, or what you changed and where.
    """
    return "Final answer recorded."


BUILTIN_TOOLS: tuple[Tool, ...] = (
    read_file,
    write_file,
    edit_file,
    list_files,
    find_files,
    grep,
    run_command,
    final_answer,
)


@contextmanager
def _checked(opened: Opened, path: str) -> Iterator[Opened]:
    """A regular file with one link, or a ToolError; closed after the block either way."""
    try:
        st = opened.st
        if not stat.S_ISREG(st.st_mode):
            what = (
                "a folder; list_files shows what is there"
                if stat.S_ISDIR(st.st_mode)
                else (f"{kind(st)}, not a regular file; only regular files are read")
            )
            raise ToolError(f"{path!r} is {what}")
        if st.st_nlink > 1:
            raise ToolError(
                f"{path!r} has {st.st_nlink} hard links, and where the others are cannot be "
                "known: it may be a file outside the workspace, so it is not read or edited; "
                "a copy of it can be"
            )
        yield opened
    finally:
        os.close(opened.fd)


def _not_there(ctx: ToolContext, path: str) -> str:
    """What to do after "`path` does not exist": where files of that name are (a small model
    drops the folder a result showed: `install.md` for `docs/install.md`), that a path names
    one file (`README.md install.md`), or how to create one."""
    names = path.split()
    if not names:
        return MISSING
    wanted = {posixpath.basename(name.rstrip("/")): name for name in names}
    places: dict[str, list[str]] = {name: [] for name in names}
    try:
        root = ctx.workspace.open(".", folder=True)
    except ToolError:
        return MISSING
    try:
        for seen, found in enumerate(ctx.workspace.walk(root, current_stop())):
            if seen >= MAX_SCAN_FILES:
                break
            if (name := wanted.get(found.name)) is not None and len(places[name]) < 3:
                places[name].append(as_listed(found.rel))
    finally:
        os.close(root.fd)
    if len(names) > 1:
        each = ", ".join(f"`{n if n in places[n] else (places[n] or [n])[0]}`" for n in names)
        return f"a path names one file or folder, not {len(names)}: call once for each of {each}"
    if found_at := places[names[0]]:
        return f"a file of that name is at {', '.join(f'`{p}`' for p in found_at)}"
    return MISSING


MAX_SCAN_FILES = 5000
"""How many files `_not_there` looks through for one of a missing name."""


@contextmanager
def _regular_file(ctx: ToolContext, path: str) -> Iterator[Opened]:
    try:
        opened = ctx.workspace.open(path)
    except ToolError as exc:
        if str(exc).endswith("does not exist"):
            raise ToolError(f"{exc}; {_not_there(ctx, path)}") from None
        raise
    with _checked(opened, path) as checked:
        yield checked


@contextmanager
def _folder(ctx: ToolContext, path: str) -> Iterator[Opened]:
    try:
        opened = ctx.workspace.open(path, folder=True)
    except ToolError as exc:
        if str(exc).endswith("does not exist"):
            raise ToolError(f"{exc}; {_not_there(ctx, path)}") from None
        raise
    try:
        yield opened
    finally:
        os.close(opened.fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks = []
    while limit > 0 and (chunk := os.read(fd, min(limit, 1 << 20))):
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def builtin_tools(names: Sequence[str] | None = None) -> list[Tool]:
    """The built-in tools, or those named (in the order given; `calculate` too, which an
    agent offers by itself when it has read_file and no run_command)."""
    if names is None:
        return list(BUILTIN_TOOLS)
    by_name = {t.name: t for t in (*BUILTIN_TOOLS, calculate)}
    unknown = [n for n in names if n.strip() not in by_name]
    if unknown:
        raise UsageError(
            f"unknown tool(s) {', '.join(map(repr, unknown))}; built-in tools: {', '.join(by_name)}"
        )
    return [by_name[n.strip()] for n in names]
