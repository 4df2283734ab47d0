"""The run index a log keeps, and an in-memory log (the protocol is `reins.core`'s)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

from ..core._errors import RunNotFound, SessionBusy, StoreError
from ..core._events import Event, RunFinished, RunResumed, RunStarted
from ..core._ids import shortest_prefixes
from ..core._log import EventLog, RunInfo


class IndexedLog(EventLog, Protocol):
    """A log the front ends open from `--store` (`SQLiteLog`, `PostgresLog`): the protocol,
    and what the commands ask of its index beside it."""

    @property
    def where(self) -> str:
        """The log, named for a message: `the event log at DIR`, `the PostgreSQL store at
        HOST:PORT/DATABASE` (never a password)."""
        ...

    def writing(self, session_id: str) -> bool:
        """True if some process (this one included) is writing the session now."""
        ...

    def unverified(self, session_id: str) -> str | None:
        """Why the session is not known to be the user's (read, never continued); None if
        it is."""
        ...

    async def remove(self, session_id: str) -> list[str]:
        """Delete the session for good (`SessionBusy` while it is written); its runs' ids."""
        ...


def busy_here(session_id: str, others: set[str]) -> SessionBusy:
    """A turn of a session that has one going on in this process (`others`: its runs)."""
    return SessionBusy(
        f"session {session_id} has a run going on in this process"
        + (f" ({min(others)})" if others else "")
        + "; a session takes one turn at a time: wait for it, or start a new session"
    )


def index_update(info: RunInfo | None, event: Event) -> RunInfo | None:
    """The run index line after `event`, or None if the event does not change it."""
    match event:
        case RunStarted():
            return RunInfo(
                run_id=event.run_id,
                session_id=event.session_id,
                goal=event.goal,
                model=event.config.model,
                started_at=event.ts,
            )
        case RunFinished() if info is not None:
            return replace(info, stop_reason=event.stop_reason)
        case RunResumed() if info is not None:
            return replace(info, stop_reason=None)
        case _:
            return None


def find_run(runs: Sequence[RunInfo], prefix: str) -> RunInfo:
    """The run whose id starts with `prefix` (`last`: the latest run); a clear error if none
    or several do, naming them."""
    if prefix == "last" and runs:
        return max(runs, key=lambda r: r.started_at)
    matches = [r for r in runs if r.run_id.startswith(prefix)]
    exact = [r for r in matches if r.run_id == prefix]
    if (prefix and len(matches) == 1) or exact:
        return (exact or matches)[0]
    if prefix and not matches and (sessions := _sessions_of(runs, prefix)):
        latest = max(sessions, key=lambda r: r.started_at)
        raise RunNotFound(
            f"{prefix!r} is a session, and this command takes a run: the session's latest "
            f"run is {_shown(runs, latest.run_id)}"
        )
    if not prefix or not matches:
        raise RunNotFound(f"no run matches {prefix!r}; `reins sessions` lists the runs")
    shown = shown_ids(runs)
    listed = [f"{shown[r.run_id]} ({_goal(r)})" for r in matches]
    raise RunNotFound(
        f"{prefix!r} matches {len(matches)} runs: {_some(listed)}; give more of the id"
    )


def find_session(runs: Sequence[RunInfo], prefix: str, more: Iterable[str] = ()) -> str:
    """The id of the session that starts with `prefix` (`last`: the latest run's), among the
    sessions of `runs` and the ids `more`; a clear error if none or several do, naming them."""
    if prefix == "last" and runs:
        return max(runs, key=lambda r: r.started_at).session_id
    known = {r.session_id for r in runs} | set(more)
    sessions = sorted(s for s in known if s.startswith(prefix))
    if prefix in sessions or (prefix and len(sessions) == 1):
        return prefix if prefix in sessions else sessions[0]
    if prefix and not sessions and (run := _run_of(runs, prefix)) is not None:
        raise RunNotFound(
            f"{prefix!r} is a run, and this command takes a session: the run's session is "
            f"{_shown(runs, run.session_id, more)}"
        )
    if not prefix or not sessions:
        raise RunNotFound(f"no session matches {prefix!r}; `reins sessions` lists them")
    shown = shown_ids(runs, more)
    listed = [shown[s] for s in sessions]
    raise RunNotFound(
        f"{prefix!r} matches {len(sessions)} sessions: {_some(listed)}; give more of the id"
    )


def shown_ids(runs: Iterable[RunInfo], more: Iterable[str] = ()) -> dict[str, str]:
    """The shortest unique prefix of each run's and session's id, among all of them."""
    every = [i for r in runs for i in (r.run_id, r.session_id)]
    return shortest_prefixes([*every, *more])


def _shown(runs: Sequence[RunInfo], id_: str, more: Iterable[str] = ()) -> str:
    return shown_ids(runs, [*more, id_])[id_]


def _sessions_of(runs: Sequence[RunInfo], prefix: str) -> list[RunInfo]:
    return [r for r in runs if r.session_id.startswith(prefix)]


def _run_of(runs: Sequence[RunInfo], prefix: str) -> RunInfo | None:
    matches = [r for r in runs if r.run_id.startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def _goal(run: RunInfo) -> str:
    first = run.goal.splitlines()[0] if run.goal else ""
    return f"{run.started_at:%m-%d %H:%M}, {first[:40]}{'…' if len(first) > 40 else ''}"


def _some(listed: list[str], most: int = 10) -> str:
    rest = len(listed) - most
    return ", ".join(listed[:most]) + (f" and {rest} more" if rest > 0 else "")


class MemoryLog:
    """An event log that keeps everything in memory: the default of the Python API."""

    def __init__(self) -> None:
        self._events: dict[str, list[Event]] = {}
        self._index: dict[str, RunInfo] = {}
        self._claimed: set[str] = set()
        self._stopped: set[str] = set()
        """Unfinished runs whose loop ended here: not going on."""

    async def append(self, event: Event, *, commit: bool = True) -> None:
        log = self._events.setdefault(event.run_id, [])
        expected = log[-1].seq + 1 if log else 1
        if event.seq != expected:
            raise StoreError(f"run {event.run_id}: event seq {event.seq}, expected {expected}")
        log.append(event)
        if (info := index_update(self._index.get(event.run_id), event)) is not None:
            self._index[event.run_id] = info
            self._claimed.discard(event.session_id)
            self._stopped.discard(event.run_id)

    def claim(self, session_id: str, run_id: str | None = None) -> None:
        going = [
            r.run_id
            for r in self._index.values()
            if r.session_id == session_id
            and r.stop_reason is None
            and r.run_id not in (run_id, *self._stopped)
        ]
        if session_id in self._claimed or going:
            raise SessionBusy(
                f"session {session_id} has a run going on"
                + (f" ({going[0]})" if going else "")
                + "; a session takes one turn at a time: wait for it, or start a new session"
            )
        self._claimed.add(session_id)

    def release(self, session_id: str, run_id: str | None = None) -> None:
        self._claimed.discard(session_id)
        if run_id is not None:
            self._stopped.add(run_id)

    async def commit(self) -> None:
        pass

    async def events(self, run_id: str) -> list[Event]:
        if run_id not in self._events:
            raise RunNotFound(f"no run {run_id!r} in this log")
        return list(self._events[run_id])

    async def runs(self, session_id: str | None = None) -> list[RunInfo]:
        return [r for r in self._index.values() if session_id in (None, r.session_id)]

    async def close(self) -> None:
        pass
