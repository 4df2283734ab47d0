"""The offer to continue at a cap: a run stopped by `max_steps` or a budget asks whoever can
answer whether to go on, and with how much more (the budget policies are `reins.policies`)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._events import RunConfig
from ._stop import StopReason

CAP_REASONS = frozenset(
    {
        StopReason.MAX_STEPS,
        StopReason.TOKEN_BUDGET,
        StopReason.TIME_BUDGET,
        StopReason.COST_BUDGET,
    }
)
"""The stop reasons of caps: a run stopped by one can be summarized, and resumed with more."""

SUMMARY_REQUEST = (
    "[CAP REACHED] {detail}. No more tool calls are possible. Reply now with your final answer "
    "from the work done so far: what is done (with its evidence), what is not, and what the "
    "next steps would be. Say plainly that the task is unfinished if it is."
)
"""The last message before the summary call of `at_cap = "summarize"`."""


@dataclass(frozen=True, kw_only=True)
class CapOffer:
    """A run reached a cap: whoever is asked may choose one of `choices` to go on."""

    session_id: str
    run_id: str
    reason: StopReason
    detail: str
    choices: tuple[str, ...]


CapHandler: TypeAlias = Callable[[CapOffer], str | Awaitable[str | None] | None]
"""Answers a `CapOffer` with one of its choices, or None to stop (sync or async)."""

EXTENSIONS: dict[StopReason, tuple[str, dict[str, int]]] = {
    StopReason.MAX_STEPS: ("max_steps", {"+20 steps": 20, "+60 steps": 60}),
    StopReason.TOKEN_BUDGET: ("token_budget", {"+20000 tokens": 20_000, "+60000 tokens": 60_000}),
    StopReason.TIME_BUDGET: ("time_budget", {"+120 s": 120, "+300 s": 300}),
}
"""What may be added at each cap (none at the cost cap: more money is asked for on resume)."""


def cap_choices(reason: StopReason) -> tuple[str, ...]:
    found = EXTENSIONS.get(reason)
    return tuple(found[1]) if found else ()


def extended(config: RunConfig, reason: StopReason, choice: str) -> dict[str, Any]:
    """The caps after `choice` (one of `cap_choices(reason)`) is added to the one reached."""
    field, amounts = EXTENSIONS[reason]
    caps: dict[str, Any] = {
        "max_steps": config.max_steps,
        "token_budget": config.token_budget,
        "time_budget": config.time_budget,
        "cost_budget": config.cost_budget,
    }
    caps[field] = (caps[field] or 0) + amounts[choice]
    return caps


async def ask_cap(handler: CapHandler, offer: CapOffer) -> str | None:
    answer = handler(offer)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer if answer in offer.choices else None
