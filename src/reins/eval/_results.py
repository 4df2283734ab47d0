"""An eval's results: per task its attempts, and what they add up to."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ._attempt import Attempt


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
    tags: list[str] = field(default_factory=list[str])
    """The tags the suite's tasks were chosen by (none: all)."""
    model: str | None = None
    """The model given in place of the suite's default (none: the suite's)."""
    task_tags: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Each task's tags, as the suite said when the eval began."""

    @property
    def attempts(self) -> list[Attempt]:
        return [a for t in self.tasks for a in t.attempts]

    @property
    def pass_rate(self) -> float:
        return sum(t.passed for t in self.tasks) / len(self.tasks) if self.tasks else 0.0

    @property
    def pass_at_k(self) -> float:
        return sum(t.passed_any for t in self.tasks) / len(self.tasks) if self.tasks else 0.0

    def head(self) -> dict[str, Any]:
        """What was asked: the record's first line."""
        return {
            "eval_id": self.eval_id,
            "suite": self.suite,
            "started_at": self.started_at,
            "repeat": self.repeat,
            "tags": self.tags,
            "model": self.model,
            "task_tags": self.task_tags,
        }

    def to_json(self) -> dict[str, Any]:
        """What `--json FILE` writes; the names are the interface scripts rely on."""
        attempts = self.attempts
        return {
            **self.head(),
            "passed": sum(t.passed for t in self.tasks),
            "tasks_total": len(self.tasks),
            "pass_rate": round(self.pass_rate, 4),
            "pass_at_k": round(self.pass_at_k, 4),
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
