"""The events a run is recorded as, and streamed as (`agent.iter(goal)`): each a typed model
with `kind`, `session_id`, `run_id`, `seq` and a UTC time; `EVENT` (de)serializes them all.

    from reins.events import RunFinished, ToolCallFinished

    async for event in agent.iter(goal):
        if isinstance(event, ToolCallFinished): ...
"""

from .core._events import (
    EVENT,
    SCHEMA_VERSION,
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    ContextCompacted,
    Event,
    FinishReason,
    ForkedFrom,
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
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    TodoItem,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)

__all__ = [
    "EVENT",
    "SCHEMA_VERSION",
    "AnswerRejected",
    "ApprovalRequested",
    "BudgetExtended",
    "ContextCompacted",
    "Event",
    "FinishReason",
    "ForkedFrom",
    "ModelRequested",
    "ModelResponded",
    "Notice",
    "PermissionDecided",
    "QuestionAnswered",
    "QuestionAsked",
    "Reflected",
    "ResponseRejected",
    "RunConfig",
    "RunFinished",
    "RunResumed",
    "RunStarted",
    "Steered",
    "StreamEvent",
    "SubagentEvent",
    "TextDelta",
    "ThinkingDelta",
    "TodoItem",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolsChanged",
]
