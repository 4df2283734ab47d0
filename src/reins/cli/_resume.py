"""`reins resume`: a run continued after a crash, a cap, a cancel, an error or a pause for
approval, with the answers given on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core._errors import UsageError
from ..core._stop import StopReason
from . import _complete
from ._agent_parts import (
    _approval,
    _asker,
    _builtin_of,
    _config,
    _mcp_servers,
    _on_cap,
    _permissions,
    _stop_hooks,
)
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
    SteerStdinOpt,
    StoreOpt,
    TimeBudgetOpt,
    TokenBudgetOpt,
    TrustProjectOpt,
    YesOpt,
    _guard_flags,
)
from ._short_ids import short
from ._stdin import TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._state import RunState
    from ..store import IndexedLog


def resume(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            autocompletion=_complete.runs,
            help="Run id, a unique prefix of one, or `last`.",
        ),
    ],
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="New cap on model calls.")
    ] = None,
    token_budget: TokenBudgetOpt = None,
    time_budget: TimeBudgetOpt = None,
    cost_budget: CostBudgetOpt = None,
    approve: Annotated[
        list[str] | None,
        typer.Option(
            "--approve", metavar="CALL", help="Allow a call the run waits on (its id, or `all`)."
        ),
    ] = None,
    deny: Annotated[
        list[str] | None,
        typer.Option("--deny", metavar="CALL", help="Deny a call the run waits on (or `all`)."),
    ] = None,
    answer: Annotated[
        str | None,
        typer.Option(
            "--answer",
            metavar="TEXT",
            help="Answer the question the run waits on (ask_user); empty: its default.",
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
    trust_project: TrustProjectOpt = False,
    mcp_config: McpConfigOpt = None,
    steer_stdin: SteerStdinOpt = False,
) -> None:
    """Continue a run after a crash, a cap, a cancel, an error or a pause for approval. New
    caps are totals for the run; by default the cap that stopped it grows by as much again.
    The guards are the run's, but for those the guard flags change."""
    from ..agent._agent import Agent
    from ..agent._budgets import Budgets
    from ..agent._groups import Checks
    from ..agent._resolve import resolve_model
    from ..core._state import RunState
    from ..store import find_run

    config = _config(trust_project, checks=False)  # the run's checks are in its log
    flags = _guard_flags(no_guard, guard, loop_threshold, stall_threshold, goal_anchor)
    servers = _mcp_servers(config, mcp_config)

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        state = RunState.fold(await log.events(info.run_id))
        _check_workspace(state)
        answers = _approvals(state, approve or [], deny or [])
        questions = [q.call_id for q in state.unanswered()]
        if answer is not None and not questions:
            raise UsageError(
                f"run {short(info.run_id)} asks no question; --answer has nothing to answer"
            )
        replies = dict.fromkeys(questions, answer) if answer is not None else {}
        guards = state.config.guards or config.guards.guards()  # a log too old to hold them
        lines = TerminalLines(piped_steers=steer_stdin)
        agent = Agent(
            model=resolve_model(state.config.model, config),
            tools=_builtin_of(state.config.tools),
            log=log,
            permissions=_permissions(config),
            approval=_approval(config, yes, lines, resuming=True),
            budgets=Budgets(on_cap=_on_cap(lines)),
            # As the run was, unless the command line says otherwise.
            sandbox=config.sandbox.policy(
                mode=sandbox or state.config.sandbox,
                network=state.config.network if network is None else network,
            ),
            guards=guards,
            # The run's check commands are in its log; the stop hooks are the config's now.
            checks=Checks(
                stop_hooks=_stop_hooks(config), max_rejections=config.stop_max_rejections
            ),
            hooks=config.hooks.in_order(),
            instruction_files=config.instruction_files,
            mcp_servers=servers,  # as configured now: their tools come and go with them
            skills=config.skill_folders,
            ask=_asker(config, lines),
        )
        stream = agent.resume_iter(
            info.run_id,
            max_steps=max_steps,
            token_budget=token_budget,
            time_budget=time_budget,
            cost_budget=cost_budget,
            approvals=answers,
            cancel=cancel,
            guards=guards.switched(**flags),  # no flag: the same, and nothing is recorded
            answers=replies,
        )
        lines.start(stream.steer)
        return await _drive(stream, json_lines, cancel, lines)

    _execute(store, go)


def _check_workspace(state: RunState) -> None:
    """A resumed run works in its own folder (no flag names another): gone, it is said so."""
    if not Path(state.config.workspace).is_dir():
        raise UsageError(
            f"run {short(state.run_id)} works in {state.config.workspace}, which is not a "
            "directory now; put it back to resume the run"
        )


def _approvals(state: RunState, approve: list[str], deny: list[str]) -> dict[str, bool]:
    """`--approve` and `--deny` as answers by call id; `all` on one side takes the calls the
    other side does not name (`--deny CALL --approve all`). A call on both sides is refused."""
    if "" in (*approve, *deny):
        raise UsageError("--approve and --deny take a call id (as `reins show` names it) or `all`")
    both = set(approve) & set(deny)
    if both:
        raise UsageError(
            f"--approve and --deny both name {', '.join(sorted(both))}; say one of them"
        )
    awaiting = [r.call.id for r in state.awaiting()]
    if "all" in (*approve, *deny) and not awaiting:
        raise UsageError(
            f"run {short(state.run_id)} waits on no approval; `all` has nothing to answer"
        )
    named = {call: False for call in deny if call != "all"}
    named |= {call: True for call in approve if call != "all"}
    rest = dict.fromkeys((c for c in awaiting if c not in named), "all" in approve)
    return named | rest if "all" in (*approve, *deny) else named
