"""`reins show` (a run's transcript, folded from its log) and `reins replay` (its events
re-rendered, with no model)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core._stop import StopReason
from . import _complete
from ._console import out
from ._event_output import _printer
from ._execute import _execute
from ._options import JsonOpt, StoreOpt
from ._run_status import _running, _say_unverified, _unfinished
from ._safe import json_visible
from ._short_ids import short

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog


def show(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            autocompletion=_complete.runs,
            help="Run id, a unique prefix of one, or `last`.",
        ),
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

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        runs = await log.runs()
        info = find_run(runs, run_id)
        state = RunState.fold(await log.events(info.run_id))
        _say_unverified(log, [info.session_id])
        messages = state.transcript(whole=not view)
        if json_lines:
            from ..core._messages import MESSAGES

            sys.stdout.write(json_visible(MESSAGES.dump_json(messages, indent=2).decode()) + "\n")
        else:
            if (origin := state.forked_from) is not None:
                out.print(
                    f"[cyan]⑂ forked from run {short(origin.from_run_id)} at seq "
                    f"{origin.from_seq}[/] [dim](session {short(origin.from_session_id)})[/]"
                )
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


def replay(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            autocompletion=_complete.runs,
            help="Run id, a unique prefix of one, or `last`.",
        ),
    ],
    json_lines: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Re-render a run from its log, with no model; exits with the run's code (1 for a run
    with no end in its log: its process died, or it is still running)."""
    from ..core._state import RunState
    from ..store import find_run

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
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
