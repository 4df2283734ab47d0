"""A run's way back: what it changed (`diff`), and its files put back as they were (`undo`),
or a fork of it whose files are put back to where its history ends (`rewind`). All read the
run's `checkpoint` events and the shadow repository they point into (`reins.checkpoints`).

A step's changes run from its checkpoint (taken before its first change) to the next step's,
or to the one taken when the run stopped (`at_end`); a run that crashed has none of those, so
its end is the workspace as it is now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..checkpoints import Shadow
from ..core._errors import UsageError
from ..core._events import Checkpoint, Event, FilesRestored, RunStarted
from ..core._log import EventLog
from ..core._state import RunState
from ._fork import fork_run

SCRATCH = "now"
"""The ref a snapshot of the workspace as it is now is kept under (no run's own)."""


@dataclass(frozen=True)
class Stretch:
    """A stretch of a run's changes: the files before it, and after it (None: as they are now;
    the run left no checkpoint at its end)."""

    before: str
    after: str | None


async def run_diff(log: EventLog, run_id: str, *, step: int | None = None) -> str:
    """What run `run_id` (or its step `step`) changed in the workspace, as a unified diff
    ("" when it changed nothing)."""
    events = await log.events(run_id)
    shadow = _shadow(log, events, run_id)
    stretch = _changes_of(_checkpoints(events), step)
    if stretch is None:
        return ""
    after = stretch.after or await shadow.snapshot(SCRATCH, f"the workspace after {run_id}")
    return await shadow.diff(stretch.before, after)


async def undo_run(
    log: EventLog, run_id: str, *, to_step: int = 0, force: bool = False
) -> FilesRestored:
    """Put the files run `run_id` changed after step `to_step` back as that step left them
    (0: as they were before the run changed any), and record it in the run's log. A file
    changed since the run stopped, by someone else, is refused with the list, unless `force`."""
    session_id = await _session_of(log, run_id)
    log.claim(session_id, run_id)  # no resume of it meanwhile
    try:
        events = await log.events(run_id)
        state = RunState.fold(events)
        if state.finished is None:
            raise UsageError(
                f"run {run_id} has not stopped (it runs, or it crashed): resume it, or let it "
                "finish, before undoing it"
            )
        done = [e for e in events if isinstance(e, FilesRestored) and e.to_step <= to_step]
        if done and done[-1].seq > max((c.seq for c in _checkpoints(events)), default=0):
            raise UsageError(
                f"run {run_id} was undone already, to step {done[-1].to_step} (event "
                f"{done[-1].seq}): its files are as that step left them"
            )
        shadow = _shadow(log, events, run_id)
        restore = await _restoration(shadow, _checkpoints(events), run_id, to_step, force)
        if restore is None:
            raise UsageError(f"run {run_id} changed no files after step {to_step}: nothing to undo")
        target, paths, forced = restore
        await shadow.restore(target, paths)
        event = FilesRestored(
            session_id=session_id,
            run_id=run_id,
            seq=state.next_seq,
            snapshot=target,
            to_step=to_step,
            paths=tuple(paths),
            forced=tuple(forced),
        )
        await log.append(event)
        return event
    finally:
        log.release(session_id)


async def rewind_run(
    log: EventLog, run_id: str, *, step: int, force: bool = False
) -> tuple[str, str, FilesRestored | None]:
    """Fork run `run_id` after its step `step` (`fork_run`), and put the workspace's files
    back as that step left them: the fork's session and run ids, and what was put back (None:
    the run changed nothing after that step). Files changed since the run stopped, by someone
    else, are refused before anything is done, unless `force`."""
    events = await log.events(run_id)
    shadow = _shadow(log, events, run_id)
    restore = await _restoration(shadow, _checkpoints(events), run_id, step, force)
    session_id, fork_id = await fork_run(log, run_id, step=step)
    if restore is None:
        return session_id, fork_id, None
    target, paths, forced = restore
    await shadow.restore(target, paths)
    log.claim(session_id, fork_id)
    try:
        event = FilesRestored(
            session_id=session_id,
            run_id=fork_id,
            seq=RunState.fold(await log.events(fork_id)).next_seq,
            snapshot=target,
            to_step=step,
            paths=tuple(paths),
            forced=tuple(forced),
        )
        await log.append(event)
    finally:
        log.release(session_id)
    return session_id, fork_id, event


async def _restoration(
    shadow: Shadow, checkpoints: list[Checkpoint], run_id: str, to_step: int, force: bool
) -> tuple[str, list[str], list[str]] | None:
    """What putting the files back as step `to_step` left them takes: the commit, the paths
    to write back or remove, and those changed since by someone else (allowed by `force`)."""
    stretch = _changes_after(checkpoints, to_step)
    if stretch is None:
        return None
    after = stretch.after or await shadow.snapshot(SCRATCH, f"the workspace after {run_id}")
    paths = [c.path for c in await shadow.changes(stretch.before, after)]
    if not paths:
        return None
    since = await shadow.modified_since(after, paths) if stretch.after else []
    if since and not force:
        listed = "\n".join(f"  {p}" for p in since)
        raise UsageError(
            f"{len(since)} file(s) run {run_id} changed were changed again since it stopped, "
            f"by someone else:\n{listed}\nputting them back would lose those changes; "
            "`--force` puts them back all the same"
        )
    return stretch.before, paths, since


def _changes_of(checkpoints: list[Checkpoint], step: int | None) -> Stretch | None:
    """The stretch of the whole run's changes, or of step `step`'s; None: no change."""
    befores = [c for c in checkpoints if not c.at_end]
    if not befores:
        return None
    if step is None:
        return Stretch(befores[0].snapshot, _end(checkpoints))
    own = next((c for c in befores if c.step == step), None)
    if own is None:
        return None
    later = next((c for c in befores if c.step > step), None)
    return Stretch(own.snapshot, later.snapshot if later is not None else _end(checkpoints))


def _changes_after(checkpoints: list[Checkpoint], step: int) -> Stretch | None:
    """The stretch of the run's changes after step `step` (0: all of them); None: none."""
    first = next((c for c in checkpoints if not c.at_end and c.step > step), None)
    if first is None:
        return None
    return Stretch(first.snapshot, _end(checkpoints))


def _end(checkpoints: list[Checkpoint]) -> str | None:
    """The files as the run left them, if it recorded them when it last stopped."""
    last = checkpoints[-1]
    return last.snapshot if last.at_end else None


def _checkpoints(events: list[Event]) -> list[Checkpoint]:
    return [e for e in events if isinstance(e, Checkpoint)]


def _shadow(log: EventLog, events: list[Event], run_id: str) -> Shadow:
    """The shadow repository of the run's workspace, in `log`'s folder."""
    directory = getattr(log, "directory", None)
    if not isinstance(directory, Path):
        raise UsageError("checkpoints are kept beside a log on disk; this log has no folder")
    first = events[0] if events else None
    if not isinstance(first, RunStarted):
        raise UsageError(f"no run {run_id!r} in this log; `reins sessions` lists the runs")
    return Shadow(directory, first.config.workspace)


async def _session_of(log: EventLog, run_id: str) -> str:
    events = await log.events(run_id)
    if not events:
        raise UsageError(f"no run {run_id!r} in this log; `reins sessions` lists the runs")
    return events[0].session_id
