"""`reins sessions`: the sessions and their runs listed; `rm` and `prune` remove them."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from ..core._errors import UsageError
from ..core._stop import StopReason
from ._console import _one_line_errors, out
from ._execute import _execute
from ._options import StoreOpt
from ._run_status import _running, _say_unverified

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import SQLiteLog

sessions_app = typer.Typer(rich_markup_mode="markdown", help="List the sessions and their runs.")


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
