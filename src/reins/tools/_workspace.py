"""The workspace: the one directory tools may touch, with paths resolved inside it."""

from __future__ import annotations

import os
import stat
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ..core._errors import ToolError, WorkspaceError
from ._fs import DIR, READ, Opened, Protected, Root, Target, locate_for_write, open_beneath
from ._patterns import ignore_rules
from ._places import CodePlaces, CodeWrite, approved, hidden_below, refuse_broad
from ._stop import Stop

ALWAYS_IGNORED = (".git", ".reins")
MAX_DEPTH = 100
"""Folders deeper than this below the walk's start are not walked."""
MAX_IGNORE_BYTES = 1 << 20


class Workspace:
    """Resolves every path inside `root`; `..`, outside absolute paths and symlink escapes
    are refused. Writes into `protected` paths (the event log) are refused too. `readable`
    folders outside it may be read by their absolute paths (the store's saved long outputs).

    The hidden paths (`reins.sandbox._hidden`: credentials, reins's own folders) are never
    opened, nor listed; a write to a place that runs code later (`reins.sandbox._code_paths`)
    needs a person's approval of that call (the executor asks; see `runs_code`). A root of `/`,
    the home folder or one holding it is refused: no list of hidden paths covers all that lies
    there."""

    def __init__(
        self,
        root: str | Path,
        *,
        protected: Sequence[str | Path] = (),
        readable: Sequence[str | Path] = (),
    ) -> None:
        real = os.path.realpath(os.path.expanduser(root))  # os.path: cheaper than pathlib
        if not os.path.isdir(real):
            raise WorkspaceError(
                f"workspace {str(root)!r} is not an existing directory; create it, or give "
                "one that exists"  # not a flag: a library user gives `workspace=`
            )
        refuse_broad(real, root)
        self.root = Path(real)
        self._root = Root.open(real)  # walks start here, wherever the path leads later
        weakref.finalize(self, os.close, self._root.fd)
        self.protected = tuple(Path(os.path.realpath(p)) for p in protected)
        self._protected_parts = tuple(
            p.relative_to(self.root).parts for p in self.protected if p.is_relative_to(self.root)
        )
        self._protected_ids = self._ids()  # as they are now: a renamed folder keeps its id
        self.readable = tuple(os.path.realpath(p) for p in readable)
        self._hidden = hidden_below(self.root, self.readable)
        self._code = CodePlaces(self.root, self._root.fd)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real, absolute path for `path`, symlinks followed, or a ToolError. A check only
        (a path can change after it): the tools use `open` and `locate_for_write`."""
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        candidate = self._realpath(path)
        if not candidate.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} resolves outside the workspace {self.root}; "
                "use a path inside it (relative paths start at the workspace root)"
            )
        if write and any(candidate.is_relative_to(p) for p in self.protected):
            raise ToolError(f"path {path!r} is in the run log's folder, which tools may not write")
        if self._hidden.hides(candidate.relative_to(self.root).parts):
            raise self._hidden.refusal(path)
        return candidate

    def runs_code(self, path: str) -> CodeWrite | None:
        """A write to `path` that runs code later: its real path below the root and why; None
        if nothing runs it unasked, or the path is refused anyway."""
        try:
            rel = self.relative(self.resolve(path, write=True))
        except ToolError:
            return None  # the call fails on it, harmlessly
        place = self._code.place(rel)
        return None if place is None else CodeWrite(rel, f"{rel} runs code later: {place.runs}")

    def _realpath(self, path: str) -> Path:
        for _ in range(3):
            try:
                return Path(os.path.realpath(self.root / Path(path).expanduser()))
            except OSError:  # a symlink on the way changed while it was read: look again
                continue
        raise ToolError(f"path {path!r} keeps changing while being resolved; try again")

    def relative(self, path: Path) -> str:
        """`path` as the model is shown it: relative to the workspace, with slashes."""
        return path.relative_to(self.root).as_posix() or "."

    def shown(self, path: Path) -> str:
        """How a tool names `path` to the model: relative inside the workspace, else whole."""
        return self.relative(path) if path.is_relative_to(self.root) else str(path)

    def open(self, path: str, *, folder: bool = False) -> Opened:
        """Open `path` without a check-then-use race (see `_fs`); close `.fd` when done."""
        flags = DIR if folder else READ
        if (outside := self._readable(path)) is not None:
            top, rel = outside
            try:
                root = Root.open(top)
            except FileNotFoundError:
                raise ToolError(f"{path!r} does not exist") from None
            try:
                return open_beneath(root, rel, flags)
            finally:
                os.close(root.fd)
        return open_beneath(self._root, path, flags, self._hidden)

    def hidden_entry(self, folder: Opened, entry: os.DirEntry[str]) -> bool:
        """Whether an entry of the open `folder` is hidden (for a listing)."""
        rel = f"{folder.rel}/{entry.name}" if folder.rel else entry.name
        return self.hides(rel, folder=entry.is_dir(follow_symlinks=False))

    def hides(self, rel: str, *, folder: bool = False) -> bool:
        """Whether the path `rel` below the root is hidden (a folder: unless on the way to a
        readable one)."""
        return self._hidden.hides(rel.split("/"), final=not folder)

    def _readable(self, path: str) -> tuple[str, str] | None:
        """The readable folder an absolute `path` lies in, and the path below it."""
        if not self.readable or not os.path.isabs(path := os.path.expanduser(path)):
            return None
        path = os.path.normpath(path)
        for top in self.readable:
            if path == top or path.startswith(top + os.sep):
                return top, os.path.relpath(path, top)
        return None

    def locate_for_write(self, path: str, stop: Stop, *, make_folders: bool = True) -> Target:
        """Where a write to `path` lands, missing folders made (or a ToolError); outside the
        workspace, in `protected` folders and hidden paths it is refused, and in a place that
        runs code later unless a person approved this call's write there (`approved_writes`:
        checked again here, on the real path, as a symlink may have changed since the ask).
        Close `.dir_fd` when done."""
        protected = Protected(self._protected_parts, self._protected_ids | self._ids())
        target = locate_for_write(
            self._root, path, protected, stop, make=make_folders, hidden=self._hidden
        )
        place = self._code.place(target.rel)
        if place is not None and not approved(target.rel):
            os.close(target.dir_fd)
            raise ToolError(
                f"{path!r} is {target.rel}, which runs code later ({place.runs}): a write there "
                "needs a person's yes to the call, and this call had none (or the path changed "
                "since it was asked)"
            )
        return target

    def _ids(self) -> frozenset[tuple[int, int]]:
        ids = set()
        for folder in self.protected:
            try:
                st = os.stat(folder)
            except OSError:
                continue
            ids.add((st.st_dev, st.st_ino))
        return frozenset(ids)

    def walk(self, folder: Opened, stop: Stop) -> Iterator[Found]:
        """Regular files under the open `folder`, sorted, skipping what .gitignore files (nested
        ones too) and `ALWAYS_IGNORED` exclude, and special files (FIFOs, sockets, devices).
        Symlinks are followed only to files inside the workspace. A `Found` is valid until the
        next one is asked for."""
        rules: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        parts = folder.rel.split("/") if folder.rel else []
        for depth in range(len(parts)):  # the folders above, from the root down
            self._load_rules("/".join(parts[:depth]), rules, None)
        yield from self._walk(folder.fd, folder.rel, rules, stop, 0)

    def _walk(
        self,
        fd: int,
        rel: str,
        rules: list[tuple[str, pathspec.GitIgnoreSpec]],
        stop: Stop,
        depth: int,
    ) -> Iterator[Found]:
        stop.check()
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:  # unreadable: skipped, as os.walk does
            return
        if any(e.name == ".gitignore" for e in entries):
            self._load_rules(rel, rules, fd)
        folders = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                if (
                    entry.name not in ALWAYS_IGNORED
                    and not self.hides(child, folder=True)
                    and not _ignored(child, rules, is_dir=True)
                ):
                    folders.append((entry.name, child))
            elif self.hides(child) or _ignored(child, rules, is_dir=False):
                continue
            elif entry.is_file(follow_symlinks=False):
                yield Found(child, fd, entry.name, link=False)
            elif entry.is_symlink() and self._links_to_a_file(child):
                yield Found(child, fd, entry.name, link=True)
        if depth >= MAX_DEPTH:
            return
        for name, child in folders:
            try:
                sub = os.open(name, DIR, dir_fd=fd)
            except OSError:  # gone, or swapped for a symlink, since the listing
                continue
            if self._hidden.ids and self._hidden.holds(os.fstat(sub)):  # renamed since
                os.close(sub)
                continue
            try:
                yield from self._walk(sub, child, rules, stop, depth + 1)
            finally:
                os.close(sub)

    def open_found(self, found: Found) -> Opened:
        """Open a file the walk found (a symlink through `open`, so only inside)."""
        if found.link:
            return self.open(found.rel)
        fd = os.open(found.name, READ, dir_fd=found.dir_fd)
        st = os.fstat(fd)
        if self._hidden.holds(st):
            os.close(fd)
            raise self._hidden.refusal(found.rel)
        return Opened(fd, st, found.rel)

    def _links_to_a_file(self, rel: str) -> bool:
        try:
            opened = self.open(rel)
        except (ToolError, OSError):
            return False
        os.close(opened.fd)
        return stat.S_ISREG(opened.st.st_mode)

    def _load_rules(
        self, rel: str, rules: list[tuple[str, pathspec.GitIgnoreSpec]], fd: int | None
    ) -> None:
        try:
            if fd is None:
                opened = self.open(f"{rel}/.gitignore" if rel else ".gitignore")
            else:
                ignore_fd = os.open(".gitignore", READ, dir_fd=fd)
                opened = Opened(ignore_fd, os.fstat(ignore_fd), rel)
        except (ToolError, OSError):
            return
        try:
            if not stat.S_ISREG(opened.st.st_mode):
                return
            data = os.read(opened.fd, MAX_IGNORE_BYTES)
        finally:
            os.close(opened.fd)
        lines = data.decode("utf-8", errors="replace").splitlines()
        rules.append((rel, ignore_rules(lines)))  # RE2: a hostile glob cannot hang a walk


@dataclass(frozen=True)
class Found:
    rel: str
    """Its path below the workspace root."""
    dir_fd: int
    name: str
    link: bool


def _ignored(rel: str, rules: list[tuple[str, pathspec.GitIgnoreSpec]], *, is_dir: bool) -> bool:
    for base, spec in rules:
        if not base or rel.startswith(base + "/"):
            below = rel[len(base) + 1 :] if base else rel
            if spec.match_file(below + ("/" if is_dir else "")):
                return True
    return False
