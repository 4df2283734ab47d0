"""Session journals: one append-only JSONL file of events per session, the durable record.

An append is one `write` of whole lines, flushed to the OS at each commit: from then on it
survives any crash of the process (with `durable`, an fsync makes it survive power loss too).
A writer holds an exclusive `flock` on the file, so a session is driven by one process at a time.
Each line ends in a MAC chained on from the line before (`_chain`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..core._errors import SessionBusy, StoreError
from ..core._files import fsync_directory
from ._chain import TAIL, Chain, mac_before

log = logging.getLogger("reins.store")


@dataclass(frozen=True)
class Tail:
    """Complete lines found after an offset, and where they end."""

    lines: list[bytes]
    end: int
    """Offset just past the last complete line."""


class Journals:
    """The `<directory>/<session_id>.jsonl` files this process writes, and reading any of them."""

    def __init__(self, directory: Path, *, durable: bool, read_only: bool = False) -> None:
        self.directory = directory
        self.durable = durable
        self.read_only = read_only
        """Never written: a torn last line is left where it is."""
        self._open: dict[str, _Writer] = {}
        self._made = False

    def path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.jsonl"

    def head(self, session_id: str, chain: Chain) -> bytes:
        """The MAC the session's next line chains on from (see `_chain`), its journal opened
        for writing if it is not yet: the session's genesis for a new journal, else the MAC
        its last line ends with."""
        out = self._open.get(session_id) or self._claim(session_id)
        if out.head is None:
            if out.size == 0:
                out.head = chain.genesis(session_id)
            else:
                start = max(0, out.size - TAIL - 1)
                out.head = mac_before(os.pread(out.fd, out.size - start, start))
                if out.head is None:
                    raise StoreError(
                        f"session {session_id}'s journal does not end in a signed event, so "
                        "nothing more is written to it: `reins doctor` checks it"
                    )
        return out.head

    def append(self, session_id: str, data: bytes, head: bytes) -> int:
        """Write whole lines and hand them to the OS; returns the file's new size. `head` is
        the MAC of the last of them (see `head`). If the write fails (a full disk), what it
        wrote is cut off again: the journal ends on a line."""
        out = self._open.get(session_id) or self._claim(session_id)
        try:
            written = os.write(out.fd, data)
            while written < len(data):  # a regular file takes all at once, short of a full disk
                written += os.write(out.fd, memoryview(data)[written:])
            if self.durable:
                os.fsync(out.fd)
        except OSError:
            # A cut frees space; should it fail, the next open sets the torn line aside.
            with contextlib.suppress(OSError):
                os.ftruncate(out.fd, out.size)
            raise
        out.size += len(data)
        out.head = head
        return out.size

    def claim(self, session_id: str) -> None:
        """Take the writer lock of an existing journal now (before its history is read)."""
        if session_id not in self._open and os.path.exists(self.path(session_id)):
            self._claim(session_id)

    def _claim(self, session_id: str) -> _Writer:
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made = True
        # A raw descriptor: one syscall per commit, no buffer to flush.
        path = os.path.join(self.directory, f"{session_id}.jsonl")  # not `path()`: pathlib is slow
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)  # read: its head
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionBusy(
                f"session {session_id} is being written by another process; wait for it to "
                "finish, or start a new session"
            ) from None
        if self.durable:  # the journal's name too must survive power loss, not only its lines
            fsync_directory(self.directory)
        out = self._open[session_id] = _Writer(fd, os.fstat(fd).st_size)
        return out

    def writing(self, session_id: str) -> bool:
        """True if some process (this one included) holds the session's writer lock."""
        if session_id in self._open:
            return True
        try:
            with self.path(session_id).open("rb") as probe:
                try:
                    fcntl.flock(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return True
                return False
        except FileNotFoundError:
            return False

    def read_from(self, session_id: str, offset: int) -> Tail:
        """Complete lines after `offset`. A partial last line is left alone while a writer holds
        the file (it is being written); otherwise it is a torn write: it is moved to a
        `*.torn-*` file beside the journal, reported, and cut from the journal."""
        path = self.path(session_id)
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        if end < len(data) and not self.read_only and not self.writing(session_id):
            self._cut_torn(path, offset + end, data[end:])
        return Tail(lines=data[:end].split(b"\n")[:-1], end=offset + end)

    def read(self, session_id: str, start: int, end: int) -> bytes:
        """The bytes [start, end) of a journal; fewer if it is shorter."""
        fd = os.open(self.path(session_id), os.O_RDONLY)
        try:
            return os.pread(fd, end - start, start)
        finally:
            os.close(fd)

    @staticmethod
    def _cut_torn(path: Path, at: int, fragment: bytes) -> None:
        aside = path.with_name(f"{path.name}.torn-{datetime.now(UTC):%Y%m%dT%H%M%S%f}")
        aside.write_bytes(fragment)
        os.truncate(path, at)
        log.warning(
            "%s ended in a partial line (a write cut off by a crash); the %d bytes are kept in "
            "%s and the run goes on from the last whole event",
            path,
            len(fragment),
            aside,
        )

    def release(self, session_id: str) -> None:
        """Close the session's journal (and give up its lock) until it is written again."""
        out = self._open.pop(session_id, None)
        if out is not None:
            os.close(out.fd)

    def close(self) -> None:
        for out in self._open.values():
            os.close(out.fd)  # closing releases the lock
        self._open.clear()


class _Writer:
    """A journal this process holds: its locked descriptor, its size and the MAC of its last
    line (None until asked for)."""

    __slots__ = ("fd", "head", "size")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.head: bytes | None = None
