"""The runs a server drives, and the event streams its clients follow.

A run started here is an `AgentRun` drained by one task into a `Live` record: its events in
order (the journal's and the live text deltas), which every client streaming it reads at its
own pace. A client never holds a queue of its own, so a slow one costs no memory: it reads
further behind in the same list. Once the run ends its record goes, and its events are read
from the log, as are those of a run another process writes (a `reins run` in a terminal), which
are polled until it finishes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from ..agent import Agent, AgentRun
from ..core._approval import Approval, ApprovalRequest
from ..core._cancel import Cancel
from ..core._errors import RunNotFound, SessionBusy, UsageError
from ..core._events import (
    Event,
    RunFinished,
    RunStarted,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
)
from ..core._questions import QuestionRequest
from ..core._state import RunState
from ..store import SQLiteLog

_logger = logging.getLogger(__name__)

POLL_S = 0.5
"""How often a run written by another process is read again for new events."""


@dataclass(eq=False)
class Live:
    """A run going on in this server: what it has yielded so far, and how to stop it."""

    run: AgentRun
    cancel: Cancel
    first: RunStarted
    events: list[StreamEvent] = field(default_factory=list[StreamEvent])
    finished: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, event: StreamEvent) -> None:
        self.events.append(event)
        self._wake()

    def end(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        # every waiting reader wakes; later readers wait on a fresh event
        self.changed.set()
        self.changed = asyncio.Event()

    @property
    def state(self) -> RunState:
        return self.run.state


class Runs:
    """The runs of one store (`log`) as a server sees them: those it started and drives,
    and any other, read from the log."""

    def __init__(self, log: SQLiteLog) -> None:
        self.log = log
        self.live: dict[str, Live] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._asked: dict[tuple[str, str, str], asyncio.Future[Any]] = {}
        """Approvals and questions of the runs going on, waiting for a client's answer, by
        (what is asked, run id, call id)."""

    async def start(self, agent: Agent, goal: str, session_id: str | None = None) -> RunStarted:
        """Start a run of `agent` on `goal` (a new session, or the next turn of
        `session_id`); it goes on in a task of its own. Returns its first event."""
        if session_id is not None:
            if any(live.first.session_id == session_id for live in self.live.values()):
                raise SessionBusy(f"session {session_id} has a run going on; wait for its end")
            if not await self.log.runs(session_id):
                raise RunNotFound(f"no session {session_id} in this store")
        cancel = Cancel()
        run = agent.iter(goal, session_id=session_id, cancel=cancel)
        first = await anext(run)
        if not isinstance(first, RunStarted):  # the loop's contract: a run begins so
            raise UsageError(f"a run began with {type(first).__name__}, not run_started")
        live = self._track(run, cancel, first)
        task = asyncio.create_task(self._drain(live), name=f"reins-run-{first.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return first

    def _track(self, run: AgentRun, cancel: Cancel, first: RunStarted) -> Live:
        live = Live(run=run, cancel=cancel, first=first)
        live.add(first)
        self.live[first.run_id] = live
        return live

    async def _drain(self, live: Live) -> None:
        """Read the run to its end into its record. A steer the run ended before telling
        begins the session's next turn in the same stream: a new run, with a record of its own."""
        try:
            async for event in live.run:
                if isinstance(event, RunStarted) and event.run_id != live.first.run_id:
                    self._end(live)
                    live = self._track(live.run, live.cancel, event)
                    continue
                live.add(event)
        except Exception:  # the log keeps what was recorded: the run shows as interrupted
            _logger.exception("run %s failed", live.first.run_id)
        finally:
            self._end(live)

    def _end(self, live: Live) -> None:
        live.end()
        if self.live.get(live.first.run_id) is live:
            del self.live[live.first.run_id]

    async def state(self, run_id: str) -> RunState:
        """The run's state: live, or folded from the log."""
        if (live := self.live.get(run_id)) is not None:
            return live.state
        return RunState.fold(await self._events(run_id))

    async def _events(self, run_id: str) -> list[Event]:
        """The run's logged events; an unknown run is one error that names no path of the
        server's (the log's own would)."""
        try:
            events = await self.log.events(run_id)
        except RunNotFound:
            events = []
        if not events:
            raise RunNotFound(f"no run {run_id} in this store")
        return events

    async def approval(self, request: ApprovalRequest) -> Approval:
        """An agent's `approval` handler: the request waits for `answer_approval` (a stop
        cancels the wait; the run ends cancelled, resumable)."""
        return cast(Approval, await self._wait(("an approval", request.run_id, request.call.id)))

    async def question(self, request: QuestionRequest) -> str | None:
        """An agent's `Ask(answer=...)` handler: the question waits for `answer_question`
        (or the `Ask`'s timeout, then the model goes on with its default)."""
        return cast(str | None, await self._wait(("a question", request.run_id, request.call_id)))

    async def _wait(self, key: tuple[str, str, str]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asked[key] = future
        try:
            return await future
        finally:
            self._asked.pop(key, None)

    def answer_approval(self, run_id: str, call_id: str, approve: bool, always: bool) -> None:
        self._answer(run_id, call_id, Approval(approve, always=always), "an approval")

    def answer_question(self, run_id: str, call_id: str, text: str | None) -> None:
        self._answer(run_id, call_id, text, "a question")

    def _answer(self, run_id: str, call_id: str, answer: object, what: str) -> None:
        self._running(run_id)
        future = self._asked.get((what, run_id, call_id))
        if future is None or future.done():
            raise RunNotFound(f"run {run_id} waits for no answer to {what} of call {call_id}")
        future.set_result(answer)

    def stop(self, run_id: str) -> None:
        self._running(run_id).cancel.cancel()

    def steer(self, run_id: str, text: str) -> None:
        self._running(run_id).run.steer(text)

    def _running(self, run_id: str) -> Live:
        if (live := self.live.get(run_id)) is None or live.finished:
            raise SessionBusy(f"run {run_id} is not going on in this server")
        return live

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[StreamEvent]:
        """The run's events after the journal's `after`-th, then each as it comes, until the
        run ends (or, for a run of another process, stops being written). A text delta comes
        with the seq of the event it precedes, so a client that resumes after seq N gets the
        text that led to N+1 again, and nothing twice that it had whole."""
        if (live := self.live.get(run_id)) is not None:
            async for event in _from_live(live, after):
                yield event
            return
        async for event in self._from_log(run_id, after):
            yield event

    async def _from_log(self, run_id: str, after: int) -> AsyncIterator[StreamEvent]:
        events = await self._events(run_id)
        session_id = events[0].session_id
        while True:
            for event in events:
                if event.seq > after:
                    after = event.seq
                    yield event
            if isinstance(events[-1], RunFinished) or not self._written(session_id):
                return
            await asyncio.sleep(POLL_S)
            events = await self.log.events(run_id)

    def _written(self, session_id: str) -> bool:
        """Whether another process writes the session now (it holds the journal's lock)."""
        return self.log.journals.writing(session_id)

    async def close(self) -> None:
        """Stop every run going on (each ends as cancelled, in its log) and wait for them."""
        for live in list(self.live.values()):
            live.cancel.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


async def _from_live(live: Live, after: int) -> AsyncIterator[StreamEvent]:
    index = 0
    passed = 0  # the seq of the last journal event read: a subagent's events come after it
    while True:
        changed = live.changed  # taken before reading, so an append in between is not missed
        while index < len(live.events):
            event = live.events[index]
            index += 1
            if isinstance(event, SubagentEvent):
                if passed >= after:
                    yield event
                continue
            if journaled(event):
                passed = event.seq
            if event.seq > after:
                yield event
        if live.finished:
            return
        await changed.wait()


def journaled(event: StreamEvent) -> bool:
    """Whether the event is in the run's log (and so has an id a client can resume after):
    not a text or thinking delta, nor a subagent's event (its own run logs it)."""
    return not isinstance(event, TextDelta | ThinkingDelta | SubagentEvent)
