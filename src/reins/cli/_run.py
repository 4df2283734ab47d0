"""`reins run`: an agent on a goal, its steps shown live."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core._stop import StopReason
from ._agent_choices import AgentChoices, _profile
from ._agent_parts import _config, _mcp_servers
from ._console import _one_line_errors
from ._event_output import _drive
from ._execute import _execute
from ._options import (
    CostBudgetOpt,
    GoalAnchorOpt,
    GuardOffOpt,
    GuardOnOpt,
    JsonOpt,
    LoopThresholdOpt,
    McpConfigOpt,
    NetworkOpt,
    SandboxOpt,
    StallThresholdOpt,
    StoreOpt,
    TimeBudgetOpt,
    TokenBudgetOpt,
    TrustProjectOpt,
    YesOpt,
    _guard_flags,
)
from ._stdin import TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._messages import Goal
    from ..store import SQLiteLog


def run(
    goal: Annotated[str, typer.Argument(help="What the agent should do.")],
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image",
            metavar="FILE",
            help="An image (PNG, JPEG, GIF, WebP) or a PDF given with the goal; repeatable.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            envvar="REINS_MODEL",
            help="e.g. openai:gpt-4o-mini, script:FILE.json (default: the config's, else local)",
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Cap on model calls (default 30).")
    ] = None,
    token_budget: TokenBudgetOpt = None,
    time_budget: TimeBudgetOpt = None,
    cost_budget: CostBudgetOpt = None,
    at_cap: Annotated[
        str | None,
        typer.Option(
            "--at-cap",
            metavar="stop|summarize",
            help="At a cap: stop (default), or summarize the partial work as the answer.",
        ),
    ] = None,
    budget_notices: Annotated[
        bool | None,
        typer.Option(
            "--budget-notices/--no-budget-notices",
            help="Tell the model what is left of its budgets (default: yes).",
        ),
    ] = None,
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace",
            "-w",
            help="Folder the tools work in: a project's, not / or your home folder (refused).",
        ),
    ] = Path("."),
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue this session as a new turn.")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="Built-in tools to offer, comma-separated (default: all): read_file, "
            "write_file, edit_file, list_files, find_files, grep, run_command.",
        ),
    ] = None,
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
    check: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            metavar="COMMAND",
            help="A command that must pass (in the sandbox) before the answer stands; "
            "repeatable, after the config's `checks`.",
        ),
    ] = None,
    reflect: Annotated[
        bool | None,
        typer.Option(
            "--reflect/--no-reflect",
            help="After each step with tool calls, have the model judge it and choose what "
            "comes next (default: the config's `reflect`, else off).",
        ),
    ] = None,
    reflect_max_retries: Annotated[
        int | None,
        typer.Option(
            "--reflect-max-retries",
            min=1,
            metavar="N",
            help="Reflections in a row judging a step failed that stop the run (default 3).",
        ),
    ] = None,
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
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            metavar="explore|plan|write-test|write-no-test",
            help="explore/plan: read-only (writes only under docs/explore/ or docs/plan/); "
            "write-test: answer only after the tests ran since the last change; "
            "write-no-test: change without running tests (default: no mode).",
        ),
    ] = None,
    context_window: Annotated[
        int | None,
        typer.Option(
            "--context-window",
            min=256,
            metavar="TOKENS",
            help="The model's context window, where the catalog does not know it (default: "
            "the config's [context] window, the endpoint's context_window, the catalog's).",
        ),
    ] = None,
    trust_project: TrustProjectOpt = False,
    mcp_config: McpConfigOpt = None,
    planning: Annotated[
        bool | None,
        typer.Option(
            "--planning/--no-planning",
            help="Offer plan (an analysis, then steps that become the todo list) and todo "
            "(default: the config's `planning`).",
        ),
    ] = None,
    subagents: Annotated[
        bool | None,
        typer.Option(
            "--subagents/--no-subagents",
            help="Offer spawn_agent: the model hands a subtask to a child run, a copy of "
            "itself or a config profile by name (default: the config's `subagents`).",
        ),
    ] = None,
) -> None:
    """Run an agent on GOAL and show its steps live."""
    from ..tools._workspace import Workspace

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
        lines = TerminalLines()  # a line answers a prompt waiting for one, or steers
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


def _with_media(goal: str, files: list[Path]) -> Goal:
    """The goal, then the images and documents of `--image` (read from their bytes)."""
    from ..core._media import media_from_path

    if not files:
        return goal
    return [goal, *(media_from_path(f) for f in files)]
