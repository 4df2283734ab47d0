"""Messages and events: one adapter each, whole-object round trips, a closed set of kinds."""

from __future__ import annotations

import re
import typing
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from reins import (
    MESSAGES,
    AssistantMessage,
    LogCorrupted,
    RunState,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from reins.context import ContextSettings
from reins.events import (
    EVENT,
    SCHEMA_VERSION,
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    Checkpoint,
    ContextCompacted,
    Event,
    FilesRestored,
    ForkedFrom,
    MemoryChange,
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
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)

ENVELOPE = {"session_id": "s1", "run_id": "r1", "ts": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)}
CALL = ToolCall(id="c1", name="grep", arguments={"pattern": "x", "path": "."})
RESULT = ToolResultMessage(call_id="c1", name="grep", content="a:1: x", is_error=False)
ASSISTANT = AssistantMessage(text="t", thinking="th", tool_calls=(CALL,))

ONE_OF_EACH: list[Event] = [
    RunStarted(
        **ENVELOPE,
        seq=1,
        goal="g",
        config=RunConfig(model="script:x.json", workspace="/w", max_steps=3, tools=("grep",)),
        messages=(SystemMessage(content="sys"), UserMessage(content="g")),
        grants=("run_command: git push",),
    ),
    RunResumed(**ENVELOPE, seq=2, max_steps=6),
    ModelRequested(**ENVELOPE, seq=3, step=1),
    ThinkingDelta(**ENVELOPE, seq=4, step=1, text="th"),
    TextDelta(**ENVELOPE, seq=5, step=1, text="t"),
    ModelResponded(
        **ENVELOPE,
        seq=6,
        step=1,
        message=ASSISTANT,
        usage=Usage(input_tokens=10, output_tokens=2, requests=1),
        finish="tool_use",
        model="m",
    ),
    ToolCallStarted(**ENVELOPE, seq=7, step=1, call=CALL),
    ToolCallFinished(**ENVELOPE, seq=8, step=1, result=RESULT, duration_ms=1.5),
    ResponseRejected(**ENVELOPE, seq=9, step=1, observation="no", source="P"),
    Notice(**ENVELOPE, seq=10, text="n", source="P", level="warning", to_model=True),
    RunFinished(**ENVELOPE, seq=11, stop_reason=StopReason.END_TURN, final_answer="a"),
    ApprovalRequested(**ENVELOPE, seq=12, step=1, call=CALL, rule="default", grant="grep"),
    PermissionDecided(
        **ENVELOPE,
        seq=13,
        step=1,
        call_id="c1",
        tool="grep",
        allowed=True,
        rule="default",
        by="user",
        always=True,
        grant="grep",
    ),
    BudgetExtended(
        **ENVELOPE, seq=14, source="MaxSteps", choice="+20 steps", max_steps=23, token_budget=9
    ),
    AnswerRejected(**ENVELOPE, seq=14, step=2, observation="check failed", source="Checks"),
    Steered(**ENVELOPE, seq=15, text="use the other file"),
    Reflected(
        **ENVELOPE,
        seq=16,
        step=1,
        assessment="failure",
        reasoning="grep found nothing",
        next_action="retry",
        revised_approach="search the tests",
        to_model="[Reflection: the last step failed ...]",
        usage=Usage(input_tokens=30, output_tokens=9, requests=1),
        model="m",
        source="reflection",
    ),
    ContextCompacted(
        **ENVELOPE,
        seq=17,
        prefix=(SystemMessage(content="sys"), UserMessage(content="g"), UserMessage(content="s")),
        cut=5,
        method="summary",
        tokens_before=7000,
        tokens_after=900,
        messages_before=12,
        messages_after=6,
        usage=Usage(input_tokens=3000, output_tokens=200, requests=1),
        model="m",
    ),
    ToolsChanged(**ENVELOPE, seq=18, added=("time__now",), removed=("git__log",)),
    QuestionAsked(
        **ENVELOPE, seq=19, step=2, call_id="q1", question="which?", choices=("a",), default="a"
    ),
    QuestionAnswered(**ENVELOPE, seq=20, call_id="q1", answer=None, by="timeout"),
    ForkedFrom(**ENVELOPE, seq=2, from_run_id="r-origin", from_session_id="s-origin", from_seq=7),
    Checkpoint(**ENVELOPE, seq=21, step=3, snapshot="0f" * 20),
    FilesRestored(
        **ENVELOPE, seq=22, snapshot="0f" * 20, to_step=0, paths=("a.py", "new/"), forced=("a.py",)
    ),
    MemoryUpdated(
        **ENVELOPE,
        seq=23,
        trigger="turn_end",
        through=9,
        changes=(
            MemoryChange(
                op="update",
                fact="0a1b2c3d4e5f",
                text="The user indents with spaces.",
                scope="project",
                replaced="f5e4d3c2b1a0",
                evidence="I now indent with spaces",
            ),
        ),
        left_out=("a secret (GitHub token)",),
        usage=Usage(input_tokens=300, output_tokens=40, requests=1),
        model="local",
    ),
]


def test_a_run_config_keeps_its_context_settings() -> None:
    config = RunConfig(
        model="m", workspace="/w", max_steps=3, context=ContextSettings(window=4096, keep_recent=4)
    )
    assert RunConfig.model_validate_json(config.model_dump_json()) == config


def test_every_event_kind_is_covered() -> None:
    union = typing.get_args(typing.get_args(Event)[0])
    assert {type(e) for e in ONE_OF_EACH} == set(union)


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda e: e.kind)
def test_the_fold_takes_every_kind_but_a_second_start(event: Event) -> None:
    started = next(e for e in ONE_OF_EACH if isinstance(e, RunStarted))
    state = RunState.fold([started])
    event = event.model_copy(update={"run_id": started.run_id, "seq": state.next_seq})
    if isinstance(event, RunStarted):
        with pytest.raises(LogCorrupted, match="run_started at seq 2"):
            state.apply(event)
    else:
        state.apply(event)
        # A delta streamed goes with the event after it: the next seq is still its own.
        assert state.next_seq == (2 if isinstance(event, TextDelta | ThinkingDelta) else 3)


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda e: e.kind)
def test_events_round_trip_through_the_one_adapter(event: Event) -> None:
    data = EVENT.dump_json(event)
    assert EVENT.validate_json(data) == event
    assert EVENT.validate_python(EVENT.dump_python(event, mode="json")) == event
    assert event.v == SCHEMA_VERSION


def test_the_json_shape_is_flat_and_tagged() -> None:
    assert EVENT.dump_python(ONE_OF_EACH[7], mode="json") == {
        "v": 1,
        "session_id": "s1",
        "run_id": "r1",
        "seq": 8,
        "ts": "2026-01-02T03:04:05Z",
        "kind": "tool_call_finished",
        "step": 1,
        "result": {
            "role": "tool",
            "call_id": "c1",
            "name": "grep",
            "content": "a:1: x",
            "is_error": False,
        },
        "duration_ms": 1.5,
        "usage": None,
        "cost": None,
        "todo": None,
    }


def test_unknown_kinds_and_fields_are_rejected() -> None:
    good = EVENT.dump_python(ONE_OF_EACH[2], mode="json")
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        EVENT.validate_python({**good, "kind": "mystery"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        EVENT.validate_python({**good, "surprise": 1})


def test_timestamps_default_to_utc_now() -> None:
    event = ModelRequested(session_id="s", run_id="r", seq=1, step=1)
    assert event.ts.tzinfo is UTC
    assert abs((datetime.now(UTC) - event.ts).total_seconds()) < 5


def test_messages_round_trip_and_are_discriminated_by_role() -> None:
    messages = [SystemMessage(content="s"), UserMessage(content="u"), ASSISTANT, RESULT]
    assert MESSAGES.validate_json(MESSAGES.dump_json(messages)) == messages
    with pytest.raises(ValidationError):
        MESSAGES.validate_python([{"role": "robot", "content": "x"}])


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=1, output_tokens=2, requests=1) + Usage(
        input_tokens=10, output_tokens=20, requests=1
    )
    assert total == Usage(input_tokens=11, output_tokens=22, requests=2)
    assert total.total_tokens == 33


def test_ids_made_in_one_burst_are_unique_and_say_what_they_name() -> None:
    from reins.core._ids import new_run_id, new_session_id

    runs = [new_run_id() for _ in range(100_000)]  # hundreds a millisecond, as a busy server
    sessions = [new_session_id() for _ in range(100_000)]
    assert len(set(runs) | set(sessions)) == 200_000
    assert all(re.fullmatch("r[0-9a-f]{20}", i) for i in runs)
    assert all(re.fullmatch("s[0-9a-f]{20}", i) for i in sessions)


def _run(*events: Event) -> list[Event]:
    return [ONE_OF_EACH[0], *events]


def test_deltas_fold_as_streamed_now_and_as_older_logs_hold_them() -> None:
    """A delta is on the stream only, with the seq of the event after it; a log written before
    that holds deltas with seqs of their own. Both fold; a gap does not."""
    response = ONE_OF_EACH[5]
    assert isinstance(response, ModelResponded)
    request = ModelRequested(**ENVELOPE, seq=2, step=1)
    streamed = _run(
        request,
        TextDelta(**ENVELOPE, seq=3, step=1, text="t"),
        TextDelta(**ENVELOPE, seq=3, step=1, text="u"),
        response.model_copy(update={"seq": 3}),
    )
    assert RunState.fold(streamed).next_seq == 4
    older = _run(
        request,
        TextDelta(**ENVELOPE, seq=3, step=1, text="t"),
        TextDelta(**ENVELOPE, seq=4, step=1, text="u"),
        response.model_copy(update={"seq": 5}),
    )
    assert RunState.fold(older).next_seq == 6
    assert RunState.fold(streamed).messages == RunState.fold(older).messages
    gap = _run(request, response.model_copy(update={"seq": 4}))
    with pytest.raises(LogCorrupted, match="expected event seq 3, found 4"):
        RunState.fold(gap)
