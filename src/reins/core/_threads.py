"""The threads sync tool functions run in, and the last resort when one will not let go.

A thread cannot be killed: a call given up at its timeout or on a cancel may run on. So the
threads are daemon threads of our own, not the event loop's executor, which `asyncio.run`
waits for at its end (as the interpreter waits for a non-daemon thread at exit): one stuck
call kept `reins run` from ever exiting, SIGKILL needed.

Worse, a thread in C code that holds the GIL (a backtracking regex in Python's `re`) stops
every other thread, the event loop's with its timers and signal handlers: nothing written in
Python can act until it lets go. `Watchdog` is for the process that owns the loop (the CLI):
a faulthandler thread, in C, needing no GIL, ends the process a grace period after the
timeout of a call still running, unless the loop, alive, has put it off again.
"""

from __future__ import annotations

import contextlib
import contextvars
import faulthandler
import functools
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

GRACE = 10.0
"""Seconds past a call's timeout the loop has to take it back before the watchdog ends the
process (a loop that is alive does so at once)."""
SETTLE = 1.0
"""Seconds the process, its command done, waits for calls given up to end (a stoppable one
ends at its next check-in) before it exits without them."""


class _Workers:
    """Daemon threads taking calls from one queue; one is added when none is idle."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self.busy = 0
        """Calls submitted and not finished, those given up included."""

    def submit(self, future: Future[T], fn: Callable[[], T]) -> None:
        with self._lock:
            self.busy += 1
        self._calls.put((future, fn))
        if not self._idle.acquire(blocking=False):
            threading.Thread(target=self._work, name="reins-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            future, fn = self._calls.get()
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        result = fn()
                    except BaseException as exc:  # the awaiting side sees it, as to_thread's
                        future.set_exception(exc)
                    else:
                        future.set_result(result)
            finally:
                with self._lock:
                    self.busy -= 1
                    if not self.busy:
                        self._settled.notify_all()
                self._idle.release()

    def settle(self, seconds: float) -> bool:
        """Wait up to `seconds` for every call to end; whether they have."""
        with self._lock:
            return self._settled.wait_for(lambda: not self.busy, seconds)


_WORKERS = _Workers()


def running() -> int:
    """How many tool calls are still running in threads (given up ones included)."""
    return _WORKERS.busy


async def in_thread(fn: Callable[..., T], /, *args: Any, limit: float | None, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a daemon thread, in a copy of this context (as `to_thread`);
    `limit`: the seconds after which its awaiting side gives it up (the tool's timeout)."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    future: Future[T] = Future()
    watchdog = _watchdog
    if watchdog is not None and limit is not None:
        watchdog.cover(future, limit)  # first: once a call holds the GIL, nothing else runs
    _WORKERS.submit(future, call)
    import asyncio  # here: `reins --help` imports this module, and needs no event loop

    return await asyncio.wrap_future(future)


_watchdog: Watchdog | None = None


class Watchdog:
    """While installed (`with Watchdog():`, by the process's owner only: it may end the
    process), a call running in a thread past its timeout + `grace` ends the process, its
    threads' stacks written to stderr, if the event loop did not get to act in that time.
    On leaving, if calls still run (given up, stuck) after `SETTLE` seconds, the process
    exits with the exit code it had, rather than wait for them or run Python's shutdown
    beside them."""

    def __init__(self, grace: float | None = None) -> None:
        self.grace = GRACE if grace is None else grace
        self._due: dict[Future[Any], float] = {}
        self._lock = threading.Lock()  # `_due` loses a call in the call's own thread
        self._until = 0.0
        self._review: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._file: IO[str] | None = None

    def __enter__(self) -> Watchdog:
        global _watchdog
        try:
            sys.stderr.fileno()  # faulthandler writes to a file descriptor
            self._file = sys.stderr
        except (AttributeError, OSError, ValueError):
            self._file = None  # stderr captured in memory: no watchdog, nothing to write to
        _watchdog = self if self._file is not None else None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        global _watchdog
        _watchdog = None
        if running() and self._file is not None:  # the last word, should a thread hold on
            faulthandler.dump_traceback_later(SETTLE + self.grace, exit=True, file=self._file)
        settled = _WORKERS.settle(SETTLE)
        if self._file is not None:
            faulthandler.cancel_dump_traceback_later()
        if not settled:  # leave them: no Python shutdown beside a thread that runs on
            code = 0 if exc is None else exc.code if isinstance(exc, SystemExit) else 1
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(code if isinstance(code, int) else 0 if code is None else 1)

    def cover(self, future: Future[Any], timeout: float) -> None:
        """Watch a call started now (on the loop's thread); it is covered until it ends."""
        due = time.monotonic() + timeout
        with self._lock:
            self._due[future] = due
        future.add_done_callback(self._done)
        import asyncio

        # a new loop (an earlier one ended, its review with it): arm again, to review in this one
        if due + self.grace > self._until or self._loop is not asyncio.get_running_loop():
            self._arm(due)

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._due.pop(future, None)

    def _arm(self, due: float) -> None:
        """Fire two graces after `due` (a call due less than a grace later needs no arming of
        its own: each starts a thread), and look again half a grace before."""
        assert self._file is not None
        now = time.monotonic()
        self._until = max(due, now) + 2 * self.grace
        faulthandler.dump_traceback_later(
            self._until - now, exit=True, file=self._file, repeat=False
        )
        if self._review is not None:
            self._review.cancel()
        import asyncio

        loop = asyncio.get_running_loop()
        self._review = loop.call_later(self._until - now - self.grace / 2, self._look)
        self._loop = loop

    def _look(self) -> None:
        """The loop is alive: put the deadline off while calls run, else disarm."""
        self._review = None
        with self._lock:
            last = max(self._due.values(), default=None)
        if last is not None:
            self._arm(last)
        else:
            faulthandler.cancel_dump_traceback_later()
            self._until = 0.0
