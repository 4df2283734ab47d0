"""Project instructions: AGENTS.md files, from the repository root down to the workspace.

As codex reads them: each folder from the git root (else the workspace) down to the workspace
gives at most one file (`AGENTS.override.md` if present, else the first of the instruction file
names it has), added in that order so that the closer file comes later and wins; the whole is
capped. A file in a folder below the workspace is not read up front: the first time a file tool
touches that folder, its file is attached to the tool's result, once (as Open SWE does).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core._files import read_regular
from ..core._messages import Message, ToolResultMessage

INSTRUCTION_FILES = ("AGENTS.md",)
OVERRIDE = "AGENTS.override.md"
MAX_INSTRUCTION_BYTES = 32 * 1024
HINT = "[Instructions for the files under {folder}/, from {file}:]"
_HINT_LINE = re.compile(r"^\[Instructions for the files under ([^\n]*):\]$", re.MULTILINE)
"""A line `HINT` wrote; its file is found by `_hinted`. (One pattern for the whole line,
`.*/, from (.+):]`, took quadratic time on a line of many `/, from `: a second at 30k
characters of a tool's result.)"""
_FROM = "/, from "

HEADER = """\
# Project instructions

From the project's instruction files, the repository root's first and the workspace's last:
where they disagree, the later one wins."""


@dataclass(frozen=True)
class Instructions:
    files: tuple[tuple[str, str], ...]
    """(path shown, text) for each file read, in order."""
    notes: tuple[str, ...] = ()
    """What a person should know: a file cut or left out by the cap, one unreadable."""

    def render(self) -> str:
        if not self.files:
            return ""
        parts = [HEADER, *(f"## {shown}\n\n{text.strip()}" for shown, text in self.files)]
        return "\n\n".join(parts)


def project_root(workspace: Path) -> Path:
    """The git repository's root above (or at) the workspace, else the workspace."""
    return Path(_root_of(str(workspace)))


def _root_of(folder: str) -> str:
    """`folder` (absolute, normalized) or the nearest folder above it that holds `.git`."""
    # Strings and a stat a folder, not pathlib or os.path: every run asks, all the way up.
    start = folder
    while True:
        if _exists(f"{folder.rstrip('/')}/.git"):
            return folder
        if folder == "/":
            return start
        folder = folder.rpartition("/")[0] or "/"


def instruction_file(folder: Path, names: Sequence[str]) -> Path | None:
    """The folder's instruction file: the override, else the first of `names` it has."""
    found = _instruction_file(str(folder), names)
    return None if found is None else Path(found)


def _instruction_file(folder: str, names: Sequence[str]) -> str | None:
    for name in (OVERRIDE, *names):
        candidate = os.path.join(folder, name)
        try:
            if stat.S_ISREG(os.stat(candidate).st_mode):
                return candidate
        except (OSError, ValueError):
            continue
    return None


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def discover(
    workspace: Path, names: Sequence[str] = INSTRUCTION_FILES, limit: int = MAX_INSTRUCTION_BYTES
) -> Instructions:
    """The instruction files from the project root down to `workspace` (its real path, as
    `Workspace.root` has it), capped at `limit` bytes in all (a file that crosses the cap is
    cut; later ones are left out, with a note)."""
    if not names:
        return Instructions(files=())
    folder = os.fspath(workspace)
    root = _root_of(folder)
    chain = [root]
    if folder != root:
        for part in folder[len(root) :].strip("/").split("/"):
            chain.append(os.path.join(chain[-1], part))
    files: list[tuple[str, str]] = []
    notes: list[str] = []
    used = 0
    for found in filter(None, (_instruction_file(f, names) for f in chain)):
        shown = Path(os.path.relpath(found, root)).as_posix()
        if used >= limit:
            notes.append(f"instruction file {shown} left out: the {limit}-byte cap was reached")
            continue
        try:  # no more than the cap: a file may be huge; and never a FIFO swapped in, waited on
            data = read_regular(found, limit - used + 1)
        except OSError as exc:
            notes.append(f"instruction file {shown} could not be read: {exc.strerror}")
            continue
        if used + len(data) > limit:
            notes.append(f"instruction file {shown} cut to {limit - used} bytes (cap {limit})")
            data = data[: limit - used]
        used += len(data)
        files.append((shown, data.decode("utf-8", errors="replace")))
    return Instructions(files=tuple(files), notes=tuple(notes))


@dataclass(kw_only=True)
class FolderHints:
    """Attaches the instruction file of a folder below the workspace to the first result of a
    file tool that touches it; each file once a session (what the history already holds is
    not attached again)."""

    workspace: Path
    names: Sequence[str] = INSTRUCTION_FILES
    attached: set[Path] = field(default_factory=set[Path])

    def seed(self, messages: Iterable[Message]) -> None:
        """Mark as attached what the history already holds (a resume, a next turn)."""
        for message in messages:
            if isinstance(message, ToolResultMessage) and "[Instructions for" in message.content:
                root = project_root(self.workspace)
                self.attached |= {root / file for file in _hinted(message.content)}

    def notes_for(self, paths: Iterable[Path]) -> str:
        """The instruction files to attach for a call that touched `paths` (real paths)."""
        root = project_root(self.workspace)
        notes: list[str] = []
        for path in paths:
            folder = path if path.is_dir() else path.parent
            if not folder.is_relative_to(self.workspace) or folder == self.workspace:
                continue
            below = [folder, *folder.parents]
            for step in reversed(below[: below.index(self.workspace)]):
                found = instruction_file(step, self.names)
                if found is None or found in self.attached:
                    continue
                self.attached.add(found)
                try:
                    data = read_regular(found, MAX_INSTRUCTION_BYTES)
                except OSError:
                    continue
                text = data.decode("utf-8", errors="replace")
                shown = found.relative_to(root).as_posix()
                hint = HINT.format(folder=step.relative_to(root).as_posix(), file=shown)
                notes.append(f"{hint}\n{text.strip()}")
        return "\n\n".join(notes)


def _hinted(text: str) -> list[str]:
    """The files the `HINT` lines in `text` name: after the last `/, from ` of each that leaves
    a name."""
    files = []
    for match in _HINT_LINE.finditer(text):
        body = match.group(1)
        at = body.rfind(_FROM, 0, len(body) - 1)
        if at >= 0:
            files.append(body[at + len(_FROM) :])
    return files
