"""The Python API: `Agent` (and `ReflectiveAgent`, which reflects on each step) starts,
continues and resumes runs; `AgentRun` is a run in progress, `RunResult` how it ended;
`Budgets` are its runs' caps, `Checks` what an answer must pass, `Ask` who answers the model's
questions, `Subagents` its child runs; `resolve_model` makes the model a string names. Users import
them from `reins`.

Inside: `_agent` (the API a user calls), `_fields` (what an agent is made of), `_assembly` (the
pieces a run is put together from), `_begin` (a run's first events), `_run`, `_output` (typed
answers), `_config` (the config files), `_resolve` (model names). Names load on first use (PEP
562): the CLI reads `_config` without loading the agent.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._agent import Agent, ReflectiveAgent
    from ._budgets import Budgets
    from ._groups import Ask, Checks, Subagents
    from ._resolve import resolve_model
    from ._run import AgentRun, RunResult

_EXPORTS = {
    "Agent": "._agent",
    "ReflectiveAgent": "._agent",
    "Budgets": "._budgets",
    "Ask": "._groups",
    "Checks": "._groups",
    "Subagents": "._groups",
    "AgentRun": "._run",
    "RunResult": "._run",
    "resolve_model": "._resolve",
}

__all__ = [
    "Agent",
    "AgentRun",
    "Ask",
    "Budgets",
    "Checks",
    "ReflectiveAgent",
    "RunResult",
    "Subagents",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value
