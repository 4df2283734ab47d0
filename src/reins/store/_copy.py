"""Sessions copied from one store to another (`reins store copy`): a folder's SQLite + JSONL
log to PostgreSQL and back, each run's events appended to the target as they were recorded
(the same JSON, byte for byte; the images and documents they refer to with them).

A copy never overwrites: a session the target holds already refuses the whole copy, before
anything is written. So does a session the source cannot vouch for as the user's (a journal
not signed with the user's key: appended to a SQLite target, it would be signed as theirs), or
one being written now (its copy would stop mid-run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core._errors import LogUnverified, SessionBusy, StoreError
from ..core._log import RunInfo
from ._log import IndexedLog, find_session


@dataclass(frozen=True)
class Copied:
    """What a copy wrote."""

    sessions: int
    runs: int
    events: int


async def copy_sessions(
    source: IndexedLog, target: IndexedLog, sessions: Sequence[str] = ()
) -> Copied:
    """Copy every session of `source` (or those `sessions` name: ids or unique prefixes)
    into `target`, oldest first; a StoreError, and nothing copied, if any cannot be."""
    by_session: dict[str, list[RunInfo]] = {}
    runs = sorted(await source.runs(), key=lambda run: run.started_at)
    for run in runs:
        by_session.setdefault(run.session_id, []).append(run)
    chosen = list(dict.fromkeys(find_session(runs, given) for given in sessions)) or list(
        by_session
    )
    _refuse(source, target, chosen, {run.session_id for run in await target.runs()})
    copied = [run for session_id in chosen for run in by_session[session_id]]
    events = 0
    for run in copied:
        recorded = await source.events(run.run_id)
        for event in recorded:
            await target.append(event, commit=False)
        await target.commit()
        if run.stop_reason is None:  # unfinished: it goes on nowhere, the target included
            target.release(run.session_id, run.run_id)
        events += len(recorded)
    return Copied(sessions=len(chosen), runs=len(copied), events=events)


def _refuse(source: IndexedLog, target: IndexedLog, chosen: list[str], there: set[str]) -> None:
    """Raise, naming the first session that cannot be copied and why (nothing is yet)."""
    if clash := [s for s in chosen if s in there]:
        more = f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""
        raise StoreError(
            f"{target.where} holds session {clash[0]}{more} already; nothing was copied: a "
            "copy never overwrites a session (remove it there first with `reins sessions rm`, "
            "or name the sessions to copy)"
        )
    for session_id in chosen:
        if (why := source.unverified(session_id)) is not None:
            raise LogUnverified(
                f"session {session_id} in {source.where}: {why}; nothing was copied: copied, "
                "it would be recorded as yours (name the sessions to copy without it)"
            )
        if source.writing(session_id):
            raise SessionBusy(
                f"session {session_id} is being written in {source.where}; nothing was "
                "copied: copy it once its run has ended"
            )
