"""Commands: run, resume, sessions, show, replay. Errors become one line and an exit code."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from .._errors import ReinsError, UsageError
from .._stop import StopReason

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from .._agent import AgentRun
    from .._cancel import Cancel
    from ..store import SQLiteLog

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
    StopReason.CANCELLED: 130,
}
"""Exit code per stop reason; 2 is bad input, as for any command line."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="reins: run tool-calling agents with a log you can resume and replay.",
)
out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # an error stays one line

StoreOpt = Annotated[
    Path,
    typer.Option("--store", envvar="REINS_STORE", help="Folder of the event log (SQLite + JSONL)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")]
SandboxOpt = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        metavar="MODE",
        help="What commands may do: read-only, workspace-write (default) or danger-full-access "
        "(no sandbox).",
    ),
]
NetworkOpt = Annotated[
    bool | None,
    typer.Option("--network/--no-network", help="Let commands use the network (default: no)."),
]
DEFAULT_STORE = Path(".reins")


def main() -> None:
    app()


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
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Cap on model calls.")] = 30,
    workspace: Annotated[
        Path, typer.Option("--workspace", "-w", help="Folder the tools work in.")
    ] = Path("."),
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue this session as a new turn.")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option("--tools", help="Built-in tools to offer, comma-separated (default: all)."),
    ] = None,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    json_lines: JsonOpt = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Run an agent on GOAL and show its steps live."""
    from .._agent import Agent
    from .._config import load_config
    from .._resolve import resolve_model
    from ..tools import builtin_tools

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        config = load_config()
        agent = Agent(
            model=resolve_model(model or config.model or "local", config),
            tools=builtin_tools(tools.split(",") if tools else None),
            workspace=workspace,
            max_steps=max_steps,
            log=log,
            sandbox=config.sandbox.policy(mode=sandbox, network=network),
        )
        return await _drive(agent.iter(goal, session_id=session, cancel=cancel), json_lines)

    _execute(store, go)


@app.command()
def resume(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
    ],
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="New cap on model calls.")
    ] = None,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    json_lines: JsonOpt = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Continue a run after a crash, a cap, a cancel or an error, with the model it used."""
    from .._agent import Agent
    from .._config import load_config
    from .._resolve import resolve_model
    from .._state import RunState
    from ..store import find_run
    from ..tools import builtin_tools

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        state = RunState.fold(await log.events(info.run_id))
        agent = Agent(
            model=resolve_model(state.config.model),
            tools=builtin_tools([t for t in state.config.tools if t != "final_answer"]),
            log=log,
            sandbox=load_config().sandbox.policy(mode=sandbox, network=network),
        )
        stream = agent.resume_iter(info.run_id, max_steps=max_steps, cancel=cancel)
        return await _drive(stream, json_lines)

    _execute(store, go)


@app.command()
def sessions(store: StoreOpt = DEFAULT_STORE) -> None:
    """List the sessions and their runs."""
    from ._render import render_runs

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        render_runs(out, await log.runs())
        return StopReason.END_TURN

    _execute(store, go, create=False)


@app.command()
def show(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
    ],
    json_lines: Annotated[bool, typer.Option("--json", help="Print the messages as JSON.")] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Print a run's transcript, folded from its log."""
    from .._state import RunState
    from ..store import find_run
    from ._render import render_finish, render_transcript

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        state = RunState.fold(await log.events(info.run_id))
        messages = state.transcript()
        if json_lines:
            from .._messages import MESSAGES

            sys.stdout.write(MESSAGES.dump_json(messages, indent=2).decode() + "\n")
        else:
            render_transcript(out, messages)
            if state.finished is None:
                out.print("[yellow]unfinished[/] — `reins resume` continues it")
            else:
                f = state.finished
                render_finish(out, f.stop_reason, f.final_answer, f.detail)
        return StopReason.END_TURN

    _execute(store, go, create=False)


@app.command()
def replay(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id, a unique prefix of one, or `last`.")
    ],
    json_lines: JsonOpt = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Re-render a run from its log, with no model; exits with the run's code."""
    from .._state import RunState
    from ..store import find_run

    async def go(log: SQLiteLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        events = await log.events(info.run_id)
        state = RunState.fold(events)  # checks the log before anything is shown
        show_event = _printer(json_lines)
        for event in events:
            show_event(event)
        return state.finished.stop_reason if state.finished else StopReason.CANCELLED

    _execute(store, go, create=False)


async def _drive(stream: AgentRun, json_lines: bool) -> StopReason:
    from .._events import RunFinished

    show_event = _printer(json_lines)
    reason = StopReason.ERROR
    async for event in stream:
        show_event(event)
        if isinstance(event, RunFinished):
            reason = event.stop_reason
    return reason


def _printer(json_lines: bool) -> Callable[[Any], None]:
    from .._events import EVENT
    from ._render import EventRenderer

    if json_lines:

        def write(event: Any) -> None:
            sys.stdout.write(EVENT.dump_json(event).decode() + "\n")
            sys.stdout.flush()

        return write
    return EventRenderer(out)


def _execute(
    store: Path,
    go: Callable[[SQLiteLog, Cancel], Coroutine[Any, Any, StopReason]],
    *,
    create: bool = True,
) -> None:
    """Open the log, run `go` with Ctrl-C wired to a cooperative cancel, exit with its code.
    Every error of ours becomes one line on stderr; nothing else ever shows a traceback."""
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    try:
        if not create and not store.is_dir():
            raise UsageError(
                f"no event log at {store}; run `reins run GOAL` first, or pass --store"
            )
        reason = asyncio.run(_with_log(store, go))
    except UsageError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except ReinsError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]; the log ends at the last recorded event")
        raise typer.Exit(130) from None
    except Exception as exc:
        if os.environ.get("REINS_DEBUG"):
            raise
        err.print(
            f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
            "(set REINS_DEBUG=1 for the traceback, and please report it)"
        )
        raise typer.Exit(1) from None
    raise typer.Exit(EXIT_CODES[reason])


async def _with_log(
    store: Path, go: Callable[[SQLiteLog, Cancel], Coroutine[Any, Any, StopReason]]
) -> StopReason:
    from .._cancel import Cancel
    from ..store import SQLiteLog

    log = SQLiteLog(store)
    cancel = Cancel()
    loop = asyncio.get_running_loop()

    def on_interrupt() -> None:
        err.print("\n[yellow]cancelling…[/] (Ctrl-C again to stop at once)")
        cancel.cancel()
        loop.remove_signal_handler(signal.SIGINT)

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        return await go(log, cancel)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await log.close()
