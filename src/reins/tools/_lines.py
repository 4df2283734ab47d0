"""A file's lines in bounded memory and time: each line keeps only its head, and reading stops
after a budget of bytes or where binary data (a NUL byte) begins."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ._stop import Stop

CHUNK = 256 * 1024
SNIFF = 8192
"""A file with a NUL byte in its first SNIFF bytes is binary."""


def is_binary(fd: int) -> bool:
    return b"\0" in os.pread(fd, SNIFF, 0)


class Lines:
    """The lines of `fd` from its start, split at b'\\n' (kept): each is its first `head`
    bytes and the number of bytes cut from it (the last one when the budget ran out: the cut
    read so far). After the loop, `ended` says the file was read to its end, `binary_at` where
    binary data stopped it, else the budget did."""

    def __init__(self, fd: int, *, head: int, budget: int, stop: Stop) -> None:
        self.fd, self.head, self.budget, self.stop = fd, head, budget, stop
        self.read = 0
        self.ended = False
        self.binary_at: int | None = None

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        part, cut = b"", 0  # the head of a line that goes on in the next chunk, what it lost
        while self.read < self.budget and not self.ended:
            self.stop.check()
            chunk = os.pread(self.fd, min(CHUNK, self.budget - self.read), self.read)
            if not chunk:
                self.ended = True
                break
            nul = chunk.find(b"\0")
            if nul >= 0:
                self.binary_at = self.read + nul
                chunk = chunk[:nul]
                self.ended = True  # as far as text goes
            self.read += len(chunk)
            start = 0
            while end := chunk.find(b"\n", start) + 1:
                line, lost = _grow(part, cut, chunk[start:end], self.head)
                yield line, lost
                part, cut, start = b"", 0, end
            if start < len(chunk):
                part, cut = _grow(part, cut, chunk[start:], self.head)
        if part or cut:
            yield part, cut


def _grow(part: bytes, cut: int, more: bytes, head: int) -> tuple[bytes, int]:
    room = head - len(part)
    if cut or len(more) > room:
        return part + more[: max(room, 0)], cut + len(more) - max(room, 0)
    return part + more, cut
