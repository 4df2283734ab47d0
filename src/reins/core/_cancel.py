"""Cooperative cancellation of a run (Ctrl-C, a server's stop button, another thread)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class Cancel:
    """Set once; the loop checks it between stages and races model and tool calls against it."""

    def __init__(self) -> None:
        self._set = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._racing: set[asyncio.Task[Any]] = set()
        self._interrupted: set[asyncio.Task[Any]] = set()

    @property
    def is_set(self) -> bool:
        return self._set

    def cancel(self) -> None:
        """Safe to call from any thread or a signal handler."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._set = True
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._fire()
        else:
            loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        if self._set:
            return  # a second request must not cancel a task twice: `race` takes back one
        self._set = True
        for task in self._racing:
            self._interrupted.add(task)
            task.cancel()

    async def race(self, awaitable: Awaitable[T]) -> T | None:
        """The awaitable's result, or None if the run is cancelled before it completes.

        Like `asyncio.timeout`, it interrupts the current task and takes back its own
        cancellation request (`uncancel`), so no extra task is needed per call."""
        if self._set:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()
            return None
        task = asyncio.current_task()
        assert task is not None, "Cancel.race runs inside a task"
        self._loop = task.get_loop()
        self._racing.add(task)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if task in self._interrupted:
                self._interrupted.discard(task)
                if task.uncancel() == 0:
                    return None
            raise
        finally:
            self._racing.discard(task)
