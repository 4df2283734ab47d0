"""`reins eval -j N`: the attempts in N worker processes, one at a time in each. A worker builds
its agents from a recipe that pickles, writes their runs to a log of its own on the store, and
keeps what lives in the process across its attempts (an embedded model loads once in each).

The workers ignore SIGINT, which the terminal sends the whole process group: the eval stops
them itself, closing the pipe they watch (`stop`); each cancels the attempt under way (which
kills its commands), so a Ctrl-C leaves no worker running and no worker's traceback on the
terminal. A pipe, not a multiprocessing Event: setting one waits for every worker that ever
waited on it, a dead one too."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core._errors import ReinsError, UsageError
from ..sandbox import SandboxPolicy
from ..store import SQLiteLog
from ._attempt import Attempt, attempt, failed
from ._suite import Task

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from ..agent import Agent
    from ..store import EventLog

AgentRecipe = Callable[[Task, Path, "EventLog"], "Agent"]
"""Builds the agent of an attempt at a task in a workspace, on a worker's log: what
`AgentFactory` is in the eval's own process. It goes to each worker pickled: a function of a
module, or a `functools.partial` of one with arguments that pickle."""


class WorkerDied(ReinsError):
    """A worker process ended in the middle of the eval (killed, or crashed in native code)."""


async def in_workers(
    todo: Sequence[tuple[Task, int]],
    recipe: AgentRecipe,
    policy: SandboxPolicy,
    store: Path,
    jobs: int,
    ended: Callable[[Attempt], None],
) -> None:
    """Run the attempts `todo` in `jobs` worker processes, `ended` told of each as it ends.
    Cancelled (a Ctrl-C), it stops the workers and waits for them to exit."""
    if not todo:
        return
    _check_pickles(recipe)
    # The store's index made here first: workers that create it at once can find it locked.
    await SQLiteLog(store).close()
    context = multiprocessing.get_context("spawn")  # not fork: this process has threads
    watched, stop = context.Pipe(duplex=False)  # closing `stop` stops the workers
    workers = min(jobs, len(todo))
    pool = ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start,
        initargs=(recipe, store, policy, workers, watched),
    )
    running: dict[asyncio.Future[Attempt | None], tuple[Task, int]] = {}
    try:
        with _born_ignoring_sigint():  # the pool starts its workers as the attempts go in
            running = {
                asyncio.wrap_future(pool.submit(_attempt, task, number)): (task, number)
                for task, number in todo
            }
        pending = set(running)
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                if (done := _outcome(future, *running[future])) is not None:
                    ended(done)
    except BaseException:
        stop.close()
        raise
    finally:
        for future in running:
            if not future.done():
                future.cancel()  # what it ends with is not waited for
            elif not future.cancelled():
                future.exception()  # seen: else asyncio logs it as never retrieved
        pool.shutdown(wait=True, cancel_futures=True)
        stop.close()
        watched.close()


def _outcome(future: asyncio.Future[Attempt | None], task: Task, number: int) -> Attempt | None:
    """The attempt a worker sent back; one that raised there is a failed attempt (None: the
    worker was stopped part way: not recorded, so a resume runs it)."""
    error = future.exception()
    if isinstance(error, BrokenProcessPool):
        raise WorkerDied("a worker process died (killed, or crashed in native code)") from None
    return failed(task, number, error) if error is not None else future.result()


def _check_pickles(recipe: AgentRecipe) -> None:
    try:
        pickle.dumps(recipe)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"recipe {recipe!r} cannot go to a worker process ({exc}): give a function of a "
            "module, or a functools.partial of one with arguments that pickle"
        ) from None


@contextlib.contextmanager
def _born_ignoring_sigint() -> Iterator[None]:
    """SIGINT ignored here while the workers start, which they inherit: a Ctrl-C before their
    `_start` would stop them mid-import, with a traceback each."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)


# What follows runs in the worker processes.


@dataclass
class _Worker:
    recipe: AgentRecipe
    log: SQLiteLog
    policy: SandboxPolicy
    watched: Connection
    """The read end of the eval's pipe: at its end, stop."""
    runner: asyncio.Runner
    stopped: threading.Event = dataclasses.field(default_factory=threading.Event)
    running: asyncio.Task[Attempt | None] | None = None

    def attempt(self, task: Task, number: int) -> Attempt | None:
        if self.stopped.is_set():
            return None
        try:
            return self.runner.run(self._attempted(task, number))
        except asyncio.CancelledError:  # stopped part way
            return None

    async def _attempted(self, task: Task, number: int) -> Attempt | None:
        self.running = asyncio.current_task()
        try:
            if self.stopped.is_set():  # before this task was there to cancel
                return None
            done = await attempt(task, number, self._agent, self.policy)
            await self.log.commit()  # its run whole in the store before the eval records it
        finally:
            self.running = None
        return dataclasses.replace(done, worker=os.getpid())

    def _agent(self, task: Task, workspace: Path) -> Agent:
        return self.recipe(task, workspace, self.log)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a thread: once the eval closes its pipe, cancel the attempt under way."""
        with contextlib.suppress(OSError):
            self.watched.poll(None)  # nothing is ever sent: this returns at the pipe's end
        self.stopped.set()
        with contextlib.suppress(RuntimeError):  # the loop closed: this process is exiting
            loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self.running is not None:
            self.running.cancel()

    def close(self) -> None:
        self.runner.run(self.log.close())
        self.runner.close()


_worker: _Worker | None = None
"""This process's, when it is a worker."""


def _start(
    recipe: AgentRecipe, store: Path, policy: SandboxPolicy, jobs: int, watched: Connection
) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the eval stops its workers itself
    _share_cores(jobs)
    runner = asyncio.Runner()
    _worker = worker = _Worker(recipe, SQLiteLog(store), policy, watched, runner)
    watch = threading.Thread(target=worker.watch, args=(runner.get_loop(),), daemon=True)
    watch.start()
    atexit.register(worker.close)


def _attempt(task: Task, number: int) -> Attempt | None:
    assert _worker is not None, "run in a worker process, after _start"
    return _worker.attempt(task, number)


def _share_cores(jobs: int) -> None:
    """An embedded model's threads: this worker's share of the cores, unless
    REINS_LOCAL_THREADS says. llama.cpp's threads wait on each other: one left waiting for a
    core another worker holds stalls them all."""
    if "REINS_LOCAL_THREADS" not in os.environ:
        from ..models._local import _default_threads

        os.environ["REINS_LOCAL_THREADS"] = str(max(1, _default_threads() // jobs))
