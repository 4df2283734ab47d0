"""Threads that start commands: each child born in a fresh pids cgroup, optionally in a
Landlock scope, with the slow part done before the command is asked for.

Moving a thread into a cgroup (v1) waits for an RCU grace period, about 6 ms: twice per
command if done on the spot (in, then out). A spawner thread instead moves into the next
command's cgroup right after starting the last one, while that command runs; a command then
starts from a thread already in its cgroup.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from . import _cgroup, _landlock
from ._cgroup import PidsCgroup

T = TypeVar("T")
THREADS = 4
"""As many as the agent's default of tool calls run at once."""
_Job = tuple[int | None, Callable[[], Any], "Future[tuple[Any, PidsCgroup | None]]"]


class Spawner:
    """Threads that run process starts; see the module's doc. Each takes a job only when it is
    ready (in a fresh cgroup), so commands started in quick succession do not wait for one
    thread's move."""

    def __init__(self, *, scoped: bool, cgroups: bool) -> None:
        self._scoped = scoped
        self.cgroups = cgroups
        """Does it start each process in a fresh pids cgroup?"""
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._threads = []
        for _ in range(THREADS):
            ready: Future[None] = Future()
            thread = threading.Thread(target=self._serve, args=(ready,), name="reins-spawner")
            thread.daemon = True
            thread.start()
            ready.result()
            self._threads.append(thread)

    def start(self, processes: int | None, job: Callable[[], T]) -> tuple[T, PidsCgroup | None]:
        """`job()` (a process start) in the thread; and the cgroup the process was born in.
        The calling thread waits, as for any process start."""
        if not any(t.is_alive() for t in self._threads):  # every error is caught there, but
            raise RuntimeError("the reins-spawner threads are gone")  # never wait on none
        done: Future[tuple[Any, PidsCgroup | None]] = Future()
        self._jobs.put((processes, job, done))
        return done.result()

    def _serve(self, ready: Future[None]) -> None:
        try:
            if self._scoped:
                _landlock.restrict_this_thread()
        except OSError as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        nursery: PidsCgroup | None = None
        while True:
            if self.cgroups and nursery is None:
                nursery = _entered()
            processes, job, done = self._jobs.get()
            cgroup = nursery
            try:
                if cgroup is not None:
                    cgroup.set_limit(processes + 1 if processes else None)  # this thread's 1
                result = job()
            except BaseException as exc:
                done.set_exception(exc)
                continue
            done.set_result((result, cgroup))
            if cgroup is not None:
                nursery = _entered()  # out of the command's cgroup, into the next one
                with contextlib.suppress(OSError):  # it may be gone already
                    cgroup.set_limit(processes)


def _entered() -> PidsCgroup | None:
    """A fresh cgroup with this thread in it; None if that fails (the command then runs
    without a process limit, as where there are no cgroups)."""
    try:
        cgroup = PidsCgroup.create(None)
    except Exception:
        return None
    if cgroup is None:
        return None
    try:
        cgroup.enter()
    except Exception:
        cgroup.close()
        return None
    return cgroup


def spawner(*, scoped: bool) -> Spawner | None:
    """This process's spawner (scoped or not), or None where neither a Landlock scope nor
    movable threads (cgroup v1 pids) are to be had: then the caller starts the process itself.
    A forked child makes its own (threads do not fork)."""
    key = (os.getpid(), scoped)
    if key not in _spawners:
        cgroups = _cgroup.threads_movable()
        wanted = _landlock.available() if scoped else cgroups
        _spawners[key] = _make(scoped, cgroups) if wanted else None
    return _spawners[key]


_spawners: dict[tuple[int, bool], Spawner | None] = {}


def _make(scoped: bool, cgroups: bool) -> Spawner | None:
    try:
        return Spawner(scoped=scoped, cgroups=cgroups)
    except OSError:
        return None
