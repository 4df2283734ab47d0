"""`reins doctor`: the log checked, each damaged journal tail moved aside (kept), an index
that is not a database set aside to be rebuilt."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core._errors import ReinsError
from ..core._stop import StopReason
from . import _complete
from ._console import out
from ._execute import _execute, _store_of
from ._options import StoreOpt

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import SQLiteLog


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
