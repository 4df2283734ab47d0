"""`reins doctor`: the log checked, each damaged journal tail moved aside (kept), an index
that is not a database set aside to be rebuilt."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ..core._errors import ReinsError
from ..core._stop import StopReason
from . import _complete
from ._console import _one_line_errors, out
from ._execute import _execute, _store_of
from ._options import StoreOpt
from ._short_ids import short

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog


def doctor(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[SESSION]...",
            autocompletion=_complete.sessions,
            help="Sessions to check (default: all).",
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only report; change nothing (exit 1 if damaged).")
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Check the log; move each damaged journal tail aside (kept, never deleted) and say what
    was kept. A session being written by another process is left alone. On a PostgreSQL
    store: read back every run's events and write again each line of the run index they
    contradict."""
    from ..store import SQLiteLog, find_session, is_postgres
    from ..store._doctor import doctor as examine
    from ._render import render_findings

    logging.getLogger("reins.store").setLevel(logging.ERROR)  # the report says it all
    if is_postgres(store):
        _execute(store, _on_postgres(sessions or [], check), create=False)
        return
    with _one_line_errors():
        folder = _store_of(store)
    if not check:
        _set_aside_unreadable_index(folder)

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        assert isinstance(log, SQLiteLog)  # a folder's
        # A damaged session may be missing from the index: its journal names it too.
        folder = log.journals.directory
        journals = [p.stem for p in folder.glob("*.jsonl")] if folder.is_dir() else []
        runs = await log.runs()
        named = [find_session(runs, name, journals) for name in sessions or ()]
        findings = examine(log, repair=not check, sessions=named)
        render_findings(out, findings, repairing=not check)
        left = [f for f in findings if not f.repaired]
        return StopReason.ERROR if left else StopReason.END_TURN

    _execute(folder, go, create=False)


def _on_postgres(
    sessions: list[str], check: bool
) -> Callable[[IndexedLog, Cancel], Coroutine[Any, Any, StopReason]]:
    """The doctor of a PostgreSQL store: no journal to cut; each run read back, its line of
    the index checked (and with no --check, written again from its events)."""

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        from ..store import PostgresLog, find_session
        from ..store._pg_doctor import examine

        assert isinstance(log, PostgresLog)
        runs = await log.runs()
        named = [find_session(runs, name) for name in sessions]
        findings = await examine(log, repair=not check, sessions=named)
        if not findings:
            out.print(
                f"the log is sound: every run's events read back from {escape(log.where)} "
                f"(schema version {log.schema_version}), and the run index agrees with them"
            )
        for f in findings:
            out.print(
                f"[bold]run {short(f.run_id)}[/] (session {short(f.session_id)}): "
                f"{escape(f.problem)}",
                soft_wrap=True,
            )
            if f.repaired:
                out.print("  repaired: the run index is written again from the run's events")
            elif f.of_the_index:
                out.print("  [yellow]not repaired[/]: run `reins doctor` to index it again")
            else:
                out.print(
                    "  [yellow]left as it is[/]: reins never rewrites an event; "
                    "`reins sessions rm` removes the session"
                )
        return StopReason.ERROR if any(not f.repaired for f in findings) else StopReason.END_TURN

    return go


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
