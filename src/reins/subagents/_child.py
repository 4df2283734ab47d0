"""A subagent: a bounded subtask run as a child run of the one whose tool call asked for it —
recorded in the same store and linked to that call, in the same workspace, its events on the
parent's stream, its spending in the parent's budgets, cancelled with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..context._compaction import digest
from ..core._cancel import Cancel
from ..core._events import RunFinished, StreamEvent, SubagentEvent
from ..core._messages import AssistantMessage, Message, UserMessage
from ..core._scope import CallScope
from ..core._state import RunState
from ..core._stop import StopReason
from ..store import EventLog
from ..tools import ToolContext

CONTEXT = "Context from the agent that hands you this task (its work so far, in brief):\n\n{}"
READY = "Understood. What is the task?"
GRACE = 60.0
"""Seconds past its time budget before a child is abandoned (it gets to finish its step)."""


@dataclass(frozen=True, kw_only=True)
class Brief:
    """How a child is run, besides its agent."""

    max_steps: int = 10
    timeout: float = 300.0
    """Seconds: the child's time budget (and, a minute later, the call's timeout)."""
    briefing: str = ""
    """Instructions for the child, added to its system prompt."""
    system_prompt: str | None = None
    """Replaces the child's base prompt."""
    exclude_tools: Sequence[str] = ()
    """Tools of the child's agent it is not given."""
    context: bool = False
    """Hand the child a digest of the parent's conversation first (a synthetic exchange)."""


@dataclass(frozen=True, kw_only=True)
class Handoff:
    """What the call that starts a child run hands down to it, besides the task."""

    brief: Brief
    log: EventLog
    """The parent's store: the child's run is recorded there, linked to the call."""
    workspace: Path
    parent: tuple[str, str]
    """The parent's run id, and the id of the call that starts the child."""
    left: Mapping[str, float | int | None]
    """What is left of the parent's token, cost and time budgets (`CallScope.remaining`)."""
    preface: Sequence[Message]
    """Messages before the task (a digest of the parent's conversation), or none."""
    cancel: Cancel
    """The parent's: cancelling it cancels the child."""
    deps: Any
    """The parent's deps, passed on."""


class ChildRun(Protocol):
    """A child run's events as they come, and its state once it has begun (`AgentRun`)."""

    def __aiter__(self) -> AsyncIterator[StreamEvent]: ...

    @property
    def state(self) -> RunState: ...

    async def aclose(self) -> None: ...


class ChildAgent(Protocol):
    """An agent as a subagent tool knows it (`reins.Agent` is one): what it says of itself as
    a profile, its step cap, and `child_run`, the way it starts a child run. The layer that
    makes agents hands it down: subagents do not import it."""

    instructions: str
    system_prompt: str | None

    @property
    def max_steps(self) -> int: ...

    def child_run(self, task: str, handoff: Handoff) -> ChildRun: ...


async def run_child(agent: ChildAgent, task: str, ctx: ToolContext, brief: Brief) -> str:
    """Run `task` with `agent` as a child of the call in `ctx`; the tool result: a JSON
    object with the child's answer (`result`), `completed` (it ended its turn), its run id
    and stop reason."""
    scope = ctx.scope
    if not isinstance(scope, CallScope):
        raise RuntimeError("a subagent tool needs the call's scope (Tool.needs_scope)")
    left = scope.remaining()
    preface: list[Message] = []
    if brief.context:
        history = [m for m in scope.state.view() if m.role != "system"]
        preface = [
            UserMessage(content=CONTEXT.format(digest(history))),
            AssistantMessage(text=READY),
        ]
    handoff = Handoff(
        brief=brief,
        log=scope.log,
        workspace=ctx.workspace.root,
        parent=(scope.state.run_id, scope.call_id),
        left=left,
        preface=preface,
        cancel=scope.cancel,
        deps=ctx.deps,
    )
    stream = agent.child_run(task, handoff)
    finished: RunFinished | None = None
    try:
        async for event in stream:
            if isinstance(event, SubagentEvent):
                scope.forward(SubagentEvent((scope.call_id, *event.path), event.event))
            else:
                scope.forward(SubagentEvent((scope.call_id,), event))
                if isinstance(event, RunFinished):
                    finished = event
    finally:
        await stream.aclose()
    state = stream.state
    scope.spend(state.usage, state.cost)
    completed = finished is not None and finished.stop_reason is StopReason.END_TURN
    answer = finished.final_answer if finished is not None else None
    if not answer:  # what it said last, of its own (after its system prompt, preface, task)
        own = state.messages[1 + len(preface) + 1 :]
        said = [m.text for m in own if isinstance(m, AssistantMessage) and m.text]
        answer = said[-1] if said else ""
    return json.dumps(
        {
            "result": answer,
            "completed": completed,
            "stop_reason": finished.stop_reason.value if finished else "unfinished",
            "detail": finished.detail if finished and not completed else "",
            "run_id": state.run_id,
        },
        ensure_ascii=False,
    )
