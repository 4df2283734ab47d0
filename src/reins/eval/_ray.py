"""`reins eval --ray [ADDRESS]`: the attempts as Ray tasks across a cluster (`reins[ray]`).

Each task runs the same `attempt` as the local runner, in a workspace of its own on its node.
Its run goes to the shared store when the eval's store is PostgreSQL (every node reaches it);
else into a log in the task's memory, shipped back with the attempt and appended here to the
driver's store. A task whose node dies is run again by Ray (`max_retries`); only the run that
comes back is counted or recorded, once per attempt: a dead attempt's shipped events never
arrive, and a late duplicate of an attempt already counted is dropped. (On PostgreSQL, what a
dead attempt wrote before it died stays there as a run that never finished, counted nowhere.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core._errors import ReinsError, UsageError
from ..core._events import Event
from ..sandbox import SandboxPolicy
from ._attempt import Attempt, attempt
from ._suite import Task
from ._workers import AgentRecipe, WorkerDied, _check_pickles

if TYPE_CHECKING:
    from ..agent import Agent
    from ..store import EventLog

RETRIES = 3
"""Times Ray runs an attempt again whose node or worker died, before the eval stops."""


@dataclass(frozen=True, kw_only=True)
class OnRay:
    """Where `run_eval` sends its attempts: a Ray cluster (connected to by `connected`)."""

    home: EventLog
    """The driver's log: where runs shipped back from the nodes are recorded."""
    shared_store: str | None = None
    """A PostgreSQL address every node writes its runs to; none: they are shipped back."""


def need_ray() -> None:
    """A UsageError saying what to install when the extra is missing."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise UsageError("--ray runs the attempts on a Ray cluster: pip install 'reins[ray]'")


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[None]:
    """Ray joined for the eval: the cluster at `address`, or (none) a Ray on this machine,
    started for the eval and stopped after it."""
    need_ray()
    import ray

    if address:
        _reachable(address)
    ray.init(
        address=address or None,
        logging_level=logging.ERROR,  # not the lines Ray logs as it connects
        log_to_driver=False,  # the attempts' own output is not the eval's
        include_dashboard=False if not address else None,
    )
    try:
        yield
    finally:
        ray.shutdown()


def _reachable(address: str) -> None:
    """Ray retries an address that does not answer for minutes: it is tried once first."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto":
        return
    if not host or not port.isdigit():
        raise UsageError(f"--ray {address}: not HOST:PORT (the head node's GCS address)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ReinsError(f"--ray {address}: no Ray cluster answers there ({exc})") from None


async def on_ray(
    todo: Sequence[tuple[Task, int]],
    recipe: AgentRecipe,
    policy: SandboxPolicy,
    where: OnRay,
    ended: Callable[[Attempt], None],
) -> None:
    """Run the attempts `todo` as Ray tasks on the cluster joined (`connected`), `ended` told
    of each once, as it comes back. Cancelled (a Ctrl-C), the tasks are cancelled too."""
    if not todo:
        return
    import ray

    _check_pickles(recipe)
    remote = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(_on_node)
    running: dict[asyncio.Future[tuple[Attempt, list[Event]]], Any] = {}
    counted: set[tuple[str, int]] = set()
    for task, number in todo:
        ref = remote.remote(recipe, policy, where.shared_store, task, number)
        running[asyncio.wrap_future(ref.future())] = ref
    pending = set(running)
    try:
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                if (done := await _shipped(future, where.home, counted)) is not None:
                    ended(done)
    finally:
        for future, ref in running.items():
            if not future.done():
                ray.cancel(ref, force=True)
                future.cancel()
            elif not future.cancelled():
                future.exception()  # seen: else asyncio logs it as never retrieved


async def _shipped(
    future: asyncio.Future[tuple[Attempt, list[Event]]],
    home: EventLog,
    counted: set[tuple[str, int]],
) -> Attempt | None:
    """The attempt a task sent back, its shipped events recorded in `home` (none: one of the
    same attempt was counted already)."""
    import ray.exceptions

    try:
        done, events = future.result()
    except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError) as exc:
        raise WorkerDied(
            f"an attempt's Ray node or worker died {RETRIES + 1} times ({type(exc).__name__})"
        ) from None
    except ray.exceptions.RayError as exc:  # outside the attempt's own catch: Ray's, or ours
        said = " ".join(str(exc).split())[:300]
        raise ReinsError(f"an attempt's Ray task failed: {type(exc).__name__}: {said}") from None
    if (done.task, done.attempt) in counted:
        return None
    counted.add((done.task, done.attempt))
    for event in events:
        await home.append(event, commit=False)
    await home.commit()  # its run whole in the store before the eval records it
    return done


# What follows runs on the cluster's nodes.


def _on_node(
    recipe: AgentRecipe, policy: SandboxPolicy, shared_store: str | None, task: Task, number: int
) -> tuple[Attempt, list[Event]]:
    """Attempt `number` at `task` here; with its run's events when there is no shared store."""
    return asyncio.run(_attempted(recipe, policy, shared_store, task, number))


async def _attempted(
    recipe: AgentRecipe, policy: SandboxPolicy, shared_store: str | None, task: Task, number: int
) -> tuple[Attempt, list[Event]]:
    from ..store import MemoryLog, open_log

    log = open_log(shared_store) if shared_store else MemoryLog()

    def make_agent(task: Task, workspace: Path) -> Agent:
        return recipe(task, workspace, log)

    try:
        done = await attempt(task, number, make_agent, policy)
        events: list[Event] = []
        if isinstance(log, MemoryLog):  # shipped back: every run the attempt made (subagents)
            for run in await log.runs():
                events += await log.events(run.run_id)
    finally:
        await log.close()
    return dataclasses.replace(done, worker=os.getpid()), events
