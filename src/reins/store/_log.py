"""The run index a log keeps, and an in-memory log (the protocol is `reins.core`'s)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..core._errors import RunNotFound, SessionBusy, StoreError
from ..core._events import Event, RunFinished, RunResumed, RunStarted
from ..core._log import RunInfo


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
    or several do."""
    if prefix == "last" and runs:
        return max(runs, key=lambda r: r.started_at)
    matches = [r for r in runs if r.run_id.startswith(prefix)]
    if not prefix or not matches:
        raise RunNotFound(f"no run matches {prefix!r}; `reins sessions` lists the runs")
    if len(matches) > 1 and not any(r.run_id == prefix for r in matches):
        raise RunNotFound(f"{prefix!r} matches {len(matches)} runs; give more of the id")
    return next((r for r in matches if r.run_id == prefix), matches[0])


def find_session(runs: Sequence[RunInfo], prefix: str, more: Iterable[str] = ()) -> str:
    """The id of the session that starts with `prefix` (`last`: the latest run's), among the
    sessions of `runs` and the ids `more`; a clear error if none or several do."""
    if prefix == "last" and runs:
        return max(runs, key=lambda r: r.started_at).session_id
    known = {r.session_id for r in runs} | set(more)
    sessions = {s for s in known if s.startswith(prefix)}
    if not prefix or not sessions:
        raise RunNotFound(f"no session matches {prefix!r}; `reins sessions` lists them")
    if len(sessions) > 1 and prefix not in sessions:
        raise RunNotFound(f"{prefix!r} matches {len(sessions)} sessions; give more of the id")
    return prefix if prefix in sessions else sessions.pop()


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
