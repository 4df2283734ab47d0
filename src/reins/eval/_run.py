"""An eval: every task of a suite attempted `repeat` times, here, in worker processes
(`_workers`) or on a Ray cluster (`_ray`), each attempt recorded in the store as it ends
(`_record`), so an eval stopped part way is resumed from what it left."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..sandbox import SandboxPolicy
from ._attempt import AgentFactory, Attempt, attempt
from ._ray import OnRay, on_ray
from ._record import add_attempt, mend_record, record_path, start_record
from ._results import EvalResult, TaskResult
from ._suite import Suite, Task
from ._workers import AgentRecipe, in_workers


def new_eval_id() -> str:
    return f"e{random.getrandbits(80):020x}"  # as run and session ids are made


def new_eval(suite: Suite, *, repeat: int, tags: list[str], model: str | None) -> EvalResult:
    return EvalResult(
        eval_id=new_eval_id(),
        suite=str(suite.path),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        repeat=repeat,
        tasks=[],
        tags=tags,
        model=model,
        task_tags={task.id: task.tags for task in suite.tasks},
    )


async def run_eval(
    suite: Suite,
    result: EvalResult,
    make_agent: AgentFactory,
    policy: SandboxPolicy,
    store: Path,
    *,
    jobs: int = 1,
    on_attempt: Callable[[Attempt], None] = lambda attempt: None,
    recipe: AgentRecipe | None = None,
    ray: OnRay | None = None,
) -> EvalResult:
    """Run the attempts of `suite` that `result` does not hold yet (all, for a new eval),
    `jobs` at a time, each recorded as it ends; `result` with them all, in the suite's order.
    Given a `recipe`, `jobs` > 1 go to as many worker processes (`_workers`); else they share
    this process, their agents from `make_agent`. Given `ray` too, they are Ray tasks on the
    cluster joined (`_ray.connected`), as many at once as it has CPUs."""
    path = record_path(store, result.eval_id)
    if path.exists():
        mend_record(path)
    else:
        start_record(store, result)
    done = {(a.task, a.attempt): a for a in result.attempts}

    def ended(finished: Attempt) -> None:
        add_attempt(path, finished)  # whole lines, written from the one event loop
        on_attempt(finished)
        done[finished.task, finished.attempt] = finished

    planned = [(task, n) for task in suite.tasks for n in range(1, result.repeat + 1)]
    todo = [(task, n) for task, n in planned if (task.id, n) not in done]
    if ray is not None and recipe is not None:
        await on_ray(todo, recipe, policy, ray, ended)
    elif jobs > 1 and recipe is not None:
        await in_workers(todo, recipe, policy, store, jobs, ended)
    else:
        await _in_process(todo, make_agent, policy, jobs, ended)
    by_task = {task.id: TaskResult(task.id, task.tags, []) for task in suite.tasks}
    for task, n in planned:
        by_task[task.id].attempts.append(done[task.id, n])
    result.tasks = list(by_task.values())
    return result


async def _in_process(
    todo: list[tuple[Task, int]],
    make_agent: AgentFactory,
    policy: SandboxPolicy,
    jobs: int,
    ended: Callable[[Attempt], None],
) -> None:
    slots = asyncio.Semaphore(jobs)

    async def one(task: Task, number: int) -> None:
        async with slots:
            finished = await attempt(task, number, make_agent, policy)
        ended(finished)

    await asyncio.gather(*(one(task, n) for task, n in todo))
