"""An eval: every task of a suite attempted `repeat` times, each attempt recorded in the
store as it ends (`_record`), so an eval stopped part way is resumed from what it left."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..sandbox import SandboxPolicy
from ._attempt import AgentFactory, Attempt, attempt
from ._record import add_attempt, mend_record, record_path, start_record
from ._results import EvalResult, TaskResult
from ._suite import Suite


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
    )


async def run_eval(
    suite: Suite,
    result: EvalResult,
    make_agent: AgentFactory,
    policy: SandboxPolicy,
    store: Path,
    *,
    on_attempt: Callable[[Attempt], None] = lambda attempt: None,
) -> EvalResult:
    """Run the attempts of `suite` that `result` does not hold yet (all, for a new eval), one
    after another, each recorded as it ends; `result` with them all, in the suite's order."""
    path = record_path(store, result.eval_id)
    if path.exists():
        mend_record(path)
    else:
        start_record(store, result)
    done = {(a.task, a.attempt): a for a in result.attempts}
    tasks: list[TaskResult] = []
    for task in suite.tasks:
        into = TaskResult(task.id, task.tags, [])
        tasks.append(into)
        for number in range(1, result.repeat + 1):
            finished = done.get((task.id, number))
            if finished is None:
                finished = await attempt(task, number, make_agent, policy)
                add_attempt(path, finished)
                on_attempt(finished)
            into.attempts.append(finished)
        result.tasks = [*tasks]
    return result
