"""The agent `run` and `chat` make: what their flags chose (`AgentChoices`), over the
profile's and the config's settings, and the profile a goal calls for."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from rich.markup import escape

from ..core._errors import UsageError
from ._agent_parts import (
    _approval,
    _asker,
    _memory_beside,
    _on_cap,
    _permissions,
    _stop_hooks,
)
from ._console import err
from ._stdin import LineSource

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..agent._agent import Agent
    from ..agent._config import Config
    from ..mcp import MCPServerConfig
    from ..store import IndexedLog


@dataclasses.dataclass(kw_only=True)
class AgentChoices:
    """What the command line chose for an agent (None: the profile's, else the config's,
    else reins' default); `run` and `chat` make their agents from it."""

    model: str | None = None
    workspace: Path = Path(".")
    profile: str | None = None
    profile_inferred: bool = False
    yes: bool = False
    sandbox: str | None = None
    network: bool | None = None
    mcp_servers: list[MCPServerConfig] = dataclasses.field(default_factory=list)
    tools: list[str] | None = None
    max_steps: int | None = None
    token_budget: int | None = None
    time_budget: float | None = None
    cost_budget: float | None = None
    at_cap: str | None = None
    budget_notices: bool | None = None
    guard_flags: dict[str, Any] = dataclasses.field(default_factory=dict)
    checks: list[str] = dataclasses.field(default_factory=list)
    reflect: bool | None = None
    reflect_max_retries: int | None = None
    mode: str | None = None
    context_window: int | None = None
    planning: bool | None = None
    subagents: bool | None = None

    def model_spec(self, config: Config) -> str:
        """The model named, else the default (said once, if it is not the embedded one)."""
        preset = config.profiles.get(self.profile or "")
        named = self.model or (preset.model if preset else None) or config.model
        if named:
            return named
        from ..agent._resolve import default_model

        spec, why = default_model()
        if why:
            err.print(f"[dim]{escape(why)}[/]")
        self.model = spec  # chosen once: asked again, the answer (and its note) stand
        return spec

    def agent(self, config: Config, log: IndexedLog, lines: LineSource) -> Agent:
        from ..agent._agent import Agent
        from ..agent._budgets import Budgets
        from ..agent._config import ProfileConfig
        from ..agent._groups import Checks, Subagents
        from ..agent._resolve import resolve_model
        from ..core._model import ModelSettings
        from ..tools import builtin_tools

        preset = config.profiles.get(self.profile or "") or ProfileConfig()
        _check_mode(self.mode)
        spec = self.model_spec(config)
        context = preset.context_over(config.context)
        window = (
            self.context_window
            or context.window
            or config.endpoint(spec.partition(":")[0]).context_window
        )
        agent = Agent(
            model=resolve_model(spec, config),
            tools=builtin_tools(self.tools or preset.tools),
            workspace=self.workspace,
            budgets=Budgets(
                max_steps=self.max_steps or preset.max_steps or config.max_steps or 30,
                token_budget=self.token_budget or config.token_budget,
                time_budget=self.time_budget or config.time_budget,
                cost_budget=self.cost_budget or config.cost_budget,
                at_cap=_at_cap(self.at_cap or config.at_cap),
                notices=_either(self.budget_notices, config.budget_notices),
                on_cap=_on_cap(lines),
            ),
            log=log,
            permissions=_permissions(config),
            approval=_approval(config, self.yes, lines),
            sandbox=config.sandbox.policy(mode=self.sandbox, network=self.network),
            guards=config.guards.guards(**self.guard_flags),
            checks=Checks(
                commands=[*config.checks, *self.checks],
                stop_hooks=_stop_hooks(config),
                max_rejections=config.stop_max_rejections,
            ),
            hooks=config.hooks.in_order(),
            reflect=_either(self.reflect, config.reflect),
            reflect_max_retries=self.reflect_max_retries or config.reflect_max_retries,
            context=context.settings(window=window),
            instruction_files=config.instruction_files,
            mode=self.mode or preset.mode,
            system_prompt=preset.system_prompt,
            instructions=preset.instructions or "",
            settings=ModelSettings(thinking_budget=preset.thinking_budget),
            mcp_servers=self.mcp_servers,
            skills=config.skill_folders,
            ask=_asker(config, lines),
            planning=_either(self.planning, config.planning),
            checkpoints=config.checkpoints,
            memory=_memory_beside(config, log),
        )._record(profile=self.profile, profile_inferred=self.profile_inferred)
        if _either(self.subagents, config.subagents):
            # With no profiles, spawn_agent still offers a copy of this agent.
            agent.subagents = Subagents(agents=_profiles(agent, config))
        return agent


def _check_mode(name: str | None) -> None:
    """A mode named on the command line must be one (as `Agent(mode=...)`: said here with the
    flag's name)."""
    from ..context import MODES
    from ..context._modes import resolve_mode

    if resolve_mode(name)[1] is not None:
        raise UsageError(f"--mode: no mode {name!r}; the modes: {', '.join(MODES)}")


def _either(chosen: bool | None, configured: bool) -> bool:
    return configured if chosen is None else chosen


def _profile(config: Config, goal: str, name: str | None) -> tuple[str | None, bool]:
    """The profile a run uses, and whether it was inferred: the one named, else the one for
    the kind of work the goal asks for (if the config has it), else none."""
    if name is not None:
        if name not in config.profiles:
            have = ", ".join(sorted(config.profiles)) or "none"
            raise UsageError(f"no profile {name!r} in the config (its profiles: {have})")
        return name, False
    from ..context import infer_profile

    kind = infer_profile(goal) if config.profiles else None
    return (kind, True) if kind in config.profiles else (None, False)


def _profiles(agent: Agent, config: Config) -> dict[str, Agent]:
    """The config's profiles as agents a run may spawn: each with its own model, tools and
    prompt, the run's permissions, approvals, sandbox and guards."""
    import dataclasses

    from ..agent._groups import Subagents
    from ..agent._resolve import resolve_model
    from ..core._model import ModelSettings
    from ..tools import builtin_tools

    return {
        name: agent._copy(
            model=resolve_model(profile.model, config) if profile.model else agent.model,
            model_id=profile.model or agent.model_id,
            budgets=dataclasses.replace(
                agent.budgets, max_steps=profile.max_steps or Subagents().max_steps
            ),
            tools=builtin_tools(profile.tools),
            system_prompt=profile.system_prompt,
            instructions=profile.instructions or "",
            mode=profile.mode,
            settings=ModelSettings(thinking_budget=profile.thinking_budget),
            profile=name,
            profile_inferred=False,
        )
        for name, profile in config.profiles.items()
    }


def _at_cap(value: str) -> Literal["stop", "summarize"]:
    if value in ("stop", "summarize"):
        return cast(Literal["stop", "summarize"], value)
    raise UsageError(f"--at-cap {value!r}: say stop or summarize")
