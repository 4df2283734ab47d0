"""Files opened beneath the workspace's folder, one path component at a time.

Checking a path and then using it leaves a gap in which a symlink swapped into the path could
send a read or a write outside. Here the check is the use: each component is opened relative
to the folder before it with O_NOFOLLOW, a symlink is read and followed by hand (at most
`MAX_LINKS`, never above the root, absolute targets only into the root), and what comes back
is a descriptor, not a path. `..` goes back to the folder the walk came from. Plain POSIX, so
it works on macOS as on Linux. The hidden paths (credentials) are refused on the way, by name
and by identity, so no symlink or rename leads into them.

Not covered: a folder on the way renamed to outside the workspace while it is walked, which
takes write access outside the workspace."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from ..core._errors import ToolError
from ._stop import Stop

MAX_LINKS = 40


def _flag(name: str) -> int:
    return getattr(os, name, 0)  # POSIX flags: absent on Windows, where none of this runs


_CLOEXEC = _flag("O_CLOEXEC") | _flag("O_NOFOLLOW")
_SEARCH = (_flag("O_PATH") or os.O_RDONLY) | _flag("O_DIRECTORY") | _CLOEXEC  # walk through only
DIR = os.O_RDONLY | _flag("O_DIRECTORY") | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: nor adopt a terminal.
READ = os.O_RDONLY | _flag("O_NONBLOCK") | _flag("O_NOCTTY") | _CLOEXEC
# What O_NOFOLLOW gives on a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD), ENOTDIR with
# O_DIRECTORY (Linux).
_LINK_ERRORS = (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)


@dataclass(frozen=True)
class Root:
    """The workspace's folder: its real path, and a descriptor every walk starts from."""

    path: str
    fd: int

    @classmethod
    def open(cls, path: str) -> Root:
        return cls(path, os.open(path, _SEARCH))


@dataclass(frozen=True)
class Protected:
    """Folders nothing may be written in: by their path below the root, and by identity."""

    parts: tuple[tuple[str, ...], ...]
    ids: frozenset[tuple[int, int]]


@dataclass(frozen=True)
class Hidden:
    """What no tool opens (`reins.sandbox._hidden`), below the root: by path, and by identity (a
    folder renamed since). `shown` are folders inside hidden ones that stay readable (a
    skill's, the log's saved outputs): the way to them is open, nothing beside it."""

    parts: frozenset[tuple[str, ...]] = frozenset()
    ids: frozenset[tuple[int, int]] = frozenset()
    shown: tuple[tuple[str, ...], ...] = ()

    def hides(self, parts: Sequence[str], *, final: bool = True) -> bool:
        """Whether the path `parts` is hidden; not `final`: a folder passed on the way."""
        if not self.parts:
            return False
        parts = tuple(parts)
        if not any(parts[:i] in self.parts for i in range(1, len(parts) + 1)):
            return False
        if any(parts[: len(s)] == s for s in self.shown):
            return False
        return final or not any(s[: len(parts)] == parts for s in self.shown)

    def holds(self, st: os.stat_result) -> bool:
        return bool(self.ids) and (st.st_dev, st.st_ino) in self.ids

    def refusal(self, path: str) -> ToolError:
        return ToolError(
            f"{path!r} is hidden: credentials, secrets and reins's own data are kept from "
            "the agent (commands do not see them either)"
        )


NOTHING_HIDDEN = Hidden()


@dataclass(frozen=True)
class Opened:
    fd: int
    st: os.stat_result
    rel: str
    """Its real path below the root ('' for the root)."""


class Beneath:
    """One path walked below `root`: `stack` holds the descriptors of the real folders passed
    (the root first), `parts` their names."""

    def __init__(
        self,
        root: Root,
        path: str,
        *,
        protected: Protected | None = None,
        create: Stop | None = None,
        hidden: Hidden = NOTHING_HIDDEN,
    ) -> None:
        """`protected`: folders nothing may be written in; `create`: make missing folders,
        unless that Stop was abandoned; `hidden`: paths not to be opened at all."""
        self.root, self.path, self.create = root.path, path, create
        self.protected, self.hidden = protected, hidden
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        path = os.path.expanduser(path)
        if path.startswith("/"):
            path = self._into_root(path)
        self.pending = path.split("/")[::-1]  # a stack: the next component last
        self.stack = [root.fd]  # not closed here: the workspace's
        self.parts: list[str] = []
        self.links = 0

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self.stack[1:]:
            os.close(fd)
        del self.stack[1:]

    @property
    def top(self) -> int:
        return self.stack[-1]

    def rel(self, name: str | None = None) -> str:
        return "/".join(self.parts if name is None else [*self.parts, name])

    def last(self) -> str | None:
        """Walk all components but the last and return it (None: the path ends at a folder)."""
        while self.pending:
            part = self.pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not self.parts:
                    raise self.outside()
                os.close(self.stack.pop())
                self.parts.pop()
            elif not self.pending:
                self.guard(part)
                if self.hidden.hides((*self.parts, part), final=False):
                    raise self.hidden.refusal(self.path)
                return part
            else:
                self._enter(part)
        return None

    def follow(self, name: str) -> None:
        """`name` (in the current folder) was a symlink: go on from its target."""
        self.links += 1
        if self.links > MAX_LINKS:
            raise ToolError(f"path {self.path!r} goes through too many symlinks (a loop?)")
        try:
            target = os.readlink(name, dir_fd=self.top)
        except OSError as exc:  # no longer a symlink: a racing change; look at `name` again
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            target = name
        if target.startswith("/"):
            target = self._into_root(target)
            while len(self.stack) > 1:
                os.close(self.stack.pop())
            self.parts.clear()
        self.pending.extend(target.split("/")[::-1])

    def guard(self, name: str | None = None) -> None:
        """Refuse to write in a protected folder (the run log's), by its name or, for the
        folder just entered, by its identity (it may have been renamed)."""
        if self.protected is None:
            return
        parts = (*self.parts, name) if name else tuple(self.parts)
        hit = any(parts[: len(p)] == p for p in self.protected.parts)
        if not hit and name is None and len(self.stack) > 1:
            st = os.fstat(self.top)
            hit = (st.st_dev, st.st_ino) in self.protected.ids
        if hit:
            raise ToolError(
                f"path {self.path!r} is in the run log's folder, which tools may not write"
            )

    def outside(self) -> ToolError:
        return ToolError(
            f"path {self.path!r} resolves outside the workspace {self.root}; "
            "use a path inside it (relative paths start at the workspace root)"
        )

    def _into_root(self, target: str) -> str:
        """An absolute path as a path below the root, if it points into the root (maybe by
        another name: /tmp is /private/tmp on macOS)."""
        for candidate in (target, os.path.realpath(target)):
            if candidate == self.root or candidate.startswith(self.root.rstrip("/") + "/"):
                # realpath may race, but what it gives is walked from the root like any path.
                return candidate[len(self.root) :]
        raise self.outside()

    def _enter(self, part: str) -> None:
        try:
            fd = os.open(part, _SEARCH, dir_fd=self.top)
        except FileNotFoundError:
            if self.create is None:
                raise ToolError(f"{self.path!r} does not exist") from None
            self.guard(part)
            if self.hidden.hides((*self.parts, part), final=False):
                raise self.hidden.refusal(self.path) from None
            self.create.check()  # a call given up creates no folders
            try:
                os.mkdir(part, dir_fd=self.top)
            except FileExistsError:
                self.links += 1  # made meanwhile: look again, a bounded number of times
                if self.links > MAX_LINKS:
                    raise
            self.pending.append(part)
            return
        except OSError as exc:
            if exc.errno not in _LINK_ERRORS:
                raise
            if _is_file(part, self.top):
                raise ToolError(f"{self.path!r}: {self.rel(part)} is not a folder") from None
            self.follow(part)  # a symlink, or changed since: look again
            return
        self.stack.append(fd)
        self.parts.append(part)
        self.guard()
        hidden = self.hidden
        if hidden.hides(self.parts, final=False) or (hidden.ids and hidden.holds(os.fstat(fd))):
            raise hidden.refusal(self.path)


def _is_file(name: str, dir_fd: int) -> bool:
    """Neither a folder nor a symlink (what O_DIRECTORY refused may have changed since)."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _refuse_devices(name: str, dir_fd: int, path: str) -> None:
    """Opening a device can act (a tape rewinds, a watchdog arms): look before opening."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise ToolError(
            f"{path!r} is a {'character' if stat.S_ISCHR(mode) else 'block'} "
            "device, which the file tools do not open"
        )


def open_beneath(
    root: Root, path: str, flags: int = READ, hidden: Hidden = NOTHING_HIDDEN
) -> Opened:
    """Open `path` (a file or a folder) below `root`, symlinks followed only inside it."""
    with Beneath(root, path, hidden=hidden) as walk:
        while True:
            name = walk.last()
            if name is not None:
                _refuse_devices(name, walk.top, path)
            try:
                fd = os.open(name or ".", flags, dir_fd=walk.top)
            except FileNotFoundError:
                raise ToolError(f"{path!r} does not exist") from None
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # a socket cannot be opened
                    raise ToolError(f"{path!r} is a socket, not a file") from None
                if name is None or exc.errno not in _LINK_ERRORS:
                    raise
                if flags & _flag("O_DIRECTORY") and _is_file(name, walk.top):
                    raise ToolError(f"{path!r} is a file, not a folder") from None
                walk.follow(name)  # a symlink, or changed since: look again
                continue
            st = os.fstat(fd)
            if hidden.holds(st) or (  # renamed since; or a file beside the way to a shown one
                name is not None
                and not stat.S_ISDIR(st.st_mode)
                and hidden.hides((*walk.parts, name))
            ):
                os.close(fd)
                raise hidden.refusal(path)
            return Opened(fd, st, walk.rel(name))


@dataclass(frozen=True)
class Target:
    """Where a write lands: `name` in the folder `dir_fd` (owned), and the mode to keep."""

    dir_fd: int
    name: str
    rel: str
    mode: int | None


def locate_for_write(
    root: Root,
    path: str,
    protected: Protected,
    stop: Stop,
    *,
    make: bool,
    hidden: Hidden = NOTHING_HIDDEN,
) -> Target:
    """The folder and name a write to `path` replaces (a symlink's target, if it stays inside);
    missing folders are made if `make`."""
    create = stop if make else None
    with Beneath(root, path, protected=protected, create=create, hidden=hidden) as walk:
        while True:
            name = walk.last()
            if name is None:
                raise ToolError(f"{path!r} is a folder")
            if hidden.hides((*walk.parts, name)):
                raise hidden.refusal(path)
            try:
                st = os.stat(name, dir_fd=walk.top, follow_symlinks=False)
            except FileNotFoundError:
                mode = None
            else:
                if stat.S_ISLNK(st.st_mode):
                    walk.follow(name)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise ToolError(f"{path!r} is {kind(st)}; only regular files can be written")
                if hidden.holds(st):
                    raise hidden.refusal(path)
                mode = stat.S_IMODE(st.st_mode)
            return Target(os.dup(walk.top), name, walk.rel(name), mode)


def replace_file(target: Target, data: bytes, stop: Stop) -> None:
    """Write `data` to a temporary file beside the target, then rename it over the target:
    a crash never leaves half a file, and a call abandoned before the rename writes nothing."""
    tmp = f".{target.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600, dir_fd=target.dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                stop.check()
                view = view[os.write(fd, view[: 1 << 20]) :]
            os.fchmod(fd, 0o644 if target.mode is None else target.mode)
        finally:
            os.close(fd)
        with stop.commit():
            os.rename(tmp, target.name, src_dir_fd=target.dir_fd, dst_dir_fd=target.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=target.dir_fd)
        raise


def kind(st: os.stat_result) -> str:
    """What a file that is not a regular one is, for a message."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"
