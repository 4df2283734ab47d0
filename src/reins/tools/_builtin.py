"""Built-in tools: files, search and commands, all confined to the workspace."""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pathspec

from .._errors import ToolError, UsageError
from ..sandbox import SandboxPolicy
from ._tool import Tool, ToolContext, tool
from ._workspace import ALWAYS_IGNORED

MAX_READ_LINES = 2000
MAX_LIST_ENTRIES = 1000
MAX_GREP_MATCHES = 200
MAX_COMMAND_OUTPUT = 20_000


@tool(read_only=True, path_args=("path",))
def read_file(ctx: ToolContext, path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Read a text file, or a range of its lines.

    Args:
        path: File path, relative to the workspace root.
        start_line: First line to return, counting from 1.
        end_line: Last line to return (inclusive); omit to read to the end.
    """
    file = _existing_file(ctx, path)
    lines = _read_text(file, path).splitlines(keepends=True)
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise ToolError(f"bad line range {start_line}-{end_line}; lines count from 1")
    last = len(lines) if end_line is None else min(end_line, len(lines))
    if end_line is None and last - start_line + 1 > MAX_READ_LINES:
        last = start_line + MAX_READ_LINES - 1
        tail = f"\n[{len(lines)} lines in all; read on with start_line={last + 1}]"
    else:
        tail = ""
    return "".join(lines[start_line - 1 : last]) + tail


@tool(path_args=("path",))
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create or overwrite a text file with the given content; parent folders are created.

    Args:
        path: File path, relative to the workspace root.
        content: The whole new content of the file.
    """
    file = ctx.workspace.resolve(path, write=True)
    if file.is_dir():
        raise ToolError(f"{path!r} is a directory")
    _atomic_write(file, content)
    return f"Wrote {len(content.encode())} bytes to {ctx.workspace.relative(file)}"


@tool(path_args=("path",))
def edit_file(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False) -> str:
    """Replace an exact piece of text in a file.

    Args:
        path: File path, relative to the workspace root.
        old: The exact text to replace, whitespace included; it must occur exactly once
            unless replace_all is true.
        new: The text to put in its place.
        replace_all: Replace every occurrence instead of exactly one.
    """
    if not old:
        raise ToolError("old must not be empty; to create a file use write_file")
    file = _existing_file(ctx, path, write=True)
    text = _read_text(file, path)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old text not found in {path}; read the file and copy the exact text, "
            "whitespace and indentation included"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old text occurs {count} times in {path}; include more surrounding lines to "
            "make it unique, or set replace_all to true"
        )
    _atomic_write(file, text.replace(old, new))
    return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {path}"


@tool(read_only=True, path_args=("path",))
def list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the entries of a folder (folders end with /).

    Args:
        path: Folder path, relative to the workspace root.
    """
    folder = _existing_dir(ctx, path)
    entries = sorted(
        e.name + ("/" if e.is_dir() else "")
        for e in os.scandir(folder)
        if e.name not in ALWAYS_IGNORED
    )
    if not entries:
        return f"{path} is empty"
    shown = entries[:MAX_LIST_ENTRIES]
    more = len(entries) - len(shown)
    return "\n".join(shown) + (f"\n[{more} more entries]" if more else "")


@tool(read_only=True, path_args=("path",))
def find_files(ctx: ToolContext, pattern: str, path: str = ".") -> str:
    """Find files by glob pattern (gitignore style: `*.py` matches at any depth,
    `src/**/test_*.py` below src). Ignored files are skipped.

    Args:
        pattern: Glob pattern, relative to `path`.
        path: Folder to search in, relative to the workspace root.
    """
    folder = _existing_dir(ctx, path)
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    found = [
        ctx.workspace.relative(f)
        for f in ctx.workspace.walk(folder)
        if spec.match_file(f.relative_to(folder).as_posix())
    ]
    if not found:
        return f"no files match {pattern!r}"
    shown = found[:MAX_LIST_ENTRIES]
    more = len(found) - len(shown)
    return "\n".join(shown) + (f"\n[{more} more files]" if more else "")


@tool(read_only=True, path_args=("path",))
def grep(
    ctx: ToolContext,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
) -> str:
    """Search file contents with a regular expression; prints `file:line: text`.
    Files ignored by .gitignore and binary files are skipped.

    Args:
        pattern: Python regular expression.
        path: File or folder to search, relative to the workspace root.
        glob: Only search files matching this glob, e.g. `*.py`.
        ignore_case: Match without regard to case.
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"bad regular expression {pattern!r}: {exc}") from None
    target = ctx.workspace.resolve(path)
    if not target.exists():
        raise ToolError(f"{path!r} does not exist")
    files = [target] if target.is_file() else ctx.workspace.walk(target)
    only = pathspec.GitIgnoreSpec.from_lines([glob]) if glob else None
    matches: list[str] = []
    for file in files:
        if only and not only.match_file(file.name):
            continue
        text = _text_or_none(file)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                matches.append(f"{ctx.workspace.relative(file)}:{number}: {line[:300]}")
                if len(matches) == MAX_GREP_MATCHES:
                    return "\n".join(matches) + f"\n[stopped at {MAX_GREP_MATCHES} matches]"
    return "\n".join(matches) if matches else f"no matches for {pattern!r}"


@tool(timeout=None)
async def run_command(ctx: ToolContext, command: str, timeout: float = 60.0) -> str:  # noqa: ASYNC109
    """Run a shell command in the workspace root; prints its exit code and output (the middle
    of a long output is cut). It runs in a sandbox: it may write only inside the workspace (not
    .git or the run log) and a private /tmp, discarded afterwards; it has no network; it sees a
    reduced environment; processes it leaves in the background are killed when it ends.

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
    "Run a shell command in the workspace root; prints its exit code and output (the middle of "
    "a long output is cut)."
)


def sandboxed(tools: Sequence[Tool], policy: SandboxPolicy) -> list[Tool]:
    """`tools`, with run_command's description telling the model what `policy` allows."""
    if policy.describe() == SandboxPolicy().describe():
        return list(tools)
    description = f"{_RUN_COMMAND_HEAD} {policy.describe()}"
    return [
        dataclasses.replace(t, description=description) if t is run_command else t for t in tools
    ]


@tool(read_only=True)
def final_answer(answer: str) -> str:
    """Finish the task and give the final answer to the user.

    Args:
        answer: The final answer.
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


def _existing_file(ctx: ToolContext, path: str, *, write: bool = False) -> Path:
    file = ctx.workspace.resolve(path, write=write)
    if not file.is_file():
        what = "is a folder" if file.is_dir() else "does not exist"
        raise ToolError(f"{path!r} {what}; list_files shows what is there")
    return file


def _existing_dir(ctx: ToolContext, path: str) -> Path:
    folder = ctx.workspace.resolve(path)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ToolError(f"{path!r} {what}")
    return folder


def _read_text(file: Path, path: str) -> str:
    text = _text_or_none(file)
    if text is None:
        raise ToolError(f"{path!r} is a binary file")
    return text


def _text_or_none(file: Path) -> str | None:
    data = file.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _atomic_write(file: Path, content: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file."""
    file.parent.mkdir(parents=True, exist_ok=True)
    mode = file.stat().st_mode & 0o7777 if file.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def builtin_tools(names: Sequence[str] | None = None) -> list[Tool]:
    """The built-in tools, or those named (in the order given)."""
    if names is None:
        return list(BUILTIN_TOOLS)
    by_name = {t.name: t for t in BUILTIN_TOOLS}
    unknown = [n for n in names if n.strip() not in by_name]
    if unknown:
        raise UsageError(
            f"unknown tool(s) {', '.join(map(repr, unknown))}; built-in tools: {', '.join(by_name)}"
        )
    return [by_name[n.strip()] for n in names]
