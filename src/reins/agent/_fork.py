"""Forks: a new session whose run is a copy of another run's events up to a point (a seq, or
the end of a step), then a `forked_from` event; the original is untouched. The fork's state is
the original's at that point (the same fold), so `resume` goes on from there and a new turn of
its session starts from that history."""

from __future__ import annotations

from ..core._errors import UsageError
from ..core._events import Event, ForkedFrom, ModelRequested, RunStarted, TextDelta
from ..core._ids import new_run_id, new_session_id
from ..core._log import EventLog


async def fork_run(
    log: EventLog, run_id: str, *, at_seq: int | None = None, step: int | None = None
) -> tuple[str, str]:
    """Fork `run_id` after its event `at_seq`, or after its step `step` (before step + 1
    began), or at its end; the fork's session and run ids."""
    events: list[Event] = [e for e in await log.events(run_id) if not isinstance(e, TextDelta)]
    first = events[0] if events else None
    if not isinstance(first, RunStarted):
        raise UsageError(f"run {run_id} has no run_started to fork from")
    kept = _prefix(events, run_id, at_seq, step)
    session_id, fork_id = new_session_id(), new_run_id()
    ids = {"session_id": session_id, "run_id": fork_id}
    log.claim(session_id)
    try:
        await log.append(first.model_copy(update=ids), commit=False)
        origin = ForkedFrom(
            session_id=session_id,
            run_id=fork_id,
            seq=2,
            from_run_id=run_id,
            from_session_id=first.session_id,
            from_seq=kept[-1].seq,
        )
        await log.append(origin, commit=False)
        for event in kept[1:]:
            await log.append(event.model_copy(update={**ids, "seq": event.seq + 1}), commit=False)
        await log.commit()
    finally:
        log.release(session_id, fork_id)
    return session_id, fork_id


def _prefix(events: list[Event], run_id: str, at_seq: int | None, step: int | None) -> list[Event]:
    if at_seq is not None and step is not None:
        raise UsageError("fork at a seq or after a step, not both")
    if at_seq is not None:
        if not 1 <= at_seq <= events[-1].seq:
            raise UsageError(f"run {run_id} has events 1 to {events[-1].seq}; no seq {at_seq}")
        return [e for e in events if e.seq <= at_seq]
    if step is not None:
        starts = [e.seq for e in events if isinstance(e, ModelRequested) and e.step == step + 1]
        steps = max((e.step for e in events if isinstance(e, ModelRequested)), default=0)
        if not 1 <= step <= steps:
            raise UsageError(f"run {run_id} has steps 1 to {steps}; no step {step}")
        if not starts:  # the last step: the whole run
            return events
        return [e for e in events if e.seq < starts[0]]
    return events
