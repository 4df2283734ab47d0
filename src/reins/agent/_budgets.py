"""`Budgets`: the caps of an agent's runs (steps, tokens, seconds, dollars) and what happens at
one, together as `Agent(budgets=Budgets(...))`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core._errors import UsageError

if TYPE_CHECKING:  # the CLI makes Budgets: the policies load with the loop, not for --help
    from ..policies import CapHandler

BUDGET_FIELDS = ("token_budget", "time_budget", "cost_budget")


@dataclass(frozen=True, kw_only=True)
class Budgets:
    """What a run may spend, and what happens when it reaches a cap."""

    max_steps: int = 30
    """Cap on the run's steps (model calls that may call tools)."""
    token_budget: int | None = None
    """Cap on the tokens (input + output) of the run's model calls; it stops `token_budget`."""
    time_budget: float | None = None
    """Cap on the run's wall-clock seconds (the time it was running, across resumes)."""
    cost_budget: float | None = None
    """Cap on the run's cost in US dollars (of calls whose price the catalog knows; a model
    whose price is unknown is a `UsageError` when the agent is made)."""
    notices: bool = True
    """Tell the model what is left of its budgets (the step checkpoint, the wrap-up warnings,
    the status each round when a token, time or cost budget is set); False: the caps still
    stop the run, silently."""
    at_cap: Literal["stop", "summarize"] = "stop"
    """At any cap: stop, or make one last call in which no tool may be called, whose reply is
    the answer, marked partial (`RunResult.partial`)."""
    on_cap: CapHandler | None = None
    """Asked at a step, token or time cap whether to go on (`CapOffer.choices`: +20/+60
    steps, +20000/+60000 tokens, +120/+300 s); None (headless): the run stops."""

    def __post_init__(self) -> None:
        """A cap that cannot work is said when it is made."""
        steps = self.max_steps
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise UsageError(f"max_steps={steps!r}: give a whole number")
        if steps < 1:
            raise UsageError(f"max_steps={steps!r}: it must be 1 or more")
        for name in BUDGET_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(f"{name}={value!r}: give a number (None: no budget)")
            if value <= 0:
                raise UsageError(f"{name}={value!r}: a budget is more than 0 (None: no budget)")
        if self.at_cap not in ("stop", "summarize"):
            raise UsageError(f"at_cap={self.at_cap!r}: say 'stop' or 'summarize'")
        if self.on_cap is not None and not callable(self.on_cap):
            raise UsageError(f"on_cap={self.on_cap!r}: give a function (None: the run stops)")
