"""The runs a server drives, and the event streams its clients follow.

A run started here is an `AgentRun` drained by one task into a `Live` record: its events in
order (the journal's and the live text deltas), which every client streaming it reads at its
own pace. A client never holds a queue of its own, so a slow one costs no memory: it reads
further behind in the same list. Once the run ends its record goes, and its events are read
from the log, as are those of a run another process writes (a `reins run` in a terminal), which
are polled until it finishes.

A run that needs an approval or an answer ends `waiting` (its agent pauses), holding no task;
the answer resumes it. So a waiting run outlives the server: after a restart it still waits,
and the answer resumes it the same way.

Servers on one PostgreSQL store serve the same runs: each is run by one (the one holding its
session's lock and the run's lease), read from the log by the others, stopped or steered
through any (`_shared` sends the command to the one that runs it), and answered through any
(that one resumes it). Each server renews its leases; once a dead server's have expired, one of
the others claims each run and resumes it, and the streams that followed it go on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

from ..agent import Agent, AgentRun
from ..core._approval import Approval
from ..core._cancel import Cancel
from ..core._errors import ReinsError, RunNotFound, SessionBusy, StoreError, UsageError
from ..core._events import (
    EVENT,
    ContextCompacted,
    Event,
    RunFinished,
    RunResumed,
    RunStarted,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
)
from ..core._state import RunState
from ..core._stop import StopReason
from ..store import IndexedLog
from ._requests import ResumeRequest, RunRequest
from ._shared import Command, shared
from ._views import RunStatus, RunView, run_status, run_view
from ._webhooks import deliver

_logger = logging.getLogger(__name__)

POLL_S = 0.5
"""How often a run written by another process is read again for new events."""
LEASE_S = 30.0
"""On a shared store, seconds a server's runs stay its own past its last heartbeat (renewed
every third of it): how long the runs of a server that died wait for another to take them."""
HEARTBEAT_S = 15.0
"""Seconds of nothing after which a stream says it is alive (proxies close silent ones)."""

AgentFactory = Callable[[RunRequest], Agent]
"""Builds the agent of a run the server starts or resumes (its model, tools, permissions,
log): the front end that serves decides. Its approvals and questions should pause
(`approval="pause"`, `ask="pause"`): the server answers them by resuming the run."""


class Conflict(ReinsError):
    """What was asked does not fit the run's state now (a finished run's resume, a
    compaction with nothing to compact): a 409."""


@dataclass(eq=False)
class Live:
    """A run going on in this server: what it has yielded so far, and how to stop it."""

    run: AgentRun
    cancel: Cancel
    run_id: str
    session_id: str
    events: list[StreamEvent] = field(default_factory=list[StreamEvent])
    finished: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    drain: asyncio.Task[None] | None = None
    """The task reading the run."""
    handed_over: bool = False
    """Stopped where it was by a server closing on a shared store, for another to go on with."""

    def add(self, event: StreamEvent) -> None:
        self.events.append(event)
        self._wake()

    def end(self) -> None:
        self.finished = True
        self.ended.set()
        self._wake()

    def _wake(self) -> None:
        # every waiting reader wakes; later readers wait on a fresh event
        self.changed.set()
        self.changed = asyncio.Event()

    @property
    def state(self) -> RunState:
        return self.run.state


class Runs:
    """The runs of one store (`log`) as a server sees them: those it starts and resumes with
    the agents `make_agent` builds, and any other, read from the log. `signing_key` signs the
    webhooks runs ask for."""

    def __init__(
        self,
        log: IndexedLog,
        make_agent: AgentFactory,
        *,
        signing_key: bytes = b"",
        lease: float = LEASE_S,
    ) -> None:
        self.log = log
        self.make_agent = make_agent
        self.signing_key = signing_key
        self.live: dict[str, Live] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answering: dict[str, asyncio.Lock] = {}
        """One answer at a time resumes a run (two approvals of one step, sent together)."""
        self._webhooks: dict[str, str] = {}
        self._going_on: dict[str, asyncio.Event] = {}
        """Set when the run (by id) goes on here: what a waiting run's streams wait for."""
        self._goings = 0
        """How many times a run went on here: a stream that waits looks again if it grew."""
        self._closing = False
        self._shared = shared(log, lease)
        """On a PostgreSQL store, how commands reach runs another server runs, and this one's,
        and the leases on the runs this one runs."""
        self._keeping: asyncio.Task[None] | None = None

    # -- starting and resuming

    async def start(self, request: RunRequest) -> RunStarted:
        """Start a run (a new session, or the next turn of `request.session_id`); it goes on
        in a task of its own. Returns its first event."""
        session_id = request.session_id
        if session_id is not None:
            self._idle(session_id)
            if not await self.log.runs(session_id):
                raise RunNotFound(f"no session {session_id} in this store")
        await self.open()
        agent = self.make_agent(request)
        cancel = Cancel()
        run = agent.iter(request.goal, session_id=session_id, cancel=cancel)
        first = await anext(run)
        if not isinstance(first, RunStarted):  # the loop's contract: a run begins so
            raise UsageError(f"a run began with {type(first).__name__}, not run_started")
        if request.webhook is not None:
            self._webhooks[first.run_id] = str(request.webhook)
        self._lease(first)
        self._go_on(run, cancel, first)
        return first

    async def resume(
        self,
        run_id: str,
        request: ResumeRequest | None = None,
        *,
        approvals: Mapping[str, Approval | bool] | None = None,
        answers: Mapping[str, str | None] | None = None,
    ) -> RunResumed:
        """Go on with a run that stopped (a cap, a cancel, a crash, a wait for an answer),
        from its log, with new caps and answers; 409 if it goes on, or ended its turn."""
        request = request or ResumeRequest()
        state = await self.state(run_id)
        self._idle(state.session_id)
        if self._written(state.session_id):
            raise SessionBusy(f"session {state.session_id} is written by another process now")
        if state.finished is not None and state.finished.stop_reason is StopReason.END_TURN:
            raise Conflict(f"run {run_id} ended its turn; start the session's next turn instead")
        await self.open()
        agent = self.make_agent(_request_of(state))
        cancel = Cancel()
        run = agent.resume_iter(
            run_id,
            max_steps=request.max_steps,
            time_budget=request.time_budget,
            token_budget=request.token_budget,
            cost_budget=request.cost_budget,
            approvals={**request.approvals, **(approvals or {})},
            answers={**request.answers, **(answers or {})},
            cancel=cancel,
        )
        first = await anext(run)
        if not isinstance(first, RunResumed):
            raise UsageError(f"a resume began with {type(first).__name__}, not run_resumed")
        self._lease(first)
        self._go_on(run, cancel, first)
        return first

    async def open(self) -> None:
        """On a shared store: take commands sent from other servers (from before a run of this
        one begins, so a command sent once a client knows the run is not missed), and keep
        this server's leases, taking over the runs of servers gone (once is enough)."""
        if self._shared is None or self._closing:
            return
        await self._shared.listen(self._apply)
        if self._keeping is None:
            self._keeping = asyncio.create_task(self._keep_leases(), name="reins-leases")

    async def _keep_leases(self) -> None:
        """The heartbeat: renew this server's leases, and resume the runs whose server has
        let its leases expire (died, or lost the store), every third of a lease."""
        assert self._shared is not None
        leases = self._shared.leases
        while not self._closing:
            try:
                await leases.renew()
                for run_id in await leases.claim_orphans():
                    await self._take_over(run_id)
            except StoreError as exc:  # the store is down: look again at the next beat
                _logger.warning("%s", exc)
            except Exception:  # a beat missed must not stop the next: its runs would be taken
                _logger.exception("keeping this server's leases failed")
            await asyncio.sleep(leases.seconds / 3)

    async def _take_over(self, run_id: str) -> None:
        """Resume a run whose lease was claimed here, unless it had ended (its server died
        before giving the lease up) or someone else took it on first."""
        assert self._shared is not None
        try:
            if (await self.state(run_id)).finished is None:
                await self.resume(run_id)
                _logger.info("took over run %s from a server gone", run_id)
                return
        except ReinsError as exc:
            _logger.warning("run %s of a server gone is not resumed here: %s", run_id, exc)
        self._shared.leases.drop(run_id)

    def _lease(self, first: Event) -> None:
        """On a shared store, hold the lease of the run that goes on here now."""
        if self._shared is not None:
            self._shared.leases.take(first.run_id, first.session_id)

    async def _leased(self, run_id: str) -> bool:
        """Whether a server holds the run's lease: one goes on with it (or will, once the
        lease of a server gone expires)."""
        if self._shared is None:
            return False
        try:
            return await self._shared.leases.leased(run_id)
        except StoreError as exc:
            _logger.warning("%s", exc)
            return False

    def _go_on(self, run: AgentRun, cancel: Cancel, first: RunStarted | RunResumed) -> None:
        live = self._track(run, cancel, first)
        task = asyncio.create_task(self._drain(live), name=f"reins-run-{first.run_id}")
        live.drain = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _track(self, run: AgentRun, cancel: Cancel, first: Event) -> Live:
        live = Live(run=run, cancel=cancel, run_id=first.run_id, session_id=first.session_id)
        live.add(first)
        self.live[first.run_id] = live
        self._goings += 1
        if (going_on := self._going_on.pop(first.run_id, None)) is not None:
            going_on.set()
        return live

    async def _drain(self, live: Live) -> None:
        """Read the run to its end into its record. A steer the run ended before telling
        begins the session's next turn in the same stream: a new run, with a record of its own."""
        try:
            async for event in live.run:
                if isinstance(event, RunStarted) and event.run_id != live.run_id:
                    await self._end(live)
                    if hook := self._webhooks.get(live.run_id):
                        self._webhooks[event.run_id] = hook
                    self._lease(event)
                    live = self._track(live.run, live.cancel, event)
                    live.drain = asyncio.current_task()
                    continue
                live.add(event)
        except Exception:  # the log keeps what was recorded: the run shows as interrupted
            _logger.exception("run %s failed", live.run_id)
        finally:
            await self._end(live)

    async def _end(self, live: Live) -> None:
        live.end()
        if self.live.get(live.run_id) is live:
            del self.live[live.run_id]
        if self._shared is not None:  # handed over: another server is to go on with it now
            if not live.handed_over:
                self._shared.leases.drop(live.run_id)  # ended, or waits for an answer
            else:
                try:
                    await self._shared.leases.hand_over(live.run_id)
                except StoreError as exc:
                    _logger.warning("%s", exc)
        if (url := self._webhooks.get(live.run_id)) is not None:
            view = await self.view(live.run_id)
            body = view.model_dump_json().encode()
            task = asyncio.create_task(deliver(url, body, self.signing_key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    # -- what a run waits on

    async def approve(self, run_id: str, call_id: str, approval: Approval) -> None:
        """Answer an approval the run waits on: it goes on (resumed) with the answer."""
        await self._answer(run_id, call_id, "an approval", approvals={call_id: approval})

    async def reply(self, run_id: str, call_id: str, text: str | None) -> None:
        """Answer the run's question (none: dismissed): it goes on with the answer."""
        await self._answer(run_id, call_id, "a question", answers={call_id: text})

    async def _answer(
        self,
        run_id: str,
        call_id: str,
        what: str,
        *,
        approvals: Mapping[str, Approval] | None = None,
        answers: Mapping[str, str | None] | None = None,
    ) -> None:
        async with self._answering.setdefault(run_id, asyncio.Lock()):
            while True:
                live = self.live.get(run_id)
                state = live.state if live is not None else await self.state(run_id)
                asked = (
                    [r.call.id for r in state.awaiting()]
                    if approvals
                    else [q.call_id for q in state.unanswered()]
                )
                if call_id not in asked:
                    raise RunNotFound(
                        f"run {run_id} waits for no answer to {what} of call {call_id}"
                    )
                if live is not None:  # it stops to wait once the step's other calls are done
                    await live.ended.wait()
                elif await self._written_now(state.session_id):  # in another server: look again
                    await asyncio.sleep(POLL_S)
                    continue
                break
            await self.resume(run_id, approvals=approvals, answers=answers)

    # -- steering, stopping, compacting

    async def stop(self, run_id: str) -> None:
        await self._command(Command(run_id, "stop"))

    async def steer(self, run_id: str, text: str) -> None:
        await self._command(Command(run_id, "steer", text))

    async def _command(self, command: Command) -> None:
        """Carry out the command on the run going on here, or send it to the server that
        runs it (on a shared store); a run going on nowhere is a SessionBusy."""
        if command.do == "steer" and not command.text.strip():
            raise UsageError("a steering instruction must say something")
        if self._apply(command):
            return
        if self._shared is not None:
            state = await self.state(command.run_id)
            if state.finished is None and self._written(state.session_id):
                await self._shared.send(command)
                return
        raise SessionBusy(f"run {command.run_id} is not going on in this server")

    def _apply(self, command: Command) -> bool:
        """Whether the run goes on here: then it is stopped or steered."""
        if (live := self.live.get(command.run_id)) is None or live.finished:
            return False
        if command.do == "stop":
            live.cancel.cancel()
        else:
            live.run.steer(command.text)
        return True

    def _idle(self, session_id: str) -> None:
        if any(live.session_id == session_id for live in self.live.values()):
            raise SessionBusy(f"session {session_id} has a run going on; wait for its end")

    async def compact(self, session_id: str) -> ContextCompacted:
        """Compact the session's context now (its next turn starts from the summary)."""
        self._idle(session_id)
        infos = await self.log.runs(session_id)
        if not infos:
            raise RunNotFound(f"no session {session_id} in this store")
        agent = self.make_agent(_request_of(await self.state(infos[-1].run_id)))
        try:
            return await agent.compact(session_id)
        except UsageError as exc:  # unfinished, or nothing to compact
            raise Conflict(str(exc)) from None

    # -- reading runs

    async def state(self, run_id: str) -> RunState:
        """The run's state: live, or folded from the log."""
        if (live := self.live.get(run_id)) is not None:
            return live.state
        return RunState.fold(await self._events(run_id))

    async def view(self, run_id: str) -> RunView:
        state = await self.state(run_id)
        return run_view(state, self.status(state))

    def status(self, state: RunState) -> RunStatus:
        reason = state.finished.stop_reason if state.finished else None
        return self.status_of(state.run_id, state.session_id, reason)

    def status_of(self, run_id: str, session_id: str, stop_reason: StopReason | None) -> RunStatus:
        live = self.live.get(run_id)
        return run_status(
            stop_reason,
            live=live.state if live is not None else None,
            written=live is None and self._written(session_id),
        )

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

    async def follow(
        self, run_id: str, after: int = 0, *, heartbeat: float = HEARTBEAT_S
    ) -> AsyncIterator[list[StreamEvent]]:
        """The run's events after the journal's `after`-th, then as they come, until the run
        ends (or, for a run of another process, stops being written), in batches: what was
        there to read at once. An empty batch after `heartbeat` seconds of nothing (a stream
        says it is alive). A run that waits for an answer is followed on when the answer
        resumes it here. A text delta comes with the seq of the event it precedes, so a
        client that resumes after seq N gets the text that led to N+1 again, and nothing
        twice that it had whole."""
        last: Event | None = None  # the last logged event passed on
        while True:
            looked = self._goings  # taken before looking, so a resume in between is seen
            if (live := self.live.get(run_id)) is not None:
                start = cast(Event, live.events[0]).seq  # a resume's buffer starts at it
                if after < start - 1:
                    earlier = [e for e in await self._events(run_id) if after < e.seq < start]
                    if earlier:
                        after, last = earlier[-1].seq, earlier[-1]
                        yield list[StreamEvent](earlier)
                batches = _from_live(live, after, heartbeat)
            else:
                batches = self._from_log(run_id, after, heartbeat)
            async for batch in batches:
                for event in reversed(batch):
                    if journaled(event):
                        after, last = event.seq, event
                        break
                yield batch
            if run_id in self.live:
                continue
            if self._closing or not await self._waits(run_id, last):
                return
            # It waits (for an answer, or for a server to take over from its own, gone): until
            # it goes on here, or another process takes it on (seen by its lock, or by its log
            # if it wrote all before a look).
            session_id = last.session_id if last else (await self.state(run_id)).session_id
            went_live = self._going_on.setdefault(run_id, asyncio.Event())
            if self._goings != looked:
                continue  # a run went on while this one was looked at: look again
            quiet = 0.0
            while not (self._closing or went_live.is_set() or await self._written_now(session_id)):
                try:
                    async with asyncio.timeout(POLL_S):
                        await went_live.wait()
                except TimeoutError:
                    if await self._after(run_id, after):
                        break  # resumed and written by another process between two looks
                    if not await self._waits(run_id, last):
                        return  # its lease was given up: nobody goes on with it
                    quiet += POLL_S
                    if quiet >= heartbeat:
                        quiet = 0.0
                        yield []

    async def _waits(self, run_id: str, last: Event | None) -> bool:
        """Whether the run, which no longer goes on here, waits: for an answer (as the last
        event passed on says; none passed on: as its state says), or, interrupted, for a
        server to take it over (a server holds its lease)."""
        if isinstance(last, RunFinished):
            return last.stop_reason is StopReason.WAITING
        if last is None and self.status(await self.state(run_id)) == "waiting":
            return True
        return await self._leased(run_id)

    async def _from_log(
        self, run_id: str, after: int, heartbeat: float
    ) -> AsyncIterator[list[StreamEvent]]:
        events = await self._events(run_id)
        session_id, last = events[0].session_id, events[-1]
        written: bool | None = None  # not looked at before the first read: read once more
        quiet = 0.0
        while True:
            new = [event for event in events if event.seq > after]
            if new:
                after = new[-1].seq
                quiet = 0.0
                yield list[StreamEvent](new)
            elif quiet >= heartbeat:
                quiet = 0.0
                yield []
            if isinstance(last, RunFinished) or written is False:
                return
            if written is not None:
                await asyncio.sleep(POLL_S)
                quiet += POLL_S
            written = await self._written_now(
                session_id
            )  # before the read: let go, the read has all
            events = await self._after(run_id, last.seq)
            last = events[-1] if events else last

    async def _after(self, run_id: str, seq: int) -> list[Event]:
        """The run's logged events past `seq` (on PostgreSQL, only those rows are read)."""
        if self._shared is not None:
            return await self._shared.events_after(run_id, seq)
        return [event for event in await self._events(run_id) if event.seq > seq]

    async def _written_now(self, session_id: str) -> bool:
        """`_written`, without holding up the event loop on a shared store (where each look
        is a round trip to the database): what a stream polling a run asks."""
        if self._shared is not None:
            return await self._shared.writing(session_id)
        return self._written(session_id)

    def _written(self, session_id: str) -> bool:
        """Whether another process writes the session now (it holds the journal's lock)."""
        return self.log.writing(session_id)

    async def close(self) -> None:
        """Stop every run going on, end the streams of waiting runs, and wait for them. Alone
        on its store, each run ends as cancelled, in its log; on a shared store each is stopped
        where it is and handed over (its lease expires now): another server, or this one
        started again, resumes it, as after a crash but at once."""
        self._closing = True
        if self._keeping is not None:
            self._keeping.cancel()
            await asyncio.gather(self._keeping, return_exceptions=True)
        for going_on in self._going_on.values():
            going_on.set()
        for live in list(self.live.values()):
            if self._shared is None:
                live.cancel.cancel()
            else:
                live.handed_over = True
                assert live.drain is not None  # set as its task was made
                live.drain.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._shared is not None:
            await self._shared.leases.flush()
            await self._shared.close()


async def _from_live(live: Live, after: int, heartbeat: float) -> AsyncIterator[list[StreamEvent]]:
    index = 0
    passed = 0  # the seq of the last journal event read: a subagent's events come after it
    while True:
        changed = live.changed  # taken before reading, so an append in between is not missed
        batch: list[StreamEvent] = []
        while index < len(live.events):
            event = live.events[index]
            index += 1
            if isinstance(event, SubagentEvent):
                if passed >= after:
                    batch.append(event)
                continue
            if journaled(event):
                passed = event.seq
            if event.seq > after:
                batch.append(event)
        if batch:
            yield batch
        if live.finished:
            return
        try:
            async with asyncio.timeout(heartbeat):
                await changed.wait()
        except TimeoutError:
            yield []


def _request_of(state: RunState) -> RunRequest:
    """The request a logged run stands for, to build the agent that resumes or compacts it
    (not checked again: its goal may be longer than a client may send)."""
    config = state.config
    return RunRequest.model_construct(
        goal=state.goal,
        session_id=state.session_id,
        model=config.model,
        workspace=config.workspace,
        mode=config.mode,
        max_steps=None,
        time_budget=None,
        webhook=None,
    )


def journaled(event: StreamEvent) -> TypeGuard[Event]:
    """Whether the event is in the run's log (and so has an id a client can resume after):
    not a text or thinking delta, nor a subagent's event (its own run logs it)."""
    return not isinstance(event, TextDelta | ThinkingDelta | SubagentEvent)


def event_json(event: StreamEvent) -> str:
    """An event as a client gets it: its journal JSON; a subagent's as
    `{"subagent": [call ids], "event": {...}}`."""
    if isinstance(event, SubagentEvent):
        inner = EVENT.dump_json(event.event).decode()
        return f'{{"subagent": {json.dumps(list(event.path))}, "event": {inner}}}'
    return EVENT.dump_json(event).decode()
