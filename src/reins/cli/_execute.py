"""Running a command against the event log: the store found and opened, Ctrl-C wired to a
cooperative cancel, the exit code the run's stop reason."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from ..core._errors import UsageError
from ..core._stop import StopReason
from ._console import WARNINGS, _one_line_errors, err
from ._event_output import _SHOWN
from ._short_ids import short

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog

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


def _execute(
    store: str | Path | None,
    go: Callable[[IndexedLog, Cancel], Coroutine[Any, Any, StopReason]],
    *,
    create: bool = True,
    workspace: Path | None = None,
) -> None:
    """Open the log (`store`: a folder or a PostgreSQL address, else the current folder's),
    run `go` with Ctrl-C wired to a cooperative cancel, exit with its code. Every error of
    ours becomes one line on stderr; nothing else ever shows a traceback. A log a run in
    `workspace` could reach is refused before it is opened (made)."""
    logging.basicConfig(  # unless -v
        format="warning: %(message)s", level=logging.WARNING, handlers=[WARNINGS]
    )
    WARNINGS.holding = True  # until the command has read what it reads
    with _one_line_errors():
        import asyncio  # here, as the core: `reins --help` never needs it

        from ..store import is_postgres

        if is_postgres(store):  # a database: no folder to place, find or make
            reason = asyncio.run(_with_log(str(store), go, create=create))
        else:
            reason = asyncio.run(_with_log(_folder(store, create, workspace), go))
    raise typer.Exit(EXIT_CODES[reason])


def _folder(given: str | Path | None, create: bool, workspace: Path | None) -> Path:
    """The store folder a command opens: checked, so that a read makes no log, and no run's
    commands can reach the log they are recorded in."""
    store = Path(given) if given is not None else None
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
            f"no event log {where or f'at {store}'}; run `reins run GOAL` first, or pass --store"
        )
    return store


def _store_of(store: str | Path | None, *, what: str = "this command") -> Path:
    """The store folder named, else the current folder's in the user's data folder (one a
    folder, as `./.reins` was): never one found in the project, which a clone can ship
    (grants in its journal) and its commands can reach. A PostgreSQL store is refused where
    `what` keeps files beside the log (a UsageError)."""
    from ..core._paths import project_store
    from ..store import is_postgres

    if is_postgres(store):
        raise UsageError(
            f"{what} keeps its files in a store folder, and --store names a PostgreSQL "
            "database: give it a folder (a PostgreSQL store serves run, resume, chat, "
            "sessions, show, replay, doctor, memory, serve and store copy)"
        )
    return Path(store) if store is not None else project_store(os.getcwd())


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


async def _with_log(
    store: str | Path,
    go: Callable[[IndexedLog, Cancel], Coroutine[Any, Any, StopReason]],
    *,
    create: bool = True,
) -> StopReason:
    import asyncio

    from ..core._cancel import Cancel
    from ..store import open_log, peek_runs

    log = open_log(store, create=create)
    try:  # ids print as their shortest unique prefix among these
        short.know(peek_runs(store) if isinstance(store, Path) else await log.runs())
    except BaseException:
        await log.close()
        raise
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
