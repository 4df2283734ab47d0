"""`reins sessions`: the sessions and their runs listed; `rm` and `prune` remove them."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core._errors import UsageError
from ..core._stop import StopReason
from . import _complete
from ._console import _one_line_errors, out
from ._execute import _execute
from ._options import ServerOpt, StoreOpt
from ._run_status import _running, _say_unverified
from ._safe import json_visible, visible
from ._short_ids import short

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog, RunInfo

sessions_app = typer.Typer(rich_markup_mode="markdown", help="List the sessions and their runs.")


@sessions_app.callback(invoke_without_command=True)
def sessions(
    ctx: typer.Context,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the runs as one JSON array: session_id, run_id, goal, model, "
            "started_at, stop_reason (null: unfinished), running.",
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, metavar="N", help="Only the latest N runs."),
    ] = None,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree", help="The sessions as a tree: each fork under the one it came from."
        ),
    ] = False,
    store: StoreOpt = None,
    server: ServerOpt = None,
) -> None:
    """List the sessions and their runs, the latest last (`rm` and `prune` remove them)."""
    if ctx.invoked_subcommand is not None:
        return
    if server is not None:
        from ._remote import list_remote

        list_remote(server, limit, json_out)
    from ._render import render_runs

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        runs = sorted(await log.runs(), key=lambda run: run.started_at)
        running = _running(log, runs)
        if limit is not None:
            runs = runs[-limit:]
        if json_out:
            sys.stdout.write(json_visible(json.dumps(_as_json(runs, running), indent=2)) + "\n")
        elif tree:
            await _render_tree(log, runs)
        else:
            render_runs(out, runs, running=running)
        _say_unverified(log, (run.session_id for run in runs))
        return StopReason.END_TURN

    _execute(store, go, create=False)


async def _render_tree(log: IndexedLog, runs: list[RunInfo]) -> None:
    """Each session a line (its first goal, its runs, how its latest ended), a fork indented
    under the session it came from, with where."""
    from ..core._events import ForkedFrom

    by_session: dict[str, list[RunInfo]] = {}
    for run in runs:
        by_session.setdefault(run.session_id, []).append(run)
    parent: dict[str, ForkedFrom] = {}
    for session_id, its in by_session.items():
        start = (await log.events(its[0].run_id))[:2]
        if len(start) == 2 and isinstance(start[1], ForkedFrom):
            parent[session_id] = start[1]
    children: dict[str | None, list[str]] = {}
    for session_id in by_session:
        origin = parent.get(session_id)
        known = origin is not None and origin.from_session_id in by_session
        children.setdefault(origin.from_session_id if origin and known else None, []).append(
            session_id
        )

    def show(session_id: str, depth: int) -> None:
        its = by_session[session_id]
        last = its[-1].stop_reason.value if its[-1].stop_reason else "unfinished"
        origin = parent.get(session_id)
        where = f"⑂ run {short(origin.from_run_id)} seq {origin.from_seq}  " if origin else ""
        goal = visible(its[0].goal.splitlines()[0] if its[0].goal else "")
        out.print(
            f"{'  ' * depth}{short(session_id)}  [dim]{escape(where)}{len(its)} run(s), "
            f"{last}[/]  {escape(goal)}",
            soft_wrap=True,
        )
        for child in children.get(session_id, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def _as_json(runs: list[RunInfo], running: set[str]) -> list[dict[str, object]]:
    return [
        {
            "session_id": run.session_id,
            "run_id": run.run_id,
            "goal": run.goal,
            "model": run.model,
            "started_at": run.started_at.isoformat(),
            "stop_reason": run.stop_reason.value if run.stop_reason is not None else None,
            "running": run.run_id in running,
        }
        for run in runs
    ]


@sessions_app.command("rm")
def sessions_rm(
    session_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="SESSION...",
            autocompletion=_complete.sessions,
            help="Session ids, unique prefixes, or `last`.",
        ),
    ],
    store: StoreOpt = None,
) -> None:
    """Remove sessions for good: their journals, their runs in the index, their saved long
    outputs. A session another process is writing is refused."""
    from ..store import find_session

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        chosen = [find_session(await log.runs(), given) for given in session_ids]
        for session_id in dict.fromkeys(chosen):
            runs = await log.remove(session_id)
            out.print(f"removed session {short(session_id)} ({len(runs)} run(s))")
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
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be removed; remove nothing.")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Remove without asking (needed with no terminal)."),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Remove the sessions last used longer ago than AGE (those being written are kept). In a
    terminal it lists them and asks first."""
    from datetime import UTC, datetime

    from ..core._errors import SessionBusy

    with _one_line_errors():
        age = _age(older_than)

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        sessions: dict[str, list[RunInfo]] = {}
        for run in sorted(await log.runs(), key=lambda run: run.started_at):
            sessions.setdefault(run.session_id, []).append(run)
        cutoff = datetime.now(UTC) - age
        before = f"last used before {cutoff:%Y-%m-%d %H:%M} UTC"
        old = {sid: runs for sid, runs in sessions.items() if runs[-1].started_at < cutoff}
        if not old:
            out.print(f"removed 0 session(s): none was {before}")
            return StopReason.END_TURN
        if not (dry_run or yes or sys.stdin.isatty()):
            raise UsageError(
                f"sessions prune would remove {len(old)} session(s) for good, and there is no "
                "terminal to ask: pass --yes to remove them, or --dry-run to list them"
            )
        for session_id, runs in old.items():
            goal = runs[0].goal.splitlines()[0] if runs[0].goal else ""
            out.print(
                f"  {short(session_id)}  {runs[-1].started_at:%Y-%m-%d %H:%M}  {len(runs)} run(s)  "
                f"{escape(visible(goal)[:60])}",
                soft_wrap=True,
            )
        if dry_run:
            out.print(f"would remove {len(old)} session(s) {before} (--dry-run: none removed)")
            return StopReason.END_TURN
        if not yes and not _confirm(f"Remove these {len(old)} session(s) for good? [y/N] "):
            out.print("removed 0 session(s): nothing was removed")
            return StopReason.END_TURN
        removed = 0
        for session_id in old:
            try:
                await log.remove(session_id)
                removed += 1
            except SessionBusy:
                out.print(f"kept session {short(session_id)}: it is being written")
        out.print(f"removed {removed} session(s) {before}")
        return StopReason.END_TURN

    _execute(store, go, create=False)


def _confirm(question: str) -> bool:
    """Asks on the terminal; only y or yes is a yes (the end of input is a no)."""
    out.print(escape(question), end="")
    return sys.stdin.readline().strip().lower() in ("y", "yes")


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
