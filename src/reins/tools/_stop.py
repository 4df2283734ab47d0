"""Stopping a sync tool: its thread cannot be killed, so a tool that can be stopped checks in
at safe points, and once its call is abandoned (timed out, cancelled) it makes no more effects.

A write's commit point (the rename) runs under the same lock as `Stop.abandon`: when the
awaiting side has abandoned the call, the write either happened before or never will."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from ..core._threads import in_thread

T = TypeVar("T")


class Abandoned(Exception):
    """Raised in a tool's thread at a check-in after its call was given up; nobody awaits it."""


class Stop:
    __slots__ = ("_lock", "abandoned", "committed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.abandoned = self.committed = False

    def abandon(self) -> None:
        with self._lock:  # waits for a commit under way (one rename), so none starts after
            self.abandoned = True

    def check(self) -> None:
        if self.abandoned:
            raise Abandoned

    @contextmanager
    def commit(self) -> Iterator[None]:
        """The block runs only if the call is still wanted, and is not abandoned midway."""
        with self._lock:
            self.check()
            yield
            self.committed = True


_CURRENT: ContextVar[Stop | None] = ContextVar("reins_tool_stop", default=None)
_GIVEN_UP: ContextVar[Stop | None] = ContextVar("reins_tool_given_up", default=None)
_NEVER = Stop()


def current() -> Stop:
    """The Stop of the call this thread works for (one never abandoned outside the executor)."""
    return _CURRENT.get() or _NEVER


async def run_stoppable(
    fn: Callable[..., T], /, *args: Any, limit: float | None, **kwargs: Any
) -> T:
    """`fn` in a thread (which sees its Stop: `in_thread` copies the context), abandoned if the
    awaiting task is cancelled."""
    stop = Stop()
    token = _CURRENT.set(stop)
    try:
        return await in_thread(fn, *args, limit=limit, **kwargs)
    except asyncio.CancelledError:
        stop.abandon()
        _GIVEN_UP.set(stop)  # for the executor's message, in this task's context
        raise
    finally:
        _CURRENT.reset(token)


def given_up() -> Stop | None:
    """The Stop of the stoppable call this task gave up last: did it commit before?"""
    return _GIVEN_UP.get()
