"""What the reading commands say of a run beside its log: another process still writes it,
its process died, or its session is not signed with the user's key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.markup import escape

from ._console import err
from ._short_ids import short

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._state import RunState
    from ..store import IndexedLog, RunInfo


def _running(log: IndexedLog, runs: list[RunInfo]) -> set[str]:
    """The unfinished runs going on now in another process: each the last of its session,
    whose journal that process holds (a run whose process died holds nothing)."""
    last = {run.session_id: run for run in runs}  # the index lists them as they started
    return {
        run.run_id
        for run in last.values()
        if run.stop_reason is None and log.writing(run.session_id)
    }


def _say_unverified(log: IndexedLog, session_ids: Iterable[str]) -> None:
    """Of each session whose journal is not signed with the user's key: it is read, and
    never continued (what it allowed would not be the user's)."""
    for session_id in dict.fromkeys(session_ids):
        why = log.unverified(session_id)
        if why is not None:
            err.print(
                f"[yellow]unverified:[/] session {short(session_id)}: {escape(why)}; it is read, "
                "never continued"
            )


def _unfinished(state: RunState, running: bool) -> str:
    """What is said of a run with no end in its log: still going on, or its process died."""
    if running:
        return "[yellow]running[/] — another process is writing it; this is its log so far"
    return f"[yellow]unfinished[/] — `reins resume {short(state.run_id)}` continues it"
