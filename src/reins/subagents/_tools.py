"""Subagents as tools: `Agent.as_tool()` (one agent, one job) and `spawn_agent` (the model
hands a subtask to a copy of itself or to a named profile)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from ..core._errors import ToolError
from ..tools import Tool, ToolContext, tool
from ._child import GRACE, Brief, ChildAgent, run_child

SPAWN_AGENT = "spawn_agent"


def agent_tool(agent: ChildAgent, *, name: str, description: str, brief: Brief) -> Tool:
    """A tool that runs `agent` on the task it is given, as a child run."""

    async def run(context: ToolContext, task: str) -> str:
        return await run_child(agent, task, context, brief)

    run.__doc__ = f"""{description}

        Args:
            task: The whole task, with what the agent needs to know to do it alone.
        """
    made = tool(name=name, timeout=brief.timeout + GRACE)(run)
    return dataclasses.replace(made, needs_scope=True)


def spawn_agent_tool(
    parent: Callable[[], ChildAgent], profiles: Mapping[str, ChildAgent], brief: Brief
) -> Tool:
    """`spawn_agent(task, profile, context)`: a copy of the parent agent, made by `parent` at
    each call (without spawn_agent: one level deep), or one of `profiles` runs the task as a
    child run."""
    listed = "".join(  # indented as the docstring it goes in, or its Args no longer parse
        f"\n        - {name}: {(p.instructions or p.system_prompt or name).splitlines()[0][:120]}"
        for name, p in profiles.items()
    )

    async def spawn_agent(
        context: ToolContext, task: str, profile: str | None = None, share_context: bool = False
    ) -> str:
        if profile is not None and profile not in profiles:
            have = ", ".join(sorted(profiles)) or "none (leave profile out)"
            raise ToolError(f"no profile {profile!r}; the profiles: {have}")
        if profile is not None:  # a named agent has its own step cap
            agent, steps = profiles[profile], profiles[profile].max_steps
        else:
            agent, steps = parent(), brief.max_steps
        told = dataclasses.replace(brief, context=share_context, max_steps=steps)
        return await run_child(agent, task, context, told)

    spawn_agent.__doc__ = f"""Hand a self-contained subtask to a subagent: a fresh agent,
        working in the same workspace, that does it alone and returns {{"result", "completed"}}.
        Use it for a part of the work whose steps you need not see (look something up, change
        one module); several may run at once. At most {brief.max_steps} steps each.
        {("Profiles:" + listed) if listed else ""}

        Args:
            task: The whole subtask, with what the subagent needs to know to do it alone.
            profile: A profile's name; leave it out for an agent like you.
            share_context: Give the subagent a digest of your conversation so far.
        """
    made = tool(timeout=brief.timeout + GRACE)(spawn_agent)
    return dataclasses.replace(made, needs_scope=True)
