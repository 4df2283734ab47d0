"""`reins fork RUN`: a new session whose history is a run's up to a point; the run untouched."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core._stop import StopReason
from . import _complete
from ._console import out
from ._execute import _execute
from ._options import StoreOpt

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog


def fork(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            autocompletion=_complete.runs,
            help="Run id, a unique prefix of one, or `last`.",
        ),
    ],
    at: Annotated[
        int | None,
        typer.Option("--at", metavar="SEQ", min=1, help="Fork after this event (`reins show`)."),
    ] = None,
    step: Annotated[
        int | None,
        typer.Option("--step", metavar="N", min=1, help="Fork after this step."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Fork a run after an event or a step (else at its end): a new session whose run holds
    the run's history up to there, the original untouched. `reins resume` goes on with the
    fork's run from there; `reins run --session` starts a new turn of its session."""
    from ..agent._fork import fork_run
    from ..store import find_run

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        session_id, forked = await fork_run(log, info.run_id, at_seq=at, step=step)
        out.print(
            f"forked run {escape(info.run_id)}: session {escape(session_id)}, run "
            f"{escape(forked)}\n`reins resume {escape(forked)}` goes on from there; "
            f"`reins run --session {escape(session_id)} GOAL` starts a new turn"
        )
        return StopReason.END_TURN

    _execute(store, go, create=False)
