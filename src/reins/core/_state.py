"""Run state as a pure fold of run events.

The loop keeps nothing else: resuming a run is folding its log and driving on from the phase the
state is in (`review_pending`, `pending`, `turn_answer()`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._errors import LogCorrupted
from ._events import (
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    Checkpoint,
    ContextCompacted,
    Event,
    FilesRestored,
    ForkedFrom,
    MemoryUpdated,
    ModelRequested,
    ModelResponded,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    Reflected,
    ResponseRejected,
    RunConfig,
    RunFinished,
    RunResumed,
    RunStarted,
    Steered,
    TextDelta,
    ThinkingDelta,
    TodoItem,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from ._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._repetition import collapsed

FINAL_ANSWER_TOOL = "final_answer"
FINAL_ANSWER_PREFIX = "FINAL_ANSWER:"
STEER_PREFIX = "[STEER FROM USER — act on this now] "
REFLECTION_TAG = "[Reflection:"
"""How what a reflection tells the model begins; a model that echoes such a block in its own
reply has it stripped from its history."""
STEERING = "steering"
"""The `source` of a response rejected because a steer came after the model chose its calls."""
MIN_RATIO, MAX_RATIO = 0.25, 4.0
"""Bounds of the estimate's calibration: a count past them is the provider's odd reporting
(say, only the uncached part), not the text."""


@dataclass(kw_only=True)
class RunState:
    """Everything the loop knows about one run, rebuilt from its events alone."""

    session_id: str
    run_id: str
    goal: str
    config: RunConfig
    messages: list[Message]
    next_seq: int = 1
    step: int = 0
    review_pending: bool = False
    """A response is recorded that no policy has ruled on yet."""
    pending: list[ToolCall] = field(default_factory=list[ToolCall])
    """Calls of the open response whose results are not all in."""
    results: dict[str, ToolResultMessage] = field(default_factory=dict[str, ToolResultMessage])
    started: set[str] = field(default_factory=set[str])
    """Ids of the open response's calls that were started."""
    ran: set[str] = field(default_factory=set[str])
    """Ids of the last closed step's calls that were started (not answered by a policy,
    denied or left unrun)."""
    changed: dict[str, ToolCallStarted] = field(default_factory=dict[str, ToolCallStarted])
    """The run's calls that started with arguments a policy changed (a command hook), by id."""
    finished: RunFinished | None = None
    rejections: int = 0
    """Responses rejected in a row: the strict-actions policy caps its repairs with it."""
    temperature: float | None = None
    """The temperature the next model request samples at least (set by a rejection)."""
    excluded_tools: tuple[str, ...] = ()
    """Tools the next reply may not call (set by a rejection)."""
    argument_schemas: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict[str, Mapping[str, Any]]
    )
    """Schemas of some arguments for the next reply (set by a rejection)."""
    cost: float = 0.0
    """US dollars spent on model calls whose price is known."""
    cutoffs: int = 0
    """Responses in a row cut off by the output-token limit (0: the last one was whole)."""
    asked: dict[str, ApprovalRequested] = field(default_factory=dict[str, ApprovalRequested])
    """Approval requests of the open response's calls, by call id."""
    decisions: dict[str, PermissionDecided] = field(default_factory=dict[str, PermissionDecided])
    """Permission decisions on the open response's calls, by call id."""
    grants: set[str] = field(default_factory=set[str])
    """What a person allowed "always" in this session (a fold of its runs' answers)."""
    marks: set[str] = field(default_factory=set[str])
    """The budget marks passed (the `mark` of its notices): each notice is given once."""
    elapsed: float = 0.0
    """Seconds the run was running before its current span: each span runs from its
    run_started or run_resumed to its run_finished (after a crash: to its last event)."""
    active_since: datetime | None = None
    """When the current span began (None: the run is finished)."""
    last_ts: datetime | None = None
    """The time of the last event."""

    def elapsed_at(self, now: datetime) -> float:
        """Seconds the run has been running, by `now`."""
        since = self.active_since
        return self.elapsed + (0.0 if since is None else (now - since).total_seconds())

    answer_rejections: int = 0
    """Final answers of this run refused by a policy (stop hooks, checks), resumes included."""
    acted: int = 0
    """The last step whose tool calls all ran."""
    reflected: int = 0
    """The last step a reflection judged."""
    failed_attempts: int = 0
    """Reflections in a row that judged their step a failure (a success resets it)."""
    completion: str | None = None
    """A reflection judged the goal complete: this is the answer, unless a policy refuses it."""
    view_prefix: list[Message] | None = None
    """After a compaction: what the model sees before `messages[view_from:]`."""
    view_from: int = 0
    prompt_tokens: int | None = None
    """The provider's count of the last request's input (None: no call since the view
    changed, or the provider gave none)."""
    prompt_messages: int = 0
    """Messages of the view that last request sent: the count covers those."""
    token_ratio: float = 1.0
    """The provider's count of the last request it counted over reins' estimate of it: what
    the estimate of a request is multiplied by (1.0 until a provider has counted one)."""
    estimated_tokens: int | None = None
    """reins' estimate of the request under way, if it is to be calibrated."""
    compactions: int = 0
    questions: dict[str, QuestionAsked] = field(default_factory=dict[str, QuestionAsked])
    """The run's questions to the user (`ask_user`), by call id."""
    answers: dict[str, QuestionAnswered] = field(default_factory=dict[str, QuestionAnswered])
    todo: tuple[TodoItem, ...] = ()
    """The run's todo list (`plan`, `todo`)."""
    forked_from: ForkedFrom | None = None
    """Where the run was forked from, if it is a fork."""
    checkpoints: dict[int, str] = field(default_factory=dict[int, str])
    """The steps that changed the workspace, each with its checkpoint (the commit of the
    files as they were before the step's first change)."""
    loaded_tools: set[str] = field(default_factory=set[str])
    """Deferred tools the model loaded: their schemas are offered (progressive disclosure)."""
    remembered: int = 0
    """How many of `messages` the session's memory has read (`MemoryUpdated.through`)."""
    _delta_seq: int | None = field(default=None, repr=False, compare=False)
    """The seq of the last text or thinking delta folded (see `apply`)."""
    _usage: Usage = field(default_factory=Usage, repr=False, compare=False)
    _unsummed: list[Usage] = field(default_factory=list[Usage], repr=False, compare=False)
    """Usages folded in since `usage` was last read."""

    def view(self) -> list[Message]:
        """The history as the model sees it: the messages, from the last compaction on."""
        if self.view_prefix is None:
            return self.messages
        return [*self.view_prefix, *self.messages[self.view_from :]]

    def view_size(self) -> int:
        """How many messages the model is shown now (after compactions)."""
        if self.view_prefix is None:
            return len(self.messages)
        return len(self.view_prefix) + len(self.messages) - self.view_from

    @classmethod
    def fold(cls, events: Iterable[Event]) -> RunState:
        """The state a run's events (from its `run_started` on) add up to: what resume,
        replay and `reins show` read."""
        it = iter(events)
        first = next(it, None)
        if not isinstance(first, RunStarted):
            raise LogCorrupted("a run's log must begin with run_started")
        state = cls(
            session_id=first.session_id,
            run_id=first.run_id,
            goal=first.goal,
            config=first.config,
            messages=list(first.messages),
            next_seq=first.seq + 1,
            grants=set(first.grants),
            remembered=first.remembered,
            active_since=first.ts,
            last_ts=first.ts,
        )
        for event in it:
            state.apply(event)
        return state

    def apply(self, event: Event) -> None:
        """Fold one more event in: the one way the state changes."""
        kind = type(event)
        if kind is TextDelta or kind is ThinkingDelta:
            # On the stream only, with the seq of the event after them; a log written before
            # they left it holds them with seqs of their own, which the next event follows.
            self._delta_seq = event.seq
            return
        if event.seq != self.next_seq:
            if self._delta_seq is None or event.seq != self._delta_seq + 1:
                raise LogCorrupted(
                    f"run {self.run_id}: expected event seq {self.next_seq}, found {event.seq}"
                )
            self.next_seq = event.seq
        self._delta_seq = None
        self.next_seq += 1
        fold = _FOLDS.get(kind)
        if fold is None:
            raise LogCorrupted(f"run {self.run_id}: event {event.seq} is of no kind a run has")
        fold(self, event)
        self.last_ts = event.ts

    # What each kind of event does to the state (`apply` dispatches on the exact type).

    def _on_model_requested(self, event: ModelRequested) -> None:
        self.estimated_tokens = event.estimated_tokens

    def _on_model_responded(self, event: ModelResponded) -> None:
        self.prompt_tokens = event.usage.input_tokens or None
        if self.estimated_tokens and self.prompt_tokens:
            ratio = self.prompt_tokens / self.estimated_tokens
            self.token_ratio = min(max(ratio, MIN_RATIO), MAX_RATIO)
        self.estimated_tokens = None
        self.prompt_messages = self.view_size()
        self.step = event.step
        self.temperature = None  # it was for the request just answered
        self.excluded_tools = ()
        self.argument_schemas = {}
        self._spend(event.usage, event.cost)
        message = event.message
        if self.config.reflect and REFLECTION_TAG in message.text:
            message = message.model_copy(update={"text": strip_reflections(message.text)})
        if message.text and (guards := self.config.guards) and guards.repetition:
            message = collapsed(message)  # the log keeps the raw text
        self.messages.append(message)
        self.completion = None
        self.review_pending = True
        self.pending = list(event.message.tool_calls)
        self.cutoffs = self.cutoffs + 1 if event.finish == "max_tokens" else 0

    def _on_tool_call_started(self, event: ToolCallStarted) -> None:
        self.review_pending = False
        self.rejections = 0
        self.started.add(event.call.id)
        if event.changed_by:
            self.changed[event.call.id] = event

    def _on_tool_call_finished(self, event: ToolCallFinished) -> None:
        self.review_pending = False
        self.results[event.result.call_id] = event.result
        if event.usage is not None:  # a subagent's run: its spending is ours
            self._spend(event.usage, event.cost)
        if event.todo is not None:
            self.todo = event.todo
        if all(call.id in self.results for call in self.pending):
            self._close_step()
            self.acted = self.step

    def _on_approval_requested(self, event: ApprovalRequested) -> None:
        self.review_pending = False
        self.asked[event.call.id] = event

    def _on_permission_decided(self, event: PermissionDecided) -> None:
        self.review_pending = False
        self.decisions[event.call_id] = event
        if event.always:
            self.grants.add(event.grant)

    def _on_notice(self, event: Notice) -> None:
        if event.to_model:
            self.review_pending = False
            self.messages.append(UserMessage(content=event.text))
        if event.mark:
            self.marks.add(event.mark)

    def _on_response_rejected(self, event: ResponseRejected) -> None:
        self.review_pending = False
        if event.source == STEERING:
            # No repair: the response passed review, as when its calls start.
            self.rejections = 0
            why = "the user sent a new instruction after you chose this call"
        else:
            self.rejections += 1
            self.temperature = event.temperature
            self.excluded_tools = event.excluded_tools
            self.argument_schemas = event.argument_schemas
            why = "the response was rejected"
        for call in self.pending:
            self.results.setdefault(call.id, _not_run(call, why))
        self._close_step()
        self.messages.append(UserMessage(content=event.observation))

    def _on_answer_rejected(self, event: AnswerRejected) -> None:
        self.review_pending = False
        self.answer_rejections += 1
        self.completion = None
        self.messages.append(UserMessage(content=event.observation))

    def _on_reflected(self, event: Reflected) -> None:
        self._spend(event.usage, event.cost)
        self.reflected = event.step
        if event.assessment == "failure":
            self.failed_attempts += 1
        elif event.assessment == "success":
            self.failed_attempts = 0
        if event.to_model:
            self.messages.append(UserMessage(content=event.to_model))
        if event.next_action == "complete":
            self.completion = event.reasoning

    def _on_steered(self, event: Steered) -> None:
        self.messages.append(UserMessage(content=STEER_PREFIX + event.text))

    def _on_context_compacted(self, event: ContextCompacted) -> None:
        self.view_prefix, self.view_from = list(event.prefix), event.cut
        self.prompt_tokens = None
        self.compactions += 1
        self._spend(event.usage, event.cost)

    def _on_run_finished(self, event: RunFinished) -> None:
        self.review_pending = False
        self.finished = event
        self._close_span(event.ts)

    def _on_run_resumed(self, event: RunResumed) -> None:
        self.finished = None
        self._close_span(self.last_ts)  # a crash: the span ended at its last event
        self.active_since = event.ts
        self._set_caps(event)
        if event.guards is not None:
            self.config = self.config.model_copy(update={"guards": event.guards})

    def _on_budget_extended(self, event: BudgetExtended) -> None:
        self._set_caps(event)

    def _on_question_asked(self, event: QuestionAsked) -> None:
        self.review_pending = False
        self.questions[event.call_id] = event

    def _on_forked_from(self, event: ForkedFrom) -> None:
        self.forked_from = event

    def _on_checkpoint(self, event: Checkpoint) -> None:
        if not event.at_end:
            self.checkpoints[event.step] = event.snapshot

    def _on_files_restored(self, event: FilesRestored) -> None:
        pass  # the files changed, not the run: a resume goes on from its history

    def _on_memory_updated(self, event: MemoryUpdated) -> None:
        self.remembered = event.through
        self._spend(event.usage, event.cost)

    def _on_question_answered(self, event: QuestionAnswered) -> None:
        self.answers[event.call_id] = event

    def _on_tools_changed(self, event: ToolsChanged) -> None:
        self.loaded_tools.update(event.loaded)  # the rest: the live sources' own

    def _on_run_started(self, event: RunStarted) -> None:
        raise LogCorrupted(f"run {self.run_id}: run_started at seq {event.seq}")

    @property
    def usage(self) -> Usage:
        """The tokens of the run's model calls (its subagents', reflections' and summaries'
        too)."""
        if self._unsummed:  # summed when asked for, once: a Usage made is a validation
            parts = [self._usage, *self._unsummed]
            self._usage = Usage(
                **{name: sum(getattr(u, name) for u in parts) for name in _USAGE_FIELDS}
            )
            self._unsummed = []
        return self._usage

    def _spend(self, usage: Usage, cost: float | None) -> None:
        self._unsummed.append(usage)
        self.cost += cost or 0.0

    def _set_caps(self, event: RunResumed | BudgetExtended) -> None:
        self.config = self.config.model_copy(
            update={
                "max_steps": event.max_steps,
                "token_budget": event.token_budget,
                "time_budget": event.time_budget,
                "cost_budget": event.cost_budget,
            }
        )

    def _close_span(self, end: datetime | None) -> None:
        if self.active_since is not None and end is not None:
            self.elapsed += max(0.0, (end - self.active_since).total_seconds())
        self.active_since = None

    def _close_step(self) -> None:
        self.messages.extend([self.results[call.id] for call in self.pending])
        self.pending = []
        self.results = {}
        self.ran, self.started = self.started, set()
        if self.asked or self.decisions:
            self.asked, self.decisions = {}, {}

    def unanswered(self) -> list[QuestionAsked]:
        """Questions to the user no one has answered yet."""
        return [q for q in self.questions.values() if q.call_id not in self.answers]

    def awaiting(self) -> list[ApprovalRequested]:
        """Approval requests no one has answered yet."""
        return [r for r in self.asked.values() if r.call.id not in self.decisions]

    def transcript(self, *, whole: bool = False) -> list[Message]:
        """The view (with `whole`: every message, compacted or not), with a result for every
        call that never got one (for a next turn): what a resume would say of it. A call that
        started, of a tool with side effects, was interrupted (it may have acted); one that
        never started was not run."""
        read_only = self.config.read_only_tools or ()
        done = [
            self.results.get(call.id)
            or (
                interrupted(call)
                if call.id in self.started and call.name not in read_only
                else _not_run(call, "the run ended")
            )
            for call in self.pending
        ]
        return [*(self.messages if whole else self.view()), *done]

    def remembered_in_transcript(self) -> int:
        """Of `transcript()`, how many messages the memory has read: where a next turn's
        capture begins (a compaction's summary stands for what it replaced)."""
        if self.view_prefix is None:
            return self.remembered
        if self.remembered >= self.view_from:
            return len(self.view_prefix) + self.remembered - self.view_from
        # Some of what was compacted was never read: the summary is, in its place.
        return sum(isinstance(m, SystemMessage) for m in self.view_prefix)

    def step_results(self) -> list[ToolResultMessage]:
        """The tool results that follow the last response."""
        last = _last_assistant(self.messages)
        after = self.messages[last[0] + 1 :] if last else []
        return [m for m in after if isinstance(m, ToolResultMessage)]

    def turn_answer(self) -> str | None:
        """The final answer if the last response ended the turn and its tools have all run."""
        if self.pending:
            return None
        if self.completion is not None:
            return self.completion
        last = _last_assistant(self.messages)
        if last is None:
            return None
        index, message = last
        marked = _marked_answer(message.text)
        if not message.tool_calls:
            return marked if marked is not None else message.text
        for call in message.tool_calls:
            if call.name == FINAL_ANSWER_TOOL and any(
                isinstance(r, ToolResultMessage) and r.call_id == call.id and not r.is_error
                for r in self.messages[index + 1 :]
            ):
                answer = call.arguments.get("answer", "")
                # A structured answer (`output_type`) is kept as its JSON text.
                return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return marked


_USAGE_FIELDS = tuple(Usage.model_fields)

_FOLDS: dict[type, Callable[[RunState, Any], None]] = {
    ModelRequested: RunState._on_model_requested,
    ModelResponded: RunState._on_model_responded,
    ToolCallStarted: RunState._on_tool_call_started,
    ToolCallFinished: RunState._on_tool_call_finished,
    ApprovalRequested: RunState._on_approval_requested,
    PermissionDecided: RunState._on_permission_decided,
    Notice: RunState._on_notice,
    ResponseRejected: RunState._on_response_rejected,
    AnswerRejected: RunState._on_answer_rejected,
    Reflected: RunState._on_reflected,
    Steered: RunState._on_steered,
    ContextCompacted: RunState._on_context_compacted,
    RunFinished: RunState._on_run_finished,
    RunResumed: RunState._on_run_resumed,
    BudgetExtended: RunState._on_budget_extended,
    QuestionAsked: RunState._on_question_asked,
    QuestionAnswered: RunState._on_question_answered,
    ForkedFrom: RunState._on_forked_from,
    Checkpoint: RunState._on_checkpoint,
    FilesRestored: RunState._on_files_restored,
    MemoryUpdated: RunState._on_memory_updated,
    ToolsChanged: RunState._on_tools_changed,
    RunStarted: RunState._on_run_started,
}
"""How each kind of event is folded, by its exact type: `isinstance` with a pydantic class is
slow when it misses, and a run folds thousands of events."""


def _last_assistant(messages: list[Message]) -> tuple[int, AssistantMessage] | None:
    """The last assistant message, if only tool results follow it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        # By exact type: `isinstance` with a pydantic class is slow when it misses.
        if type(message) is AssistantMessage:
            return index, message
        if type(message) is not ToolResultMessage:
            return None
    return None


_REFLECTION_BLOCK = re.compile(re.escape(REFLECTION_TAG) + r"[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]?")


def strip_reflections(text: str) -> str:
    """`text` without the `[Reflection: …]` blocks a model copied from what it was told."""
    return re.sub(r"\n{3,}", "\n\n", _REFLECTION_BLOCK.sub("", text)).strip()


# Small models vary the marker's case and spacing ("Final_ANSWER:", "Final answer:").
_ANSWER_MARKER = re.compile(r"\s*final[_ ]answer\s*:", re.IGNORECASE)


def _marked_answer(text: str) -> str | None:
    if not text:
        return None  # most replies that call a tool say nothing
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if marker := _ANSWER_MARKER.match(line):
            rest = [line[marker.end() :], *lines[index + 1 :]]
            return "\n".join(rest).strip()
    return None


def interrupted(call: ToolCall) -> ToolResultMessage:
    """The result of a call with side effects that was running when its process died."""
    return ToolResultMessage(
        call_id=call.id,
        name=call.name,
        content=(
            "Interrupted: the run stopped while this call ran, so it may or may not have taken "
            "effect. Check the current state before repeating it."
        ),
        is_error=True,
    )


def _not_run(call: ToolCall, why: str) -> ToolResultMessage:
    return ToolResultMessage(
        call_id=call.id, name=call.name, content=f"Not run: {why}.", is_error=True
    )
