"""New journal files made ahead of need, on a thread, where creating a file is slow.

Creating a file can be the slowest step of recording a run: on a busy VM's ext4 it takes 40 to
500 µs (allocating the inode), where linking an existing empty file under the new name takes
about 15. So once creates here prove slow, a thread keeps a few empty files in `.spares/` and a
new journal is one of them, linked under its name. Where creates are fast the thread is never
started: its hand-offs of the GIL would cost more than it saves.

Spares are named after the process that made them. One left by a crash is an empty file, removed
by the next process that starts a thread on the directory; a forked child makes its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections import deque
from pathlib import Path

CREATE = os.O_WRONLY | os.O_CREAT | os.O_APPEND
log = logging.getLogger("reins.store")


class Spares:
    SLOW_CREATE = 50e-6
    """Seconds; a create slower than this counts as slow."""
    SLOW_CREATES = 3
    """Slow creates seen before the thread starts (one may be a hiccup of the machine)."""
    LOW, BATCH = 8, 32
    """The thread tops the stock up to BATCH when it falls under LOW."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._slow = 0
        self._ready: deque[tuple[str, int]] = deque()
        self._wanted = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def create(self, path: str) -> int:
        """Open `path` for appending, creating it if it does not exist."""
        start = time.perf_counter()
        fd = os.open(path, CREATE, 0o644)
        if self._thread is None and time.perf_counter() - start > self.SLOW_CREATE:
            self._slow += 1
            if self._slow == self.SLOW_CREATES:
                self._start()
        return fd

    def take(self, path: str) -> int | None:
        """A descriptor of a new, empty file now named `path`; None if no spare is at hand or
        `path` exists (the caller then opens it with `create`)."""
        if self._thread is None:
            return None
        if self._pid != os.getpid():
            self._forget()
            return None
        if len(self._ready) < self.LOW:
            self._wanted.set()
        try:
            name, fd = self._ready.popleft()
        except IndexError:
            return None
        try:
            os.link(name, path)  # unlike a rename, it never replaces an existing journal
        except FileExistsError:
            self._ready.appendleft((name, fd))
            return None
        except FileNotFoundError:  # removed by another process's clean-up
            os.close(fd)
            return None
        except OSError as exc:  # a filesystem without hard links, say: no more spares
            self._ready.appendleft((name, fd))  # for `close` to remove
            log.debug("no spare journals in %s: %s", self.directory, exc)
            self.close()
            return None
        os.unlink(name)
        return fd

    def _forget(self) -> None:
        """In a forked child: the spares are the parent's, and the thread did not come along."""
        while self._ready:
            os.close(self._ready.popleft()[1])
        self._thread, self._slow, self._pid = None, 0, os.getpid()

    def _start(self) -> None:
        """Start the thread; if that cannot be done, journals are simply created as needed."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for entry in os.scandir(self.directory):  # spares of processes that are gone
                if not _alive(entry.name.partition("-")[0]):
                    with contextlib.suppress(OSError):  # another process cleaned up first
                        os.unlink(entry.path)
            thread = threading.Thread(target=self._fill, name="reins-spares", daemon=True)
            thread.start()
        except (OSError, RuntimeError) as exc:  # RuntimeError: no thread can be started
            log.debug("no spare journals in %s: %s", self.directory, exc)
            return
        self._thread = thread
        self._wanted.set()

    def _fill(self) -> None:
        # One syscall a spare, nothing else: each one the thread makes is a GIL hand-off.
        prefix = f"{self.directory}/{os.getpid()}-{secrets.token_hex(4)}-"
        count = 0
        while not self._closed:
            self._wanted.wait()
            self._wanted.clear()
            while len(self._ready) < self.BATCH and not self._closed:
                count += 1
                name = f"{prefix}{count}"
                try:
                    fd = os.open(name, CREATE | os.O_EXCL, 0o644)
                except OSError:  # a full disk, say: journals are created as they are needed
                    return
                self._ready.append((name, fd))

    def close(self) -> None:
        """Stop the thread and remove the spares left."""
        if self._thread is None or self._pid != os.getpid():
            return
        self._closed = True
        self._wanted.set()
        self._thread.join()
        while self._ready:
            name, fd = self._ready.popleft()
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(name)


def _alive(pid: str) -> bool:
    """True if process `pid` exists (spares are named after the process that made them)."""
    try:
        os.kill(int(pid), 0)
    except ValueError:
        return False  # not a spare's name
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user
    return True
