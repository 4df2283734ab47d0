"""A subagent: a bounded subtask run as a child run of the one whose tool call asked for it —
recorded in the same store and linked to that call, in the same workspace, its events on the
parent's stream, its spending in the parent's budgets, cancelled with it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..context._compaction import digest
from ..core._events import RunFinished, SubagentEvent
from ..core._messages import AssistantMessage, Message, UserMessage
from ..core._scope import CallScope
from ..core._stop import StopReason
from ..tools import ToolContext

if TYPE_CHECKING:
    from ..agent._agent import Agent

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


async def run_child(agent: Agent, task: str, ctx: ToolContext, brief: Brief) -> str:
    """Run `task` with `agent` as a child of the call in `ctx`; the tool result: a JSON
    object with the child's answer (`result`), `completed` (it ended its turn), its run id
    and stop reason."""
    scope = ctx.scope
    if not isinstance(scope, CallScope):
        raise RuntimeError("a subagent tool needs the call's scope (Tool.needs_scope)")
    left = scope.remaining()
    time_left = left["time_budget"]
    tokens = _least(agent.token_budget, left["token_budget"])
    child = dataclasses.replace(
        agent,
        log=scope.log,
        workspace=ctx.workspace.root,
        tools=[t for t in agent.tools if t.name not in set(brief.exclude_tools)],
        instructions="\n\n".join(p for p in (agent.instructions, brief.briefing) if p),
        system_prompt=brief.system_prompt or agent.system_prompt,
        max_steps=brief.max_steps,
        token_budget=None if tokens is None else int(tokens),
        cost_budget=_least(agent.cost_budget, left["cost_budget"]),
        time_budget=_least(_least(agent.time_budget, brief.timeout), time_left),
        at_cap="summarize",  # at a cap the parent still gets what was done
        on_cap=None,
        mcp_servers=agent.servers,  # the same servers, not new processes
    )
    preface: list[Message] = []
    if brief.context:
        history = [m for m in scope.state.view() if m.role != "system"]
        preface = [
            UserMessage(content=CONTEXT.format(digest(history))),
            AssistantMessage(text=READY),
        ]
    stream = child.child_iter(
        task,
        parent=(scope.state.run_id, scope.call_id),
        preface=preface,
        cancel=scope.cancel,
        deps=ctx.deps,  # the parent's, passed on
    )
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


def _least(a: float | int | None, b: float | int | None) -> float | int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
