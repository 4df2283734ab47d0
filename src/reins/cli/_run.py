"""`reins run`: an agent on a goal, its steps shown live."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core._errors import UsageError
from ..core._stop import StopReason
from . import _complete
from ._agent_choices import AgentChoices, _profile
from ._agent_parts import _config, _mcp_servers
from ._console import _one_line_errors
from ._event_output import _drive
from ._execute import _execute
from ._options import (
    AtCapOpt,
    BudgetNoticesOpt,
    CheckOpt,
    ContextWindowOpt,
    CostBudgetOpt,
    GoalAnchorOpt,
    GuardOffOpt,
    GuardOnOpt,
    JsonOpt,
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
    SteerStdinOpt,
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
from ._stdin import TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._messages import Goal
    from ..store import SQLiteLog


def run(
    goal: Annotated[
        str, typer.Argument(help="What the agent should do; -: read it from stdin, to its end.")
    ],
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image",
            metavar="FILE",
            help="An image (PNG, JPEG, GIF, WebP) or a PDF given with the goal; repeatable.",
        ),
    ] = None,
    model: ModelOpt = None,
    max_steps: MaxStepsOpt = None,
    token_budget: TokenBudgetOpt = None,
    time_budget: TimeBudgetOpt = None,
    cost_budget: CostBudgetOpt = None,
    at_cap: AtCapOpt = None,
    budget_notices: BudgetNoticesOpt = None,
    workspace: WorkspaceOpt = Path("."),
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            "-s",
            autocompletion=_complete.sessions,
            help="Continue this session as a new turn.",
        ),
    ] = None,
    tools: ToolsOpt = None,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    no_guard: GuardOffOpt = None,
    guard: GuardOnOpt = None,
    loop_threshold: LoopThresholdOpt = None,
    stall_threshold: StallThresholdOpt = None,
    goal_anchor: GoalAnchorOpt = None,
    json_lines: JsonOpt = False,
    store: StoreOpt = None,
    check: CheckOpt = None,
    reflect: ReflectOpt = None,
    reflect_max_retries: ReflectMaxRetriesOpt = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            metavar="NAME",
            help="A [profiles.NAME] table of the config (default: the one named after the kind "
            "of work the goal asks for, coding, research, writing or ops, if the config has it).",
        ),
    ] = None,
    mode: ModeOpt = None,
    context_window: ContextWindowOpt = None,
    trust_project: TrustProjectOpt = False,
    mcp_config: McpConfigOpt = None,
    planning: PlanningOpt = None,
    subagents: SubagentsOpt = None,
    steer_stdin: SteerStdinOpt = False,
) -> None:
    """Run an agent on GOAL and show its steps live."""
    from ..tools._workspace import Workspace

    with _one_line_errors():
        goal = _goal(goal, steer_stdin)

    config = _config(trust_project)  # asked and settled before the log is opened
    flags = _guard_flags(no_guard, guard, loop_threshold, stall_threshold, goal_anchor)
    with _one_line_errors():
        chosen, inferred = _profile(config, goal, profile)
        Workspace(workspace)  # one refused (missing, /, the home folder) is said first
        asked = _with_media(goal, image or [])  # a missing or unsupported file: said first
    choices = AgentChoices(
        model=model,
        workspace=workspace,
        profile=chosen,
        profile_inferred=inferred,
        yes=yes,
        sandbox=sandbox,
        network=network,
        mcp_servers=_mcp_servers(config, mcp_config),  # a bad file: said before the log opens
        tools=tools.split(",") if tools is not None else None,  # "": no name, not all
        max_steps=max_steps,
        token_budget=token_budget,
        time_budget=time_budget,
        cost_budget=cost_budget,
        at_cap=at_cap,
        budget_notices=budget_notices,
        guard_flags=flags,
        checks=check or [],
        reflect=reflect,
        reflect_max_retries=reflect_max_retries,
        mode=mode,
        context_window=context_window,
        planning=planning,
        subagents=subagents,
    )

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        lines = TerminalLines(piped_steers=steer_stdin)  # a line answers a prompt, or steers
        agent = choices.agent(config, log, lines)
        if session is not None:  # `last`, or a unique prefix, as for every other id
            from ..store import find_session

            session_id: str | None = find_session(await log.runs(), session)
        else:
            session_id = None
        stream = agent.iter(asked, session_id=session_id, cancel=cancel)
        lines.start(stream.steer)
        return await _drive(stream, json_lines, cancel, lines)

    _execute(store, go, workspace=workspace)


def _goal(given: str, steer_stdin: bool) -> str:
    """The goal given, or with `-`, stdin's text to its end."""
    if given != "-":
        return given
    if steer_stdin:
        raise UsageError("reins run -: stdin is the goal, so it cannot steer too (--steer-stdin)")
    goal = sys.stdin.read().strip()
    if not goal:
        raise UsageError("reins run -: stdin held no goal (it was empty)")
    return goal


def _with_media(goal: str, files: list[Path]) -> Goal:
    """The goal, then the images and documents of `--image` (read from their bytes)."""
    from ..core._media import media_from_path

    if not files:
        return goal
    return [goal, *(media_from_path(f) for f in files)]
