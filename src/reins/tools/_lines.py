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
    """The lines of `fd` from its start, split at b'\\n', in batches (one a chunk read, decoded
    at once: a line at a time costs more than the reading). A batch is the lines, without their
    newline, and `{index: bytes cut}` for those longer than `head`, which keep their head.

    After the loop: `ended` says the file was read to its end (or, with `binary_at` set, to
    where binary data begins), else the budget stopped it; `unterminated` says the last line
    had no newline (or was cut off by the budget)."""

    def __init__(self, fd: int, *, size: int, head: int, budget: int, stop: Stop) -> None:
        self.fd, self.size, self.head, self.budget, self.stop = fd, size, head, budget, stop
        self.read = 0
        self.ended = self.unterminated = False
        self.cr = False
        """The batch just yielded may hold a carriage return."""
        self.binary_at: int | None = None

    def __iter__(self) -> Iterator[tuple[list[str], dict[int, int]]]:
        head = self.head
        part, cut = b"", 0  # the head of a line that goes on in the next chunk, what it lost
        while self.read < self.budget and not self.ended:
            self.stop.check()
            # No more than the file holds, as far as we know: a big buffer costs more than a read.
            want = min(CHUNK, self.budget - self.read, max(self.size - self.read, SNIFF))
            chunk = os.pread(self.fd, want, self.read)
            if not chunk:
                self.ended = True
                break
            nul = chunk.find(b"\0")
            if nul >= 0:
                self.binary_at = self.read + nul
                chunk = chunk[:nul]
                self.ended = True  # as far as text goes
            self.read += len(chunk)
            last = chunk.rfind(b"\n")
            if last < 0:
                part, cut = _grow(part, cut, chunk, head)
                continue
            lines: list[str] = []
            cuts: dict[int, int] = {}
            start = 0
            if part or cut:  # the end of the line the last chunk began
                start = chunk.find(b"\n") + 1
                line, lost = _grow(part, cut, chunk[: start - 1], head)
                lines.append(line.decode("utf-8", errors="replace"))
                if lost:
                    cuts[0] = lost
            if start <= last:
                more = chunk[start:last].decode("utf-8", errors="replace").split("\n")
                if last - start > head and max(map(len, more)) > head:
                    for i, text in enumerate(more):
                        if len(text) > head:
                            cuts[len(lines) + i] = len(text[head:].encode())
                            more[i] = text[:head]
                lines += more
            part, cut = _grow(b"", 0, chunk[last + 1 :], head)
            self.cr = b"\r" in chunk
            yield lines, cuts
        if part or cut:
            self.unterminated = True
            self.cr = b"\r" in part
            yield [part.decode("utf-8", errors="replace")], ({0: cut} if cut else {})


def _grow(part: bytes, cut: int, more: bytes, head: int) -> tuple[bytes, int]:
    room = head - len(part)
    if cut or len(more) > room:
        return part + more[: max(room, 0)], cut + len(more) - max(room, 0)
    return part + more, cut
