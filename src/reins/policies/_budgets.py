"""Budgets: caps on tokens, wall-clock time and cost, and the notices that tell the model what
is left of them (the step cap is `MaxSteps`).

Every cap and every mark passed is read off the folded state: the caps from `RunConfig` (a
resume may set new ones), the tokens and cost from the responses, the time from the events'
timestamps (`RunState.elapsed_at`), the marks already given from the notices. Caps are checked
before each model call, so a long tool call can take a run past its time budget, never into
another model call.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..core._policy import CONTINUE, BeforeRound, Inject, Policy, Stop
from ..core._state import RunState
from ..core._stop import StopReason

CONTINUING = (
    "[CONTINUING AFTER A CAP] The run stopped at a cap ({detail}) and is continued with new "
    "caps: {caps}. Go on with the task from where you stopped."
)
"""Said to the model when a run stopped by a cap is resumed."""


class TokenBudget(Policy):
    """Stops the run before a model call once its calls used `config.token_budget` tokens
    (input + output, as the model reported them)."""

    async def before_round(self, state: RunState) -> BeforeRound:
        cap = state.config.token_budget
        if cap is not None and (used := state.usage.total_tokens) >= cap:
            return Stop(StopReason.TOKEN_BUDGET, f"used {used} of the budget of {cap} tokens")
        return CONTINUE


class TimeBudget(Policy):
    """Stops the run before a model call once it has run `config.time_budget` seconds."""

    async def before_round(self, state: RunState) -> BeforeRound:
        cap = state.config.time_budget
        if cap is not None and (spent := state.elapsed_at(datetime.now(UTC))) >= cap:
            return Stop(
                StopReason.TIME_BUDGET, f"ran {spent:.1f} s of the budget of {cap:g} seconds"
            )
        return CONTINUE


class CostBudget(Policy):
    """Stops the run before a model call once its calls cost `config.cost_budget` US dollars
    (calls whose price the model catalog does not know count nothing)."""

    async def before_round(self, state: RunState) -> BeforeRound:
        cap = state.config.cost_budget
        if cap is not None and state.cost >= cap:
            return Stop(
                StopReason.COST_BUDGET, f"spent ${state.cost:.4f} of the budget of ${cap:g}"
            )
        return CONTINUE


class BudgetNotices(Policy):
    """Tells the model what is left, before the model call:

    - each round, when a token, time or cost budget is set: `step 7 of 20; 1200 of 50000
      tokens; ...` (only then: with the step cap alone, a per-round notice would cost an event
      and a message every round of every run);
    - steps: at 50 % a scope checkpoint (caps of 10 steps or more), at 70 % and 90 % a
      wrap-up warning (caps of 15 or more);
    - tokens and cost: wrap-up warnings at 70 % and 90 %; time: at 80 % and 90 %.

    Each mark is given once per cap (its notice records it; a new cap on resume re-arms it).
    Marks crossed together give the highest one; another due in the same round comes next
    round.
    """

    async def before_round(self, state: RunState) -> BeforeRound:
        config = state.config
        status = config.token_budget or config.time_budget or config.cost_budget
        if not status and state.step * 2 < config.max_steps:
            return CONTINUE  # the usual round: nothing to say (no step mark below 50 %)
        mark = self._mark(state)
        if mark is None:
            return Inject(self._status(state)) if status else CONTINUE
        key, text = mark
        if status:
            text = f"{self._status(state)}\n{text}"
        return Inject(text, mark=key)

    def _mark(self, state: RunState) -> tuple[str, str] | None:
        config = state.config
        cap = config.max_steps
        done = state.step
        left = cap - done
        marks = ((90, 70) if cap >= 15 else ()) + ((50,) if cap >= 10 else ())
        if (found := _passed(state, "steps", done, cap, marks)) is not None:
            key, pct = found
            if pct == 50:
                text = (
                    f"[SCOPE CHECKPOINT] Half of the step budget is used ({done} of {cap} "
                    "steps). Check your scope: what is done, what is left, and drop what the "
                    "goal does not need."
                )
            else:
                text = (
                    f"[WRAP UP] {pct} % of the step budget is used ({done} of {cap} steps; "
                    f"{left} left). {_WRAP[pct]}"
                )
            return key, text
        if (tokens := config.token_budget) is not None:
            used = state.usage.total_tokens
            if (found := _passed(state, "tokens", used, tokens, (90, 70))) is not None:
                key, pct = found
                return key, (
                    f"[WRAP UP] {pct} % of the token budget is used ({used} of {tokens} "
                    f"tokens). {_WRAP[pct]}"
                )
        dollars = config.cost_budget
        if dollars is not None and (found := _passed(state, "cost", state.cost, dollars, (90, 70))):
            key, pct = found
            return key, (
                f"[WRAP UP] {pct} % of the cost budget is used (${state.cost:.4f} of "
                f"${dollars:g}). {_WRAP[pct]}"
            )
        if (seconds := config.time_budget) is not None:
            spent = state.elapsed_at(datetime.now(UTC))
            if (found := _passed(state, "time", spent, seconds, (90, 80))) is not None:
                key, pct = found
                return key, (
                    f"[WRAP UP] {pct} % of the time budget is used ({spent:.0f} s of "
                    f"{seconds:g} s). {_WRAP[90 if pct == 90 else 70]}"
                )
        return None

    def _status(self, state: RunState) -> str:
        config = state.config
        parts = [f"step {state.step + 1} of {config.max_steps}"]
        if config.token_budget is not None:
            parts.append(f"{state.usage.total_tokens} of {config.token_budget} tokens")
        if config.time_budget is not None:
            spent = state.elapsed_at(datetime.now(UTC))
            parts.append(f"{spent:.0f} s of {config.time_budget:g} s")
        if config.cost_budget is not None:
            parts.append(f"${state.cost:.4f} of ${config.cost_budget:g}")
        return f"[BUDGET] {'; '.join(parts)}."


_WRAP = {
    70: "Start wrapping up: finish the essential part and prepare your final answer.",
    90: "Wrap up now: give your final answer soon, saying what is done and what is not.",
}


def _passed(
    state: RunState, what: str, used: float, cap: float, marks: tuple[int, ...]
) -> tuple[str, int] | None:
    """The highest of `marks` (percentages, highest first) that `used` reached, if not given."""
    for pct in marks:
        if used * 100 >= cap * pct:
            key = f"{what} {pct}% of {cap:g}"
            return None if key in state.marks else (key, pct)
    return None


def budget_stops(state: RunState) -> list[Policy]:
    """A stop per budget set."""
    config = state.config
    policies: list[Policy] = []
    if config.token_budget is not None:
        policies.append(TokenBudget())
    if config.time_budget is not None:
        policies.append(TimeBudget())
    if config.cost_budget is not None:
        policies.append(CostBudget())
    return policies


def budget_policies(state: RunState) -> list[Policy]:
    """The budget policies a run needs: a stop per budget set, then the notices (no notice
    just before a stop)."""
    return [*budget_stops(state), BudgetNotices()]
