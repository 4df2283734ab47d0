"""A run as the Python API hands it out: `AgentRun`, iterated for its events (and steered
while it runs), and the `RunResult` it ends with."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, cast

from typing_extensions import TypeVar

from ..core._errors import ToolError, UsageError
from ..core._events import ApprovalRequested, Event, QuestionAsked, StreamEvent
from ..core._loop import RunLoop
from ..core._messages import Message, Usage
from ..core._state import RunState
from ..core._stop import StopReason
from ..core._unicode import escape_text
from ._output import Output

OutputT = TypeVar("OutputT", default=str)


@dataclass(frozen=True, kw_only=True)
class RunResult(Generic[OutputT]):
    """How a run ended: its answer (text, and typed as `output`), why it stopped, what it
    cost, and its whole conversation; a paused run also says what it waits on."""

    run_id: str
    session_id: str
    stop_reason: StopReason
    final_answer: str | None
    detail: str
    messages: list[Message]
    usage: Usage
    cost: float
    """US dollars, for the calls whose price the model catalog knows."""
    steps: int
    partial: bool = False
    """`final_answer` summarizes the partial work done before a cap (`at_cap="summarize"`)."""
    awaiting: list[ApprovalRequested] = field(default_factory=list[ApprovalRequested])
    """The approval requests a `waiting` run is paused on; answer them with
    `Agent.resume(run_id, approvals={call_id: True, ...})`."""
    output: OutputT | None = None
    """The final answer as the run's `output_type` (`final_answer` is its JSON text); without
    one, the answer's text (`final_answer`). None when the run did not end with a valid answer
    (a cap, an error, a partial summary)."""
    questions: list[QuestionAsked] = field(default_factory=list[QuestionAsked])
    """The question a `waiting` run is paused on; answer it with
    `Agent.resume(run_id, answers={call_id: "..."})`."""

    @classmethod
    def of(cls, state: RunState, output: Output | None = None) -> RunResult[Any]:
        finished = state.finished
        if finished is None:
            raise UsageError(f"run {state.run_id} has not finished; resume it first")
        value: Any = None
        answer = None if finished.partial else finished.final_answer
        if answer is not None and output is None:
            value = answer
        elif answer is not None and output is not None:
            with contextlib.suppress(ToolError):  # a run that ended otherwise has none
                value = output.parse(answer)
        return cls(
            run_id=state.run_id,
            session_id=state.session_id,
            stop_reason=finished.stop_reason,
            final_answer=finished.final_answer,
            detail=finished.detail,
            messages=state.transcript(whole=True),
            usage=state.usage,
            cost=state.cost,
            steps=state.step,
            partial=finished.partial,
            awaiting=state.awaiting(),
            questions=state.unanswered(),
            output=value,
        )


Begin = Callable[[], Awaitable[tuple[list[Event], RunLoop]]]


class AgentRun(Generic[OutputT]):
    """A run in progress: iterate it for its events, then ask for its `result()`.

    Nothing happens until the first event is asked for; that first step records the run's
    start (or resumption) and sets up its loop. `steer` and `follow_up` may be called from any
    task or thread while it runs."""

    def __init__(
        self,
        begin: Begin,
        turn: Callable[[str, str], Begin] | None = None,
        running: dict[str, AgentRun[Any]] | None = None,
        output: Output | None = None,
    ) -> None:
        self._begin = begin
        self._turn = turn
        """Begins a next turn (goal, session id), for follow-ups."""
        self._running = running
        """The agent's runs in progress by session id (`Agent.steer`): this one is in it
        from its first event until it ends."""
        self._output = output
        """The agent's output type: `result().output` is the answer as one."""
        self._loop: RunLoop | None = None
        self._first: list[Event] = []
        self._events: AsyncGenerator[StreamEvent] | None = None
        self._steering: deque[str] = deque()
        self._follow_ups: deque[str] = deque()

    def steer(self, text: str) -> None:
        """Tell the model `text` before its next round, as `[STEER FROM USER — act on this
        now] text` (a `steered` event). Safe from any thread or task. An instruction the run
        ended before telling becomes a follow-up."""
        if not text.strip():
            raise UsageError("a steering instruction must say something")
        self._steering.append(escape_text(text))

    def follow_up(self, text: str) -> None:
        """Once the run ends (unless cancelled), start the next turn of its session with
        `text` as the goal; iterating this object goes on into that turn, and `result()` is
        the last turn's. Safe from any thread or task."""
        if not text.strip():
            raise UsageError("a follow-up must say something")
        self._follow_ups.append(text)

    def _next_turn(self) -> bool:
        """After a run finished: begin the next turn if a follow-up (or a steering instruction
        it never told) waits for one."""
        loop = self._loop
        if self._turn is None or loop is None or (finished := loop.state.finished) is None:
            return False
        if finished.stop_reason is StopReason.CANCELLED:
            return False
        if self._steering:  # never told (the loop shares this queue): they lead the next turn
            goal = "\n\n".join(self._steering.popleft() for _ in range(len(self._steering)))
        elif self._follow_ups:
            goal = self._follow_ups.popleft()
        else:
            return False
        self._begin = self._turn(goal, loop.state.session_id)
        self._loop, self._events, self._first = None, None, []
        return True

    def __aiter__(self) -> AgentRun[OutputT]:
        return self

    async def __anext__(self) -> StreamEvent:
        while True:
            events = await self._started()
            if self._first:
                return self._first.pop(0)
            try:
                return await anext(events)
            except StopAsyncIteration:
                if not self._next_turn():
                    self._unlist()
                    raise
            except BaseException:
                self._ended()
                raise

    async def _started(self) -> AsyncGenerator[StreamEvent]:
        if self._events is None:
            self._first, self._loop = await self._begin()
            self._loop.steering = self._steering  # the same queue: steer() feeds the loop
            self._events = self._loop.events()
            if self._running is not None:
                self._running[self._loop.state.session_id] = self
        return self._events

    def _unlist(self) -> None:
        if self._running is not None and self._loop is not None:
            session_id = self._loop.state.session_id
            if self._running.get(session_id) is self:
                del self._running[session_id]

    async def aclose(self) -> None:
        """Stop the run where it is (its loop is closed; the log keeps what was recorded)."""
        if self._events is not None:
            await self._events.aclose()
            self._ended()

    def _ended(self) -> None:
        """The loop ended without finishing the run (an error, or closed): nothing goes on in
        it here any more, so its session is free for a new turn or a resume."""
        self._unlist()
        loop = self._loop
        if loop is not None and loop.state.finished is None:
            loop.log.release(loop.state.session_id, loop.state.run_id)

    @property
    def state(self) -> RunState:
        """The live state, once the first event has been yielded."""
        if self._loop is None:
            raise UsageError("the run has not started; iterate it first")
        return self._loop.state

    async def result(self) -> RunResult[OutputT]:
        """Drive the run to its end (if not done yet) and return its outcome."""
        while True:
            events = await self._started()
            self._first.clear()
            try:
                async for _ in events:  # straight from the loop, not through __anext__: hot path
                    pass
            except BaseException:
                self._ended()
                raise
            if not self._next_turn():
                self._unlist()
                return cast("RunResult[OutputT]", RunResult.of(self.state, self._output))
