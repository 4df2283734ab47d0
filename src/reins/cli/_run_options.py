"""The options every run takes, in one bundle: `run` and `chat` (each turn of a chat is a run)
declare `options: RunOptions` and `@takes_run_options` gives typer one option per field in its
place, so a run option is added here once, for both."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ._agent_choices import AgentChoices
from ._agent_parts import _config, _mcp_servers
from ._options import (
    AtCapOpt,
    BudgetNoticesOpt,
    CheckOpt,
    ContextWindowOpt,
    CostBudgetOpt,
    GoalAnchorOpt,
    GuardOffOpt,
    GuardOnOpt,
    LoopThresholdOpt,
    MaxStepsOpt,
    McpConfigOpt,
    ModelOpt,
    ModeOpt,
    NetworkOpt,
    PlanningOpt,
    ReflectMaxRetriesOpt,
    ReflectOpt,
    SandboxOpt,
    StallThresholdOpt,
    StoreOpt,
    SubagentsOpt,
    TimeBudgetOpt,
    TokenBudgetOpt,
    ToolsOpt,
    TrustProjectOpt,
    WorkspaceOpt,
    YesOpt,
    _guard_flags,
)

if TYPE_CHECKING:
    from ..agent._config import Config


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The run options given on the command line, one field per option (in `--help`'s order)."""

    model: ModelOpt = None
    max_steps: MaxStepsOpt = None
    token_budget: TokenBudgetOpt = None
    time_budget: TimeBudgetOpt = None
    cost_budget: CostBudgetOpt = None
    at_cap: AtCapOpt = None
    budget_notices: BudgetNoticesOpt = None
    workspace: WorkspaceOpt = Path(".")
    tools: ToolsOpt = None
    yes: YesOpt = False
    sandbox: SandboxOpt = None
    network: NetworkOpt = None
    no_guard: GuardOffOpt = None
    guard: GuardOnOpt = None
    loop_threshold: LoopThresholdOpt = None
    stall_threshold: StallThresholdOpt = None
    goal_anchor: GoalAnchorOpt = None
    store: StoreOpt = None
    check: CheckOpt = None
    reflect: ReflectOpt = None
    reflect_max_retries: ReflectMaxRetriesOpt = None
    mode: ModeOpt = None
    context_window: ContextWindowOpt = None
    trust_project: TrustProjectOpt = False
    mcp_config: McpConfigOpt = None
    planning: PlanningOpt = None
    subagents: SubagentsOpt = None

    def config(self) -> Config:
        """The config files, asked about and settled before the log is opened."""
        return _config(self.trust_project)

    def choices(self, config: Config) -> AgentChoices:
        """What the options choose for the agent (its profile is the command's to set); a bad
        guard flag or MCP file is said now, before the log opens."""
        return AgentChoices(
            model=self.model,
            workspace=self.workspace,
            yes=self.yes,
            sandbox=self.sandbox,
            network=self.network,
            mcp_servers=_mcp_servers(config, self.mcp_config),
            tools=self.tools.split(",") if self.tools is not None else None,  # "": no name
            max_steps=self.max_steps,
            token_budget=self.token_budget,
            time_budget=self.time_budget,
            cost_budget=self.cost_budget,
            at_cap=self.at_cap,
            budget_notices=self.budget_notices,
            guard_flags=_guard_flags(
                self.no_guard,
                self.guard,
                self.loop_threshold,
                self.stall_threshold,
                self.goal_anchor,
            ),
            checks=self.check or [],
            reflect=self.reflect,
            reflect_max_retries=self.reflect_max_retries,
            mode=self.mode,
            context_window=self.context_window,
            planning=self.planning,
            subagents=self.subagents,
        )


_FIELDS = typing.get_type_hints(RunOptions, include_extras=True)


def takes_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`, its parameter `options: RunOptions` spelled out as one typer option per
    field (where `options` stands), and given back to it as one `RunOptions`."""
    own = inspect.signature(command, eval_str=True).parameters
    shared = [
        inspect.Parameter(
            field.name, own["options"].kind, default=field.default, annotation=_FIELDS[field.name]
        )
        for field in dataclasses.fields(RunOptions)
    ]
    parameters: list[inspect.Parameter] = []
    for parameter in own.values():
        parameters += shared if parameter.name == "options" else [parameter]

    @functools.wraps(command)
    def with_options(*args: object, **given: object) -> None:
        options = RunOptions(**{f.name: given.pop(f.name) for f in shared})  # type: ignore[arg-type]
        command(*args, **given, options=options)

    with_options.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_options
