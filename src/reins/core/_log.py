"""The event log protocol the loop appends to (`reins.store` has the logs), and a line of the
run index a log keeps."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ._events import Event
from ._stop import StopReason


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """One line of the run index; a cache of what the run's events say."""

    run_id: str
    session_id: str
    goal: str
    model: str
    started_at: datetime
    stop_reason: StopReason | None = None
    """None while the run has not finished (running, or its process died)."""


class EventLog(Protocol):
    """Where runs are recorded. `append` with `commit=True` returns once the event is durable;
    with `commit=False` the event joins a batch that the next commit makes durable. Appends
    come in seq order per run, and a log that suspends inside `append` must keep that order."""

    async def append(self, event: Event, *, commit: bool = True) -> None:
        """Record `event`, the next of its run (its `seq` one past the last)."""
        ...

    async def commit(self) -> None:
        """Make the batch of uncommitted events durable."""
        ...

    def claim(self, session_id: str, run_id: str | None = None) -> None:
        """Reserve a session for one new turn, or for resuming its run `run_id`, before its
        history is read; raises SessionBusy while another run of it goes on. The reservation
        passes to the run that the next `run_started`/`run_resumed` of the session starts.
        A log that signs its events refuses a session whose record it cannot verify as the
        user's (`LogCorrupted`, `LogUnverified`): what it allowed must not carry on."""

    def release(self, session_id: str, run_id: str | None = None) -> None:
        """Give up a reservation whose run did not start; with `run_id`, the run stopped here
        without finishing (its loop raised or was closed): the session is free again."""

    async def events(self, run_id: str) -> list[Event]:
        """Every event of the run, in order; `RunState.fold` makes its state of them."""
        ...

    async def runs(self, session_id: str | None = None) -> list[RunInfo]:
        """The runs recorded (of one session), oldest first."""
        ...

    async def close(self) -> None:
        """Commit what is pending and let go of files and connections."""
        ...
