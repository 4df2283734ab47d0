"""`reins doctor` on a PostgreSQL store: every run's events read back, and its line of the
run index checked against what they say (a line that differs is written again from them).

There is no journal to cut: the database keeps each run's events whole and in order (one
transaction writes a batch; the primary key and the write's check keep seq gapless). An event
that does not read back (a row changed by hand) is reported and left as it is: the rows are the
record, and reins never rewrites one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core._errors import StoreError
from ..core._events import Event
from ..core._log import RunInfo
from ._log import index_update
from ._postgres import PostgresLog


@dataclass(frozen=True)
class RowFinding:
    """Something wrong with one run in a PostgreSQL store."""

    session_id: str
    run_id: str
    problem: str
    of_the_index: bool = False
    """The run index contradicts the events: writing it again from them mends it (an event
    that does not read back is left as it is)."""
    repaired: bool = False


async def examine(
    log: PostgresLog, *, repair: bool, sessions: Sequence[str] = ()
) -> list[RowFinding]:
    """Check every run (or those of `sessions`); with `repair`, write again each line of the
    run index that its events contradict. Sound runs are left out."""
    indexed = {run.run_id: run for run in await log.runs()}
    recorded = await log.recorded_runs()
    findings: list[RowFinding] = []
    for run_id in sorted(recorded.keys() | indexed.keys()):
        info = indexed.get(run_id)
        session_id = recorded.get(run_id) or (info.session_id if info else "")
        if sessions and session_id not in sessions:
            continue
        if run_id not in recorded:
            problem = "the run index lists this run, and the store holds none of its events"
            findings.append(await _reindexed(log, session_id, run_id, problem, None, repair))
            continue
        try:
            told = _told(await log.events(run_id))
        except StoreError as exc:  # LogCorrupted, or a blob missing or changed
            findings.append(RowFinding(session_id, run_id, str(exc)))
            continue
        if told != info:
            problem = f"the run index says {_line(info)}, and its events say {_line(told)}"
            findings.append(await _reindexed(log, session_id, run_id, problem, told, repair))
    return findings


def _told(events: Sequence[Event]) -> RunInfo | None:
    """The run's line of the index, as its events make it (the fold both logs index by)."""
    info: RunInfo | None = None
    for event in events:
        info = index_update(info, event) or info
    return info


async def _reindexed(
    log: PostgresLog,
    session_id: str,
    run_id: str,
    problem: str,
    told: RunInfo | None,
    repair: bool,
) -> RowFinding:
    if repair:
        await log.reindex(run_id, told)
    return RowFinding(session_id, run_id, problem, of_the_index=True, repaired=repair)


def _line(info: RunInfo | None) -> str:
    if info is None:
        return "nothing"
    stop = info.stop_reason.value if info.stop_reason is not None else "unfinished"
    return f"{info.goal!r} ({info.model}, started {info.started_at:%Y-%m-%d %H:%M:%S}, {stop})"
