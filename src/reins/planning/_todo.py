"""The run's todo list: folded state (`tool_call_finished.todo`), fed from the plan, kept by
the model with the `todo` tool, shown by the CLI, read by the anti-stall guard."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..core._errors import ToolError
from ..core._events import TodoItem
from ..core._scope import CallScope
from ..tools import Tool, ToolContext, tool

TODO = "todo"
MAX_ITEMS = 20
MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]", "cancelled": "[-]"}


class TodoInput(BaseModel):
    """A step to add."""

    model_config = ConfigDict(extra="forbid")

    text: str
    executor: str = "SELF"
    validation: str | None = None


def render(items: Sequence[TodoItem]) -> str:
    """The list as the model and the person see it."""
    if not items:
        return "The todo list is empty."
    lines = []
    for item in items:
        who = f" ({item.executor})" if item.executor != "SELF" else ""
        check = f" — done when: {item.validation}" if item.validation else ""
        lines.append(f"{MARKS[item.status]} {item.id}. {item.text}{who}{check}")
    left = [i for i in items if i.status in ("pending", "in_progress")]
    if left:
        lines.append(f"Next: {left[0].id}. {left[0].text}")
    else:
        lines.append("Every step is done or cancelled.")
    return "\n".join(lines)


def numbered(steps: Sequence[TodoInput]) -> tuple[TodoItem, ...]:
    if len(steps) > MAX_ITEMS:
        raise ToolError(f"a todo list has at most {MAX_ITEMS} steps; {len(steps)} were given")
    return tuple(
        TodoItem(id=n, text=s.text, executor=s.executor, validation=s.validation)
        for n, s in enumerate(steps, 1)
    )


def todo_tool() -> Tool:
    async def todo(
        context: ToolContext,
        action: Literal["set", "update", "show"],
        items: list[TodoInput] | None = None,
        id: int | None = None,
        status: Literal["pending", "in_progress", "done", "cancelled"] | None = None,
        evidence: str | None = None,
    ) -> str:
        """Keep your todo list: `set` replaces it with `items`; `update` sets the `status` of
        step `id` (a step with a validation needs `evidence` to be marked done); `show` lists
        it. Mark a step in_progress when you start it and done when it is done.

        Args:
            action: set, update or show.
            items: For set: the steps, in order.
            id: For update: the step's number.
            status: For update: pending, in_progress, done or cancelled.
            evidence: For update to done: what shows the step's validation holds.
        """
        scope = context.scope
        if not isinstance(scope, CallScope):
            raise ToolError("todo works only inside a run")
        current = scope.todo if scope.todo is not None else scope.state.todo
        if action == "show":
            return render(current)
        if action == "set":
            if not items:
                raise ToolError("set needs `items`: the steps, in order")
            scope.todo = numbered(items)
            return render(scope.todo)
        if id is None or status is None:
            raise ToolError("update needs `id` (a step's number) and `status`")
        found = next((i for i in current if i.id == id), None)
        if found is None:
            have = ", ".join(str(i.id) for i in current) or "none: set the list first"
            raise ToolError(f"no step {id}; the steps: {have}")
        if status == "done" and found.validation and not (evidence or "").strip():
            raise ToolError(
                f"step {id} is done when: {found.validation}. Check that, then mark it done "
                "with the `evidence` (what you ran or saw)."
            )
        changed = found.model_copy(update={"status": status, "evidence": evidence or None})
        scope.todo = tuple(changed if i.id == id else i for i in current)
        return render(scope.todo)

    return dataclasses.replace(tool(timeout=None)(todo), needs_scope=True)
