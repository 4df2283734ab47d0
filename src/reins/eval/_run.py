"""An eval: every task of a suite attempted `repeat` times, each attempt recorded (a line in
`<store>/evals/EVAL_ID.jsonl`, beside the session its run has in the log) as it ends."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..sandbox import SandboxPolicy
from ._attempt import AgentFactory, Attempt, attempt
from ._suite import Suite

EVALS = "evals"
"""The store's folder of eval records."""


def new_eval_id() -> str:
    return f"e{random.getrandbits(80):020x}"  # as run and session ids are made


@dataclass
class TaskResult:
    id: str
    tags: list[str]
    attempts: list[Attempt]

    @property
    def passed(self) -> bool:
        """Every attempt passed (pass^k; with one attempt, it passed)."""
        return bool(self.attempts) and all(a.passed for a in self.attempts)

    @property
    def passed_any(self) -> bool:
        """Some attempt passed (pass@k)."""
        return any(a.passed for a in self.attempts)


@dataclass
class EvalResult:
    eval_id: str
    suite: str
    started_at: str
    repeat: int
    tasks: list[TaskResult]

    @property
    def pass_rate(self) -> float:
        return sum(t.passed for t in self.tasks) / len(self.tasks) if self.tasks else 0.0

    def to_json(self) -> dict[str, Any]:
        """What `--json FILE` writes; the names are the interface scripts rely on."""
        attempts = [a for t in self.tasks for a in t.attempts]
        return {
            "eval_id": self.eval_id,
            "suite": self.suite,
            "started_at": self.started_at,
            "repeat": self.repeat,
            "passed": sum(t.passed for t in self.tasks),
            "tasks_total": len(self.tasks),
            "pass_rate": round(self.pass_rate, 4),
            "pass_at_k": round(sum(t.passed_any for t in self.tasks) / len(self.tasks), 4)
            if self.tasks
            else 0.0,
            "input_tokens": sum(a.input_tokens for a in attempts),
            "output_tokens": sum(a.output_tokens for a in attempts),
            "cost": round(sum(a.cost for a in attempts), 6),
            "seconds": round(sum(a.seconds for a in attempts), 3),
            "tasks": [
                {
                    "id": t.id,
                    "tags": t.tags,
                    "passed": t.passed,
                    "passed_any": t.passed_any,
                    "attempts": [dataclasses.asdict(a) for a in t.attempts],
                }
                for t in self.tasks
            ],
        }


async def run_eval(
    suite: Suite,
    make_agent: AgentFactory,
    policy: SandboxPolicy,
    store: Path,
    *,
    repeat: int = 1,
    on_attempt: Callable[[Attempt], None] = lambda attempt: None,
) -> EvalResult:
    """Attempt each task `repeat` times, one after another, each attempt's record appended
    to the eval's file as it ends (so what finished is kept if the eval is stopped)."""
    result = EvalResult(
        eval_id=new_eval_id(),
        suite=str(suite.path),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        repeat=repeat,
        tasks=[TaskResult(t.id, t.tags, []) for t in suite.tasks],
    )
    folder = store / EVALS
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / f"{result.eval_id}.jsonl"
    head = {
        k: v
        for k, v in result.to_json().items()
        if k in ("eval_id", "suite", "started_at", "repeat")
    }
    with record.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"eval": head}) + "\n")
        for task, into in zip(suite.tasks, result.tasks, strict=True):
            for number in range(1, repeat + 1):
                done = await attempt(task, number, make_agent, policy)
                into.attempts.append(done)
                out.write(json.dumps({"attempt": dataclasses.asdict(done)}) + "\n")
                out.flush()
                on_attempt(done)
    return result
