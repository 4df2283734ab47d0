"""An eval: every task of a suite attempted `repeat` times, each attempt recorded in the
store as it ends (`_record`), so an eval stopped part way is resumed from what it left."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..sandbox import SandboxPolicy
from ._attempt import AgentFactory, Attempt, attempt
from ._record import add_attempt, mend_record, record_path, start_record
from ._results import EvalResult, TaskResult
from ._suite import Suite, Task


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
) -> EvalResult:
    """Run the attempts of `suite` that `result` does not hold yet (all, for a new eval),
    `jobs` at a time, each recorded as it ends; `result` with them all, in the suite's order."""
    path = record_path(store, result.eval_id)
    if path.exists():
        mend_record(path)
    else:
        start_record(store, result)
    done = {(a.task, a.attempt): a for a in result.attempts}
    slots = asyncio.Semaphore(jobs)

    async def one(task: Task, number: int) -> Attempt:
        if (finished := done.get((task.id, number))) is not None:
            return finished
        async with slots:
            finished = await attempt(task, number, make_agent, policy)
        add_attempt(path, finished)  # whole lines, written from the one event loop
        on_attempt(finished)
        return finished

    planned = [(task, n) for task in suite.tasks for n in range(1, result.repeat + 1)]
    attempts = await asyncio.gather(*(one(task, n) for task, n in planned))
    by_task = {task.id: TaskResult(task.id, task.tags, []) for task in suite.tasks}
    for (task, _), finished in zip(planned, attempts, strict=True):
        by_task[task.id].attempts.append(finished)
    result.tasks = list(by_task.values())
    return result
