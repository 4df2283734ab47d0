"""Two evals side by side (`reins eval compare A B`): the tasks both ran, which flipped each
way, the change in pass rate with McNemar's exact test on the flips, and cost and time."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._results import EvalResult


@dataclass(frozen=True)
class Comparison:
    a: EvalResult
    b: EvalResult
    shared: list[str]
    """The tasks both evals ran, in A's order."""
    gained: list[str]
    """Failed in A, passed in B."""
    lost: list[str]
    """Passed in A, failed in B."""
    p_value: float
    """McNemar's exact two-sided test on the flips: how likely so lopsided a split of them is
    if neither eval is better (1.0: no flips)."""

    @property
    def rate_a(self) -> float:
        return _rate(self.a, self.shared)

    @property
    def rate_b(self) -> float:
        return _rate(self.b, self.shared)

    @property
    def cost_ratio(self) -> float | None:
        return _ratio(_total(self.b, self.shared, "cost"), _total(self.a, self.shared, "cost"))

    @property
    def time_ratio(self) -> float | None:
        return _ratio(
            _total(self.b, self.shared, "seconds"), _total(self.a, self.shared, "seconds")
        )


def compare(a: EvalResult, b: EvalResult) -> Comparison:
    passed_a = {t.id: t.passed for t in a.tasks}
    passed_b = {t.id: t.passed for t in b.tasks}
    shared = [task for task in passed_a if task in passed_b]
    gained = [t for t in shared if passed_b[t] and not passed_a[t]]
    lost = [t for t in shared if passed_a[t] and not passed_b[t]]
    return Comparison(a, b, shared, gained, lost, mcnemar_exact(len(gained), len(lost)))


def mcnemar_exact(b: int, c: int) -> float:
    """The exact (binomial) McNemar test of `b` flips one way against `c` the other."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _rate(result: EvalResult, tasks: list[str]) -> float:
    passed = {t.id: t.passed for t in result.tasks}
    return sum(passed[t] for t in tasks) / len(tasks) if tasks else 0.0


def _total(result: EvalResult, tasks: list[str], what: str) -> float:
    wanted = set(tasks)
    return float(sum(getattr(a, what) for t in result.tasks if t.id in wanted for a in t.attempts))


def _ratio(top: float, bottom: float) -> float | None:
    return top / bottom if bottom > 0 else None
