"""What the loop gives a tool that works with the run itself (a subagent, the planner, the
todo list): the run it serves, where to record runs it starts, how to forward their events,
count what it spends, and change the run's todo list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ._cancel import Cancel
from ._events import StreamEvent, TodoItem
from ._log import EventLog
from ._messages import Usage
from ._state import RunState


@dataclass(kw_only=True)
class CallScope:
    """One tool call's ties to its run (`ToolContext.scope` of a `Tool.needs_scope` tool)."""

    call_id: str
    state: RunState
    """The run that made the call, as it stands: read it, never change it."""
    log: EventLog
    """Where the run is recorded: a subagent's run goes in the same store."""
    cancel: Cancel
    """The run's: cancelling it cancels what the call started."""
    forward: Callable[[StreamEvent], None]
    """Puts a subagent's event (a `SubagentEvent`) on the run's stream."""
    usage: Usage = field(default_factory=Usage)
    """Spent by what the call started, so far: recorded with its result."""
    cost: float = 0.0
    todo: tuple[TodoItem, ...] | None = None
    """The run's todo list as the call leaves it (None: unchanged): recorded with its result."""

    def spend(self, usage: Usage, cost: float) -> None:
        """Count what a call spent on model calls (a subagent's run, the planner) as the run's."""
        self.usage = self.usage + usage
        self.cost += cost

    def remaining(self) -> dict[str, float | int | None]:
        """What is left of the run's token, cost and time budgets (None: no cap)."""
        state, config = self.state, self.state.config
        used_tokens = state.usage.total_tokens + self.usage.total_tokens
        elapsed = state.elapsed_at(datetime.now(UTC))
        return {
            "token_budget": None
            if config.token_budget is None
            else max(1, config.token_budget - used_tokens),
            "cost_budget": None
            if config.cost_budget is None
            else max(1e-9, config.cost_budget - state.cost - self.cost),
            "time_budget": None
            if config.time_budget is None
            else max(1.0, config.time_budget - elapsed),
        }
