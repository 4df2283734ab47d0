"""Planning: `plan` (an analysis and a plan, by the model, with no extended thinking) and
`todo` (the run's todo list, folded state fed from the plan)."""

from ._planner import PLAN, plan_tool
from ._todo import TODO, TodoInput, render, todo_tool

__all__ = ["PLAN", "TODO", "TodoInput", "plan_tool", "render", "todo_tool"]
