"""Reading a file reins opens by itself (a config, an instruction file, a skill), which a cloned
project may have made anything: only a regular file is read, and nothing waits. Opening a FIFO
waits for a writer, reading one for its data, and a device (/dev/zero) never ends, so such a
file named reins.toml hung every command in its project."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
"""O_NONBLOCK: a FIFO swapped in after the check opens at once (and is refused)."""


class NotAFile(OSError):
    """The path is there but is no regular file; `strerror` says what it is ("a FIFO (named
    pipe), not a regular file")."""


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `limit` of them;
    `NotAFile` for a folder, a FIFO, a device (but /dev/null, read as empty) or a socket, and
    OSError as `open` raises it."""
    st = os.stat(path)
    if _is_null(st):  # REINS_CONFIG=/dev/null: no config, as ever
        return b""
    _check(st, path)  # before opening: opening a device may act (a tape rewinds)
    fd = os.open(path, _OPEN)
    try:
        _check(os.fstat(fd), path)  # what was opened, which may have been swapped since
        chunks: list[bytes] = []
        size = 0
        while limit is None or size < limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(limit - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _is_null(st: os.stat_result) -> bool:
    if not stat.S_ISCHR(st.st_mode):
        return False
    null = os.stat(os.devnull)
    return (st.st_rdev, st.st_dev, st.st_ino) == (null.st_rdev, null.st_dev, null.st_ino)


def _check(st: os.stat_result, path: str | Path) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    code = errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL
    raise NotAFile(code, f"{kind(st.st_mode)}, not a regular file", str(path))


def kind(mode: int) -> str:
    """What a file that is no regular file is, in a few words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def fsync_directory(directory: str | Path) -> None:
    """Make a new name in `directory` survive power loss (a file's own fsync does not)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
