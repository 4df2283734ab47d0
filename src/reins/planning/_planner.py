"""`plan`: two model calls — an analysis (task, goal, unknowns, complexity, subtasks), then
the plan (numbered steps, each with who does it) — whose steps become the run's todo list.
A complex task's plan is put to the user before the work starts; `reason` re-plans."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..context._compaction import digest
from ..core._catalog import price, served_at
from ..core._errors import ToolError
from ..core._messages import Message, SystemMessage, UserMessage
from ..core._model import Model, ModelSettings
from ..core._scope import CallScope
from ..tools import Tool, ToolContext, tool
from ._todo import TodoInput, numbered, render

PLAN = "plan"
Complexity = Literal["simple", "medium", "complex"]
STEPS: dict[str, tuple[int, int]] = {"simple": (1, 3), "medium": (5, 9), "complex": (8, 20)}
SETTINGS = ModelSettings(max_tokens=1500, temperature=0.0)
"""The planner's calls: no extended thinking, ever."""
PLANNER = (
    "You are the planner of an agent that works with tools. You do not do the work: you "
    "think about it and reply with exactly one JSON object, nothing before or after it."
)


Shape = TypeVar("Shape", bound=BaseModel)


class Analysis(BaseModel):
    model_config = ConfigDict(extra="ignore")

    task: str
    goal: str
    unknowns: list[str] = []
    complexity: Complexity
    subtasks: list[str] = []


class Step(BaseModel):
    model_config = ConfigDict(extra="ignore")

    step: str
    executor: str = "SELF"


class Plan(BaseModel):
    model_config = ConfigDict(extra="ignore")

    steps: list[Step] = Field(min_length=1)


def plan_tool(model: Model, *, profiles: Sequence[str] = ()) -> Tool:
    """The `plan` tool, whose two calls go to `model` (the run's, or a planner of yours)."""

    async def plan(context: ToolContext, reason: str | None = None) -> str:
        """Plan a non-trivial task before you start it (not for a task of one or two
        actions): an analysis, then numbered steps that become your todo list. Call it again
        with `reason` when the plan no longer fits; the new plan replaces it.

        Args:
            reason: Why you plan again (what changed); leave it out the first time.
        """
        scope = context.scope
        if not isinstance(scope, CallScope):
            raise ToolError("plan works only inside a run")
        planner = _Planner(model, scope)
        analysis = await planner.analysis(reason)
        steps = await planner.steps(analysis, profiles)
        scope.todo = numbered([TodoInput(text=s.step, executor=s.executor) for s in steps])
        tools = scope.state.config.tools
        if analysis.complexity != "complex":
            then = "Proceed with step 1; keep the todo list current with `todo` as you go."
        elif "ask_user" in tools and not scope.state.questions:
            then = (
                "This is a complex task: present this plan to the user and wait for their "
                "confirmation before you start (ask with ask_user: it is your one question), "
                "then follow it, keeping the todo list current with `todo`."
            )
        else:
            then = (
                "This is a complex task, and nobody can be asked to confirm the plan in this "
                "run: follow it step by step, keeping the todo list current with `todo`."
            )
        head = f"Plan ({analysis.complexity}, {len(steps)} steps) for: {analysis.goal}"
        unknowns = "".join(f"\n- {u}" for u in analysis.unknowns)
        found_out = f"\nTo find out first:{unknowns}" if unknowns else ""
        return f"{head}{found_out}\n{render(scope.todo)}\n\n{then}"

    return dataclasses.replace(tool(timeout=300)(plan), needs_scope=True)


class _Planner:
    def __init__(self, model: Model, scope: CallScope) -> None:
        self.model, self.scope = model, scope

    async def analysis(self, reason: str | None) -> Analysis:
        state = self.scope.state
        history = [m for m in state.view() if m.role != "system"]
        again = f"\nThe plan is made again because: {reason}" if reason else ""
        current = f"\nThe plan so far:\n{render(state.todo)}" if state.todo else ""
        prompt = (
            "Analyze the task before any more work is done.\n"
            f"The task: {state.goal}{again}{current}\n"
            f"What has happened so far, in brief:\n{digest(history, 4000)}\n\n"
            'Reply: {"task": "<the task in one sentence>", "goal": "<what done looks '
            'like>", "unknowns": ["<what must be found out>"], "complexity": "simple" | '
            '"medium" | "complex", "subtasks": ["<a part of the work>"]}\n'
            "simple: a few actions; medium: several parts; complex: many parts, or a "
            "decision the user should confirm."
        )
        return await self._ask(prompt, Analysis)

    async def steps(self, analysis: Analysis, profiles: Sequence[str]) -> list[Step]:
        tools = [t for t in self.scope.state.config.tools if t not in (PLAN, "todo")]
        least, most = STEPS[analysis.complexity]
        agents = f'; "AGENT: <profile>" for a subagent ({", ".join(profiles)})' if profiles else ""
        prompt = (
            f"The analysis of the task:\n{analysis.model_dump_json(indent=1)}\n\n"
            'Make the plan. Reply: {"steps": [{"step": "<one thing to do>", "executor": '
            '"<who does it>"}]}\n'
            f'Who: "TOOL: <name>" for one call of a tool ({", ".join(tools)}){agents}; or '
            '"SELF" for what takes your own judgment or several calls.\n'
            f"A {analysis.complexity} task has {least} to {most} steps; never more than 20; "
            "one thing per step, in the order they are done."
        )
        plan = await self._ask(prompt, Plan)
        if not least <= len(plan.steps) <= most:
            fix = (
                f"{prompt}\n\nYour plan had {len(plan.steps)} steps; a {analysis.complexity} "
                f"task has {least} to {most}. Reply with the plan again, in that many steps."
            )
            with contextlib.suppress(ToolError):  # else the first plan stands, cut to the cap
                plan = await self._ask(fix, Plan)
        return [_checked(s, tools, profiles) for s in plan.steps[:20]]

    async def _ask(self, prompt: str, shape: type[Shape]) -> Shape:
        """One planner call; one more if the reply is not the JSON asked for."""
        messages: list[Message] = [SystemMessage(content=PLANNER), UserMessage(content=prompt)]
        problem = ""
        for _ in range(2):
            response = await self.model.request(messages, [], SETTINGS)
            usage = response.usage
            cost = price(response.model_name, usage, at=served_at(self.model))
            self.scope.spend(usage, cost or 0.0)
            text = response.message.text
            try:
                return shape.model_validate(json.loads(_object(text)))
            except (ValueError, ValidationError) as exc:
                problem = str(exc).splitlines()[0]
                messages = [
                    *messages,
                    response.message,
                    UserMessage(
                        content=f"That is not the JSON object asked for ({problem}). Reply "
                        "with the JSON object only."
                    ),
                ]
        raise ToolError(
            f"the planner did not reply with a usable plan ({problem}); go on without one"
        )


def _object(text: str) -> str:
    """The JSON object in a reply (a fence or words around it are dropped): from the first `{`
    to the last `}`. (Found by `\\{.*\\}`, a reply of many `{` and no `}` took quadratic time.)"""
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        raise ValueError("no JSON object in the reply")
    return text[start : end + 1]


def _checked(step: Step, tools: Sequence[str], profiles: Sequence[str]) -> Step:
    """A step whose executor names no tool or profile there is, is the agent's own."""
    kind, _, name = step.executor.partition(":")
    kind, name = kind.strip().upper(), name.strip()
    if (kind == "TOOL" and name in tools) or (kind == "AGENT" and name in profiles):
        return step.model_copy(update={"executor": f"{kind}: {name}"})
    return step.model_copy(update={"executor": "SELF"})
