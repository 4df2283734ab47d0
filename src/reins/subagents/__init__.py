"""Subagents: a bounded subtask run as a child run (`Agent.as_tool`, `spawn_agent`).

The agent a child runs is a `ChildAgent`: the layer above (`reins.agent`) hands down its own
`child_run`; nothing here imports it."""

from ._child import Brief, ChildAgent, ChildRun, Handoff, run_child
from ._tools import SPAWN_AGENT, agent_tool, spawn_agent_tool

__all__ = [
    "SPAWN_AGENT",
    "Brief",
    "ChildAgent",
    "ChildRun",
    "Handoff",
    "agent_tool",
    "run_child",
    "spawn_agent_tool",
]
