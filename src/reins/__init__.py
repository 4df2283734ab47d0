"""reins: an agent harness. A run is an append-only log of typed events; the loop is a short
driver that asks policies what to do, calls the model, runs tools and appends events.

Names load on first use (PEP 562), so `import reins` and `reins --help` stay fast; the static
imports below are for type checkers only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._agent import Agent, AgentRun, RunResult
    from ._cancel import Cancel
    from ._errors import (
        LogCorrupted,
        ModelError,
        ReinsError,
        RunError,
        RunNotFound,
        ScriptError,
        StoreError,
        ToolError,
        UnknownModel,
        UsageError,
        WorkspaceError,
    )
    from ._events import (
        EVENT,
        SCHEMA_VERSION,
        Event,
        FinishReason,
        ModelRequested,
        ModelResponded,
        Notice,
        ResponseRejected,
        RunConfig,
        RunFinished,
        RunResumed,
        RunStarted,
        TextDelta,
        ThinkingDelta,
        ToolCallFinished,
        ToolCallStarted,
    )
    from ._messages import (
        MESSAGES,
        AssistantMessage,
        Message,
        SystemMessage,
        ToolCall,
        ToolResultMessage,
        ToolSpec,
        Usage,
        UserMessage,
    )
    from ._model import Model, ModelResponse, ModelSettings, StreamItem, TextChunk, ThinkingChunk
    from ._policies import (
        AfterResponse,
        AfterTools,
        Answer,
        BeforeRound,
        BeforeTool,
        Continue,
        Inject,
        MaxSteps,
        MaxTokensRecovery,
        OnFinal,
        Policy,
        Reject,
        Stop,
        StrictActions,
        Verdict,
    )
    from ._resolve import resolve_model
    from ._state import RunState
    from ._stop import StopReason
    from .store import EventLog, MemoryLog, RunInfo, SQLiteLog
    from .tools import Tool, ToolContext, Workspace, tool

_LAZY: dict[str, str] = {
    "Agent": "._agent",
    "AgentRun": "._agent",
    "RunResult": "._agent",
    "Cancel": "._cancel",
    "LogCorrupted": "._errors",
    "ModelError": "._errors",
    "ReinsError": "._errors",
    "RunError": "._errors",
    "RunNotFound": "._errors",
    "ScriptError": "._errors",
    "StoreError": "._errors",
    "ToolError": "._errors",
    "UnknownModel": "._errors",
    "UsageError": "._errors",
    "WorkspaceError": "._errors",
    "EVENT": "._events",
    "SCHEMA_VERSION": "._events",
    "Event": "._events",
    "FinishReason": "._events",
    "ModelRequested": "._events",
    "ModelResponded": "._events",
    "Notice": "._events",
    "ResponseRejected": "._events",
    "RunConfig": "._events",
    "RunFinished": "._events",
    "RunResumed": "._events",
    "RunStarted": "._events",
    "StopReason": "._stop",
    "TextDelta": "._events",
    "ThinkingDelta": "._events",
    "ToolCallFinished": "._events",
    "ToolCallStarted": "._events",
    "MESSAGES": "._messages",
    "AssistantMessage": "._messages",
    "Message": "._messages",
    "SystemMessage": "._messages",
    "ToolCall": "._messages",
    "ToolResultMessage": "._messages",
    "ToolSpec": "._messages",
    "Usage": "._messages",
    "UserMessage": "._messages",
    "Model": "._model",
    "ModelResponse": "._model",
    "ModelSettings": "._model",
    "StreamItem": "._model",
    "TextChunk": "._model",
    "ThinkingChunk": "._model",
    "AfterResponse": "._policies",
    "AfterTools": "._policies",
    "Answer": "._policies",
    "BeforeRound": "._policies",
    "BeforeTool": "._policies",
    "Continue": "._policies",
    "Inject": "._policies",
    "MaxSteps": "._policies",
    "MaxTokensRecovery": "._policies",
    "StrictActions": "._policies",
    "OnFinal": "._policies",
    "Policy": "._policies",
    "Reject": "._policies",
    "Stop": "._policies",
    "Verdict": "._policies",
    "resolve_model": "._resolve",
    "RunState": "._state",
    "EventLog": ".store",
    "MemoryLog": ".store",
    "RunInfo": ".store",
    "SQLiteLog": ".store",
    "Tool": ".tools",
    "ToolContext": ".tools",
    "Workspace": ".tools",
    "tool": ".tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reins' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "EVENT",
    "MESSAGES",
    "SCHEMA_VERSION",
    "AfterResponse",
    "AfterTools",
    "Agent",
    "AgentRun",
    "Answer",
    "AssistantMessage",
    "BeforeRound",
    "BeforeTool",
    "Cancel",
    "Continue",
    "Event",
    "EventLog",
    "FinishReason",
    "Inject",
    "LogCorrupted",
    "MaxSteps",
    "MaxTokensRecovery",
    "MemoryLog",
    "Message",
    "Model",
    "ModelError",
    "ModelRequested",
    "ModelResponded",
    "ModelResponse",
    "ModelSettings",
    "Notice",
    "OnFinal",
    "Policy",
    "ReinsError",
    "Reject",
    "ResponseRejected",
    "RunConfig",
    "RunError",
    "RunFinished",
    "RunInfo",
    "RunNotFound",
    "RunResult",
    "RunResumed",
    "RunStarted",
    "RunState",
    "SQLiteLog",
    "ScriptError",
    "Stop",
    "StopReason",
    "StoreError",
    "StreamItem",
    "StrictActions",
    "SystemMessage",
    "TextChunk",
    "TextDelta",
    "ThinkingChunk",
    "ThinkingDelta",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolError",
    "ToolResultMessage",
    "ToolSpec",
    "UnknownModel",
    "Usage",
    "UsageError",
    "UserMessage",
    "Verdict",
    "Workspace",
    "WorkspaceError",
    "resolve_model",
    "tool",
]
