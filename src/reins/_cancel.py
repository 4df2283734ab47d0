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
        self._tasks: set[asyncio.Future[Any]] = set()

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
        self._set = True
        for task in self._tasks:
            task.cancel()

    async def race(self, awaitable: Awaitable[T]) -> T | None:
        """The awaitable's result, or None if the run is cancelled before it completes."""
        self._loop = asyncio.get_running_loop()
        if self._set:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()
            return None
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._set and (current is None or current.cancelling() == 0):
                return None
            raise
        finally:
            self._tasks.discard(task)
