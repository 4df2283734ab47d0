"""Commands: run, resume, sessions, show, replay, doctor. Errors become one line and an exit
code."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import typer
from rich.markup import escape

from ..core._errors import LogCorrupted, ReinsError, UsageError
from ..core._guard_settings import GUARD_NAMES
from ..core._stop import StopReason
from ._safe import SafeConsole, json_visible, visible
from ._stdin import LineSource, TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..agent._agent import Agent
    from ..agent._config import Config
    from ..agent._run import AgentRun
    from ..core._cancel import Cancel
    from ..core._questions import Asker, AskMode
    from ..core._state import RunState
    from ..mcp import MCPServerConfig
    from ..permissions import ApprovalHandler, ApprovalMode, Permissions
    from ..policies import CapHandler, CommandHook
    from ..store import RunInfo, SQLiteLog
    from ..tools import Tool
    from ._render import EventRenderer

EXIT_CODES: dict[StopReason, int] = {
    StopReason.END_TURN: 0,
    StopReason.ERROR: 1,
    StopReason.MAX_STEPS: 3,
    StopReason.MAX_TOKENS: 4,
    StopReason.TOKEN_BUDGET: 5,
    StopReason.TIME_BUDGET: 6,
    StopReason.COST_BUDGET: 7,
    StopReason.REFUSAL: 8,
    StopReason.MISSING_EVIDENCE: 9,
    StopReason.WAITING: 10,
    StopReason.STALLED: 11,
    StopReason.CANCELLED: 130,
}
"""Exit code per stop reason; 2 is bad input, as for any command line."""

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    no_args_is_help=True,
    rich_markup_mode="markdown",  # a docstring's wrapped lines are one paragraph
    pretty_exceptions_enable=False,
    help="reins: run tool-calling agents with a log you can resume and replay.",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out.print(f"reins {version('reins')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Debug logging on stderr (reins and its SDKs)."),
    ] = False,
) -> None:
    """reins: run tool-calling agents with a log you can resume and replay."""
    if verbose:
        logging.basicConfig(
            format="%(levelname)s %(name)s: %(message)s", level=logging.DEBUG, force=True
        )


class _Console(SafeConsole):
    """A reader that goes away (`reins run | head`) is a BrokenPipeError, as for a plain
    write, which the command handles (a run is cancelled and recorded, quietly); rich's own
    answer is SystemExit(1), which would end the process mid-run, the run left unfinished."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # what is left to print goes nowhere
        raise BrokenPipeError


# No emoji codes, no highlighting: what a tool or model wrote is shown as it is (our own markup
# is the only markup, and every text from outside is escaped), its control characters visible.
out = _Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 120)
err = SafeConsole(stderr=True, highlight=False, emoji=False, soft_wrap=True)  # one line an error

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="REINS_STORE",
        help="Folder of the event log (SQLite + JSONL); default: the current folder's, in the "
        "user's data folder ($XDG_DATA_HOME/reins, else ~/.local/share/reins).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Approve every call the permission rules ask about (the sandbox still holds; "
        "writes to files that run code later, such as .git/ or .envrc, are still denied: "
        "only a yes at the prompt allows one).",
    ),
]
SandboxOpt = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        metavar="MODE",
        help="What commands may do: read-only, workspace-write (default) or danger-full-access "
        "(no sandbox).",
    ),
]
GuardOffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--no-guard",
        metavar="NAME",
        help=f"Switch a guard off: {', '.join(GUARD_NAMES)} (repeatable).",
    ),
]
GuardOnOpt = Annotated[
    list[str] | None,
    typer.Option("--guard", metavar="NAME", help="Switch a guard on, e.g. one-call (repeatable)."),
]
LoopThresholdOpt = Annotated[
    str | None,
    typer.Option(
        "--loop-threshold",
        metavar="N",
        help="A loop: the same call N rounds in a row, or two calls alternating N times "
        "(default 3; at least 2).",
    ),
]
StallThresholdOpt = Annotated[
    str | None,
    typer.Option(
        "--stall-threshold",
        metavar="N",
        help="A stall: N rounds with no change and no new result (default 8).",
    ),
]
GoalAnchorOpt = Annotated[
    str | None,
    typer.Option(
        "--goal-anchor", metavar="N", help="Restate the goal every N rounds (default 5; 0: never)."
    ),
]
NetworkOpt = Annotated[
    bool | None,
    typer.Option("--network/--no-network", help="Let commands use the network (default: no)."),
]
TokenBudgetOpt = Annotated[
    int | None,
    typer.Option("--token-budget", min=1, help="Cap on tokens (input + output) of the run."),
]


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value:g} is not a positive number")
    return value


TimeBudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--time-budget", callback=_positive, metavar="SECONDS", help="Cap on wall-clock time."
    ),
]
CostBudgetOpt = Annotated[
    float | None,
    typer.Option("--cost-budget", callback=_positive, metavar="USD", help="Cap on cost."),
]
TrustProjectOpt = Annotated[
    bool,
    typer.Option(
        "--trust-project",
        help="Use what the project's reins.toml sets that acts for it: its checks and stop "
        "hooks (they run unasked when the agent says it is done) and its provider settings and "
        "model (where the model's requests go, with which key); without it, the terminal asks, "
        "and with no terminal they are refused.",
    ),
]
McpConfigOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers from a JSON file ({"mcpServers": {...}}, as Claude Desktop writes '
        "it), beside the config's; repeatable.",
    ),
]


def main() -> None:
    # A character the terminal cannot take (a lone surrogate from a file name, say) is shown
    # escaped, never a crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from ..core._threads import Watchdog

    # This process is ours: a tool that holds the interpreter past its timeout ends it, and
    # one still running when the command is done does not keep it alive.
    with Watchdog():
        try:
            app()
        except BrokenPipeError:  # the reader went away from what no command handles (--version)
            _silence_stdout()
            sys.exit(141)  # as a tool stopped by SIGPIPE exits, quietly


@app.command()
def run(
    goal: Annotated[str, typer.Argument(help="What the agent should do.")],
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
        stream = agent.iter(goal, session_id=session_id, cancel=cancel)
        lines.start(stream.steer)
        return await _drive(stream, json_lines, cancel, lines)

    _execute(store, go, workspace=workspace)


@app.command()
def resume(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
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
) -> None:
    """Continue a run after a crash, a cap, a cancel, an error or a pause for approval. New
    caps are totals for the run; by default the cap that stopped it grows by as much again.
    The guards are the run's, but for those the guard flags change."""
    from ..agent._agent import Agent
    from ..agent._resolve import resolve_model
    from ..core._state import RunState
    from ..store import find_run

    config = _config(trust_project, checks=False)  # the run's checks are in its log
    flags = _guard_flags(no_guard, guard, loop_threshold, stall_threshold, goal_anchor)
    servers = _mcp_servers(config, mcp_config)

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        state = RunState.fold(await log.events(info.run_id))
        _check_workspace(state)
        answers = _approvals(state, approve or [], deny or [])
        questions = [q.call_id for q in state.unanswered()]
        if answer is not None and not questions:
            raise UsageError(f"run {info.run_id} asks no question; --answer has nothing to answer")
        replies = dict.fromkeys(questions, answer) if answer is not None else {}
        guards = state.config.guards or config.guards.guards()  # a log too old to hold them
        lines = TerminalLines()
        agent = Agent(
            model=resolve_model(state.config.model, config),
            tools=_builtin_of(state.config.tools),
            log=log,
            permissions=_permissions(config),
            approval=_approval(config, yes, lines, resuming=True),
            on_cap=_on_cap(lines),
            # As the run was, unless the command line says otherwise.
            sandbox=config.sandbox.policy(
                mode=sandbox or state.config.sandbox,
                network=state.config.network if network is None else network,
            ),
            guards=guards,
            stop_hooks=_stop_hooks(config),
            stop_max_rejections=config.stop_max_rejections,
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


def _running(log: SQLiteLog, runs: list[RunInfo]) -> set[str]:
    """The unfinished runs going on now in another process: each the last of its session,
    whose journal that process holds (a run whose process died holds nothing)."""
    last = {run.session_id: run for run in runs}  # the index lists them as they started
    return {
        run.run_id
        for run in last.values()
        if run.stop_reason is None and log.journals.writing(run.session_id)
    }


def _say_unverified(log: SQLiteLog, session_ids: Iterable[str]) -> None:
    """Of each session whose journal is not signed with the user's key: it is read, and
    never continued (what it allowed would not be the user's)."""
    for session_id in dict.fromkeys(session_ids):
        why = log.unverified(session_id)
        if why is not None:
            err.print(
                f"[yellow]unverified:[/] session {session_id}: {escape(why)}; it is read, "
                "never continued"
            )


def _unfinished(state: RunState, running: bool) -> str:
    """What is said of a run with no end in its log: still going on, or its process died."""
    if running:
        return "[yellow]running[/] — another process is writing it; this is its log so far"
    return f"[yellow]unfinished[/] — `reins resume {state.run_id}` continues it"


def _check_workspace(state: RunState) -> None:
    """A resumed run works in its own folder (no flag names another): gone, it is said so."""
    if not Path(state.config.workspace).is_dir():
        raise UsageError(
            f"run {state.run_id} works in {state.config.workspace}, which is not a directory "
            "now; put it back to resume the run"
        )


sessions_app = typer.Typer(rich_markup_mode="markdown", help="List the sessions and their runs.")
app.add_typer(sessions_app, name="sessions")


@sessions_app.callback(invoke_without_command=True)
def sessions(ctx: typer.Context, store: StoreOpt = None) -> None:
    """List the sessions and their runs (`rm` and `prune` remove them)."""
    if ctx.invoked_subcommand is not None:
        return
    from ._render import render_runs

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        runs = await log.runs()
        render_runs(out, runs, running=_running(log, runs))
        _say_unverified(log, (run.session_id for run in runs))
        return StopReason.END_TURN

    _execute(store, go, create=False)


@sessions_app.command("rm")
def sessions_rm(
    session_ids: Annotated[
        list[str],
        typer.Argument(metavar="SESSION...", help="Session ids, unique prefixes, or `last`."),
    ],
    store: StoreOpt = None,
) -> None:
    """Remove sessions for good: their journals, their runs in the index, their saved long
    outputs. A session another process is writing is refused."""
    from ..store import find_session

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        chosen = [find_session(await log.runs(), given) for given in session_ids]
        for session_id in dict.fromkeys(chosen):
            runs = await log.remove(session_id)
            out.print(f"removed session {session_id} ({len(runs)} run(s))")
        return StopReason.END_TURN

    _execute(store, go, create=False)


@sessions_app.command("prune")
def sessions_prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Remove sessions whose last run started before this: 30d, 12h, 90m.",
        ),
    ],
    store: StoreOpt = None,
) -> None:
    """Remove the sessions last used longer ago than AGE (those being written are kept)."""
    from datetime import UTC, datetime

    from ..core._errors import SessionBusy

    with _one_line_errors():
        age = _age(older_than)

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        last: dict[str, datetime] = {}
        for run in await log.runs():
            last[run.session_id] = max(run.started_at, last.get(run.session_id, run.started_at))
        cutoff = datetime.now(UTC) - age
        removed = 0
        for session_id, when in last.items():
            if when >= cutoff:
                continue
            try:
                await log.remove(session_id)
                removed += 1
            except SessionBusy:
                out.print(f"kept session {session_id}: it is being written")
        out.print(f"removed {removed} session(s) last used before {cutoff:%Y-%m-%d %H:%M} UTC")
        return StopReason.END_TURN

    _execute(store, go, create=False)


def _age(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `45s` as a duration; a clear error otherwise."""
    seconds = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    number, unit = text[:-1], text[-1:]
    if unit not in seconds or not number.isdigit():
        raise UsageError(f"--older-than {text!r}: say a whole number and a unit: 30d, 12h, 90m")
    age = int(number) * seconds[unit]
    if age > 36500 * 86400:  # a date before year 1 cannot be computed
        raise UsageError(f"--older-than {text!r}: say at most a hundred years (36500d)")
    return timedelta(seconds=age)


@app.command()
def show(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
    ],
    json_lines: Annotated[bool, typer.Option("--json", help="Print the messages as JSON.")] = False,
    view: Annotated[
        bool,
        typer.Option(
            "--view", help="What the model sees now: the history as compacted, not all of it."
        ),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Print a run's transcript, folded from its log: every message (`--view`: the compacted
    history the model sees)."""
    from ..core._state import RunState
    from ..store import find_run
    from ._render import render_finish, render_transcript

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        runs = await log.runs()
        info = find_run(runs, run_id)
        state = RunState.fold(await log.events(info.run_id))
        _say_unverified(log, [info.session_id])
        messages = state.transcript(whole=not view)
        if json_lines:
            from ..core._messages import MESSAGES

            sys.stdout.write(json_visible(MESSAGES.dump_json(messages, indent=2).decode()) + "\n")
        else:
            render_transcript(out, messages)
            if state.compactions and not view:
                out.print(
                    f"[cyan]compacted {state.compactions} time(s): the model sees "
                    f"{state.view_size()} of these {len(state.messages)} messages, the first "
                    "ones summarized[/] — `reins show --view` shows them"
                )
            if state.todo:
                from ..planning import render

                out.print(f"[bold]todo[/]\n{escape(render(state.todo))}")
            if state.finished is None:
                out.print(_unfinished(state, info.run_id in _running(log, runs)))
            else:
                f = state.finished
                render_finish(out, f.stop_reason, f.final_answer, f.detail)
        return StopReason.END_TURN

    _execute(store, go, create=False)


@app.command()
def compact(
    session: Annotated[
        str,
        typer.Argument(metavar="SESSION", help="Session id, a unique prefix of one, or `last`."),
    ],
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
) -> None:
    """Compact a session's context now: the middle of its history is summarized (by the
    compaction model, else a digest) and its next turn starts from there; the log keeps all."""
    from ..agent._agent import Agent
    from ..agent._resolve import resolve_model
    from ..core._state import RunState
    from ..store import find_session

    config = _config(trust_project, checks=False)

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        session_id = find_session(await log.runs(), session)
        last = (await log.runs(session_id))[-1]
        state = RunState.fold(await log.events(last.run_id))
        agent = Agent(
            model=resolve_model(state.config.model, config),
            tools=_builtin_of(state.config.tools),
            log=log,
            context=state.config.context or config.context.settings(),
        )
        _printer(False)(await agent.compact(session_id))
        return StopReason.END_TURN

    _execute(store, go, create=False)


@app.command()
def replay(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
    ],
    json_lines: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Re-render a run from its log, with no model; exits with the run's code (1 for a run
    with no end in its log: its process died, or it is still running)."""
    from ..core._state import RunState
    from ..store import find_run

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        runs = await log.runs()
        info = find_run(runs, run_id)
        events = await log.events(info.run_id)
        state = RunState.fold(events)  # checks the log before anything is shown
        _say_unverified(log, [info.session_id])
        show_event = _printer(json_lines)
        for event in events:
            show_event(event)
        if state.finished is not None:
            return state.finished.stop_reason
        if not json_lines:
            out.print(_unfinished(state, info.run_id in _running(log, runs)))
        return StopReason.ERROR

    _execute(store, go, create=False)


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

    def agent(self, config: Config, log: SQLiteLog, lines: LineSource) -> Agent:
        from ..agent._agent import Agent
        from ..agent._config import ProfileConfig
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
            max_steps=self.max_steps or preset.max_steps or config.max_steps or 30,
            token_budget=self.token_budget or config.token_budget,
            time_budget=self.time_budget or config.time_budget,
            cost_budget=self.cost_budget or config.cost_budget,
            at_cap=_at_cap(self.at_cap or config.at_cap),
            budget_notices=_either(self.budget_notices, config.budget_notices),
            log=log,
            permissions=_permissions(config),
            approval=_approval(config, self.yes, lines),
            on_cap=_on_cap(lines),
            sandbox=config.sandbox.policy(mode=self.sandbox, network=self.network),
            guards=config.guards.guards(**self.guard_flags),
            checks=[*config.checks, *self.checks],
            stop_hooks=_stop_hooks(config),
            stop_max_rejections=config.stop_max_rejections,
            reflect=_either(self.reflect, config.reflect),
            reflect_max_retries=self.reflect_max_retries or config.reflect_max_retries,
            context=context.settings(window=window),
            instruction_files=config.instruction_files,
            mode=self.mode or preset.mode,
            system_prompt=preset.system_prompt,
            instructions=preset.instructions or "",
            settings=ModelSettings(thinking_budget=preset.thinking_budget),
            profile=self.profile,
            profile_inferred=self.profile_inferred,
            mcp_servers=self.mcp_servers,
            skills=config.skill_folders,
            ask=_asker(config, lines),
            planning=_either(self.planning, config.planning),
        )
        if _either(self.subagents, config.subagents):
            # With no profiles, spawn_agent still offers a copy of this agent.
            agent.subagents = _profiles(agent, config) or True
        return agent


def _check_mode(name: str | None) -> None:
    """A mode named on the command line must be one (an agent given an unknown one from
    Python runs in explore mode, the safe one, and says so)."""
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

    from ..agent._resolve import resolve_model
    from ..core._model import ModelSettings
    from ..tools import builtin_tools

    return {
        name: dataclasses.replace(
            agent,
            model=resolve_model(profile.model, config) if profile.model else agent.model,
            model_id=profile.model or agent.model_id,
            max_steps=profile.max_steps or agent.subagent_steps,
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


def _on_cap(lines: LineSource) -> CapHandler | None:
    """At a cap, the person at the terminal is offered to go on; headless, the run stops."""
    if sys.stdin.isatty():
        from ._offer import TerminalCapOffer

        return TerminalCapOffer(err, lines)
    return None


def _at_cap(value: str) -> Literal["stop", "summarize"]:
    if value in ("stop", "summarize"):
        return cast(Literal["stop", "summarize"], value)
    raise UsageError(f"--at-cap {value!r}: say stop or summarize")


def _config(trust_project: bool, *, checks: bool = True) -> Config:
    """The config files, with the project's commands only if the user trusts them."""
    from ..agent._config import load_config
    from ._trust import trusted

    with _one_line_errors():
        return trusted(load_config(), trust_project=trust_project, console=err, checks=checks)


def _guard_flags(
    off: list[str] | None,
    on: list[str] | None,
    loop_threshold: str | None,
    stall_threshold: str | None,
    goal_anchor: str | None,
) -> dict[str, Any]:
    """The guard flags, as `Guards.switched` takes them (a bad number: one error line)."""
    with _one_line_errors():
        if both := sorted(set(off or ()) & set(on or ())):
            raise UsageError(f"--guard and --no-guard both name {', '.join(both)}; say one")
        return {
            "off": off or (),
            "on": on or (),
            "loop_threshold": _whole("--loop-threshold", loop_threshold, 2),
            "anti_stall_threshold": _whole("--stall-threshold", stall_threshold, 1),
            "goal_anchor": _whole("--goal-anchor", goal_anchor, 0),
        }


def _whole(flag: str, value: str | None, least: int) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = least - 1
    if number < least:
        raise UsageError(f"{flag} {value!r}: say a whole number, {least} or more")
    return number


def _builtin_of(tools: tuple[str, ...]) -> list[Tool]:
    """The built-in tools a run was given (the agent adds the others itself: final_answer,
    and load_skill, ask_user, spawn_agent as the config says)."""
    from ..tools import BUILTIN_TOOLS

    names = {t.name for t in BUILTIN_TOOLS} - {"final_answer"}
    return [t for t in BUILTIN_TOOLS if t.name in names and t.name in tools]


def _mcp_servers(config: Config, files: list[Path] | None) -> list[MCPServerConfig]:
    """The config's MCP servers, and those of the files named on the command line (which
    win by name)."""
    from ..mcp import servers_from_json

    servers = dict(config.mcp_servers)
    with _one_line_errors():
        for path in files or ():
            servers.update(servers_from_json(path))
    return [s for s in servers.values() if s.enabled]


def _stop_hooks(config: Config) -> list[CommandHook]:
    from ..policies import CommandHook

    return [CommandHook(command=h.command, timeout=h.timeout) for h in config.stop_hooks]


def _permissions(config: Config) -> Permissions:
    from ..permissions import Permissions

    return Permissions(user=config.permissions, project=config.project_permissions)


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
        raise UsageError(f"run {state.run_id} waits on no approval; `all` has nothing to answer")
    named = {call: False for call in deny if call != "all"}
    named |= {call: True for call in approve if call != "all"}
    rest = dict.fromkeys((c for c in awaiting if c not in named), "all" in approve)
    return named | rest if "all" in (*approve, *deny) else named


def _asker(config: Config, lines: LineSource) -> Asker | AskMode | None:
    """Who answers the model's question: the person at the terminal; with no terminal, a
    later `reins resume --answer` if approval = "pause"; else nobody (no ask_user)."""
    if sys.stdin.isatty():
        from ._approve import TerminalAsker

        return TerminalAsker(err, lines)
    return "pause" if config.approval == "pause" else None


def _approval(
    config: Config, yes: bool, lines: LineSource, *, resuming: bool = False
) -> ApprovalHandler | ApprovalMode:
    """Who answers a permission ask: nobody with --yes, the person at the terminal if there
    is one, else nobody (denied), or a later `reins resume` with approval = "pause" (which
    asks, when run in a terminal: the person the run waited for is there)."""
    if yes or config.approval == "never-ask":
        return "allow"
    if config.approval == "pause" and not (resuming and sys.stdin.isatty()):
        return "pause"
    if sys.stdin.isatty():
        from ._approve import TerminalApprover

        return TerminalApprover(err, lines)
    return "deny"


@app.command()
def doctor(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(metavar="[SESSION]...", help="Sessions to check (default: all)."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only report; change nothing (exit 1 if damaged).")
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Check the log; move each damaged journal tail aside (kept, never deleted) and say what
    was kept. A session being written by another process is left alone."""
    from ..store import find_session
    from ..store._doctor import doctor as examine
    from ._render import render_findings

    logging.getLogger("reins.store").setLevel(logging.ERROR)  # the report says it all
    store = _store_of(store)
    if not check:
        _set_aside_unreadable_index(store)

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        # A damaged session may be missing from the index: its journal names it too.
        folder = log.journals.directory
        journals = [p.stem for p in folder.glob("*.jsonl")] if folder.is_dir() else []
        runs = await log.runs()
        named = [find_session(runs, name, journals) for name in sessions or ()]
        findings = examine(log, repair=not check, sessions=named)
        render_findings(out, findings, repairing=not check)
        left = [f for f in findings if not f.repaired]
        return StopReason.ERROR if left else StopReason.END_TURN

    _execute(store, go, create=False)


def _set_aside_unreadable_index(store: Path) -> None:
    """An index that is not a database is moved aside, to be rebuilt from the journals."""
    from datetime import UTC, datetime

    from ..core._errors import LogCorrupted
    from ..store import SQLiteLog

    if not (store / "reins.db").is_file():
        return
    import asyncio  # here, as the core: `reins --help` never needs it

    try:
        asyncio.run(SQLiteLog(store).close())
    except LogCorrupted:
        stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}"
        for name in ("reins.db", "reins.db-wal", "reins.db-shm"):
            if (store / name).exists():
                (store / name).rename(store / f"{name}.corrupt-{stamp}")
        out.print(
            f"{escape(str(store / 'reins.db'))} was not a readable database: moved to "
            f"reins.db.corrupt-{stamp}; the index is rebuilt from the journals"
        )
    except ReinsError:
        pass  # the command itself reports it


async def _drive(
    stream: AgentRun, json_lines: bool, cancel: Cancel, lines: TerminalLines
) -> StopReason:
    """Show the run's events; a reader that goes away (`--json | head`) cancels the run,
    which ends as cancelled, quietly. A prompt (`lines`) stops the spinner first."""
    from ..core._events import RunFinished
    from ._render import EventRenderer

    printer = _printer(json_lines)
    show_event: Callable[[Any], None] | None = printer
    reason = StopReason.ERROR
    if isinstance(printer, EventRenderer):
        lines.before_prompt = printer.prompting  # the next event starts the spinner again
        lines.on_steer = printer.steering
        if out.is_terminal:  # it spins
            lines.hide_typing()
        _SHOWN.append(printer)
        printer.starting()
    try:
        async for event in stream:
            WARNINGS.show_held()  # the run has read its session: other damage is said now
            if show_event is not None:
                try:
                    show_event(event)
                except BrokenPipeError:
                    show_event = None
                    _silence_stdout()
                    cancel.cancel()
            if isinstance(event, RunFinished):
                reason = event.stop_reason
    finally:
        if isinstance(printer, EventRenderer):
            printer.close()
            _SHOWN.remove(printer)
            lines.show_typing()
    return reason


_SHOWN: list[EventRenderer] = []
"""The run `_drive` shows on the terminal, if one: a signal's line takes its spinner's place."""


def _silence_stdout() -> None:
    """Nobody reads stdout any more: what is left to write (and Python's flush at exit) goes
    nowhere, instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _printer(json_lines: bool) -> Callable[[Any], None]:
    from ..core._events import EVENT, SubagentEvent
    from ._render import EventRenderer

    if json_lines:

        def write(event: Any) -> None:
            if isinstance(event, SubagentEvent):  # {"subagent": [call ids], "event": {...}}
                inner = EVENT.dump_json(event.event).decode()
                line = f'{{"subagent": {json.dumps(list(event.path))}, "event": {inner}}}'
            else:
                line = EVENT.dump_json(event).decode()
            sys.stdout.write(json_visible(line) + "\n")
            sys.stdout.flush()

        return write
    return EventRenderer(out, spinner=True)


def _execute(
    store: Path | None,
    go: Callable[[SQLiteLog, Cancel], Coroutine[Any, Any, StopReason]],
    *,
    create: bool = True,
    workspace: Path | None = None,
) -> None:
    """Open the log (`store`, else the current folder's), run `go` with Ctrl-C wired to a
    cooperative cancel, exit with its code. Every error of ours becomes one line on stderr;
    nothing else ever shows a traceback. A log a run in `workspace` could reach is refused
    before it is opened (made)."""
    logging.basicConfig(  # unless -v
        format="warning: %(message)s", level=logging.WARNING, handlers=[WARNINGS]
    )
    WARNINGS.holding = True  # until the command has read what it reads
    with _one_line_errors():
        where = ""
        if store is None:
            store = _store_of(None)
            where = f"for {os.getcwd()} (its log would be at {store})"
            if not create:
                _say_unread_store()
        if workspace is not None:
            from ..store._placement import check_placement

            check_placement(store, workspace)
        if store.exists() and not store.is_dir():
            raise UsageError(
                f"the event log {store} is a file; the log is a folder: pass --store a folder "
                "(one that does not exist yet is made)"
            )
        if not create and not _holds_a_log(store):  # a read makes no reins.db in any folder
            raise UsageError(
                f"no event log {where or f'at {store}'}; run `reins run GOAL` first, or "
                "pass --store"
            )
        import asyncio

        reason = asyncio.run(_with_log(store, go))
    raise typer.Exit(EXIT_CODES[reason])


def _store_of(store: Path | None) -> Path:
    """The store named, else the current folder's in the user's data folder (one a folder,
    as `./.reins` was): never one found in the project, which a clone can ship (grants in its
    journal) and its commands can reach."""
    from ..core._paths import project_store

    return store if store is not None else project_store(os.getcwd())


def _say_unread_store() -> None:
    """A reading command tells of a log in `./.reins/` (an earlier reins kept it there; or
    the project came with it): it is read only when named."""
    found = Path(".reins")
    if _holds_a_log(found):
        err.print(
            f"[dim]note: {escape(str(found))} holds an event log, which is read only when "
            f"named (--store {escape(str(found))}): logs live in the user's data folder, and a "
            "log that came with a project is not yours[/]"
        )


def _holds_a_log(store: Path) -> bool:
    """An index or journals (the index is rebuilt from them): a folder `reins run` made."""
    return (store / "reins.db").is_file() or (store / "sessions").is_dir()


class Warnings(logging.Handler):
    """The warnings on stderr. One about a damaged journal is held while `holding` (as the
    command opens the log and reads what it reads): a command that then fails on that damage
    says it once, as its error, naming the file, the line and `reins doctor`."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = False
        self.held: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if self.holding and any(isinstance(arg, LogCorrupted) for arg in args):
            self.held.append(record)
            return
        try:
            sys.stderr.write(visible(self.format(record), lines=True) + "\n")
        except Exception:
            self.handleError(record)

    def show_held(self, said: ReinsError | None = None) -> None:
        """Stop holding: show what was held, but for what the error `said` says again."""
        self.holding = False
        held, self.held = self.held, []
        for record in held:
            if said is None or record.getMessage() != str(said):
                self.handle(record)


WARNINGS = Warnings()


@contextlib.contextmanager
def _one_line_errors() -> Iterator[None]:
    """Every error of ours becomes one line on stderr and its exit code; nothing else ever
    shows a traceback."""
    import asyncio  # for its CancelledError

    try:
        yield
    except UsageError as exc:
        WARNINGS.show_held(exc)
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except ReinsError as exc:
        WARNINGS.show_held(exc)
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print("[yellow]interrupted[/]; the log ends at the last recorded event")
        raise typer.Exit(130) from None
    except BrokenPipeError:  # the reader went away (`reins replay --json | head`)
        _silence_stdout()
        raise typer.Exit(141) from None  # as a tool stopped by SIGPIPE exits, quietly
    except Exception as exc:
        if os.environ.get("REINS_DEBUG"):
            raise
        err.print(
            f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
            "(set REINS_DEBUG=1 for the traceback, and please report it)"
        )
        raise typer.Exit(1) from None
    finally:
        WARNINGS.show_held()


async def _with_log(
    store: Path, go: Callable[[SQLiteLog, Cancel], Coroutine[Any, Any, StopReason]]
) -> StopReason:
    import asyncio

    from ..core._cancel import Cancel
    from ..store import SQLiteLog

    log = SQLiteLog(store)
    cancel = Cancel()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        """The first Ctrl-C, SIGTERM or SIGHUP cancels the run cooperatively (the tools are
        stopped, `cancelled` recorded); a second one stops at once."""
        if cancel.is_set:  # two signals that came before either was handled
            _stop_at_once(signum, None)
        drawn = [screen.interrupted() for screen in _SHOWN]
        lead = "" if any(drawn) else "\n"  # else after what is on the line (a prompt, its ^C)
        err.print(
            f"{lead}[yellow]cancelling…[/] ({signal.Signals(signum).name}; again to stop at once)"
        )
        cancel.cancel()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
            signal.signal(sig, _stop_at_once)

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await go(log, cancel)
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        await log.close()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop_at_once(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds asyncio.run, which cancels (and so kills) running tools
