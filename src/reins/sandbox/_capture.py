"""Output kept while it is read: the head and the tail, the middle only counted."""

from __future__ import annotations


class CappedOutput:
    """At most `limit` bytes are held at any time, however much is fed: the first half of the
    limit, and the last half (a window that slides over the rest)."""

    def __init__(self, limit: int) -> None:
        self._head_max = limit - limit // 2
        self._tail_max = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes fed so far."""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or not self._tail_max:
            return
        self._tail += data
        if len(self._tail) > 2 * self._tail_max:  # trim in bulk: amortized O(1) per byte
            del self._tail[: -self._tail_max]

    @property
    def cut(self) -> int:
        """Bytes dropped from the middle."""
        return self.total - len(self._head) - min(len(self._tail), self._tail_max)

    def text(self) -> str:
        """The kept output, with a marker where bytes were cut."""
        tail = bytes(self._tail[-self._tail_max :]) if self._tail_max else b""
        head = self._head.decode(errors="replace")
        if not self.cut:
            return (bytes(self._head) + tail).decode(errors="replace")
        return f"{head}\n[... {self.cut} bytes cut ...]\n{tail.decode(errors='replace')}"
