"""Subagents: a bounded subtask run as a child run (`Agent.as_tool`, `spawn_agent`)."""

from ._child import Brief, run_child
from ._tools import SPAWN_AGENT, agent_tool, spawn_agent_tool

__all__ = ["SPAWN_AGENT", "Brief", "agent_tool", "run_child", "spawn_agent_tool"]
