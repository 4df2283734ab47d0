"""reins: an agent harness. A run is an append-only log of typed events; the loop is a short
driver that asks policies what to do, calls the model, runs tools and appends events.

Here are the names most programs use: `Agent`, `tool` and `ToolContext`, the run's result and
messages, the models, the errors, and the verdicts a policy returns. The events are in
`reins.events`, the built-in policies in `reins.policies`, prompt sections in `reins.context`.

Names load on first use (PEP 562), so `import reins` and `reins --help` stay fast; the static
imports below are for type checkers only. A name that moved in 0.2 still works from here for
one release, with a DeprecationWarning naming its new place.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent._agent import Agent
    from .agent._budgets import Budgets
    from .agent._groups import Ask, Checks, Subagents
    from .agent._resolve import resolve_model
    from .agent._run import AgentRun, RunResult
    from .context import ContextSettings
    from .core._cancel import Cancel
    from .core._catalog import ModelInfo, register_model
    from .core._errors import (
        ContextTooLarge,
        LogCorrupted,
        LogUnverified,
        ModelConnectionError,
        ModelError,
        ModelHTTPError,
        ModelTimeout,
        ReinsError,
        RunError,
        RunNotFound,
        ScriptError,
        SessionBusy,
        StoreError,
        ToolError,
        UnknownModel,
        UsageError,
        WorkspaceError,
    )
    from .core._media import Document, Image
    from .core._messages import (
        MESSAGES,
        AssistantMessage,
        Message,
        SystemMessage,
        ThinkingBlock,
        ToolCall,
        ToolResultMessage,
        ToolSpec,
        Usage,
        UserMessage,
    )
    from .core._model import (
        Model,
        ModelResponse,
        ModelSettings,
        Retrying,
        StreamItem,
        TextChunk,
        ThinkingChunk,
    )
    from .core._questions import QuestionRequest
    from .core._scope import CallScope
    from .core._state import RunState
    from .core._stop import StopReason
    from .memory import Memory
    from .permissions import Approval, ApprovalRequest, PermissionRules, Permissions
    from .policies import (
        CapHandler,
        CapOffer,
        Continue,
        Guards,
        Inject,
        Policy,
        Reject,
        Replace,
        Rewrite,
        Stop,
        Verdict,
        Verified,
    )
    from .store import EventLog, MemoryLog, RunInfo, SQLiteLog
    from .tools import Tool, ToolContext, Workspace, tool

_LAZY: dict[str, str] = {
    "MESSAGES": ".core._messages",
    "Agent": ".agent._agent",
    "AgentRun": ".agent._run",
    "Approval": ".permissions",
    "ApprovalRequest": ".permissions",
    "AssistantMessage": ".core._messages",
    "Ask": ".agent._groups",
    "Budgets": ".agent._budgets",
    "Memory": ".memory",
    "Checks": ".agent._groups",
    "CallScope": ".core._scope",
    "Cancel": ".core._cancel",
    "CapHandler": ".policies",
    "CapOffer": ".policies",
    "ContextSettings": ".context",
    "ContextTooLarge": ".core._errors",
    "Continue": ".policies",
    "Document": ".core._media",
    "EventLog": ".store",
    "Guards": ".policies",
    "Image": ".core._media",
    "Inject": ".policies",
    "LogCorrupted": ".core._errors",
    "LogUnverified": ".core._errors",
    "MemoryLog": ".store",
    "Message": ".core._messages",
    "Model": ".core._model",
    "ModelConnectionError": ".core._errors",
    "ModelError": ".core._errors",
    "ModelHTTPError": ".core._errors",
    "ModelInfo": ".core._catalog",
    "ModelResponse": ".core._model",
    "ModelSettings": ".core._model",
    "ModelTimeout": ".core._errors",
    "PermissionRules": ".permissions",
    "Permissions": ".permissions",
    "Policy": ".policies",
    "QuestionRequest": ".core._questions",
    "ReinsError": ".core._errors",
    "Reject": ".policies",
    "Replace": ".policies",
    "Retrying": ".core._model",
    "Rewrite": ".policies",
    "RunError": ".core._errors",
    "RunInfo": ".store",
    "RunNotFound": ".core._errors",
    "RunResult": ".agent._run",
    "RunState": ".core._state",
    "SQLiteLog": ".store",
    "ScriptError": ".core._errors",
    "SessionBusy": ".core._errors",
    "Stop": ".policies",
    "StopReason": ".core._stop",
    "StoreError": ".core._errors",
    "StreamItem": ".core._model",
    "Subagents": ".agent._groups",
    "SystemMessage": ".core._messages",
    "TextChunk": ".core._model",
    "ThinkingBlock": ".core._messages",
    "ThinkingChunk": ".core._model",
    "Tool": ".tools",
    "ToolCall": ".core._messages",
    "ToolContext": ".tools",
    "ToolError": ".core._errors",
    "ToolResultMessage": ".core._messages",
    "ToolSpec": ".core._messages",
    "UnknownModel": ".core._errors",
    "Usage": ".core._messages",
    "UsageError": ".core._errors",
    "UserMessage": ".core._messages",
    "Verdict": ".policies",
    "Verified": ".policies",
    "Workspace": ".tools",
    "WorkspaceError": ".core._errors",
    "register_model": ".core._catalog",
    "resolve_model": ".agent._resolve",
    "tool": ".tools",
}

_RENAMED: dict[str, tuple[str, str, str]] = {
    "EVENT": ("reins.core._events", "EVENT", "reins.events.EVENT"),
    "SCHEMA_VERSION": ("reins.core._events", "SCHEMA_VERSION", "reins.events.SCHEMA_VERSION"),
    "AnswerRejected": ("reins.core._events", "AnswerRejected", "reins.events.AnswerRejected"),
    "ApprovalRequested": (
        "reins.core._events",
        "ApprovalRequested",
        "reins.events.ApprovalRequested",
    ),
    "BudgetExtended": ("reins.core._events", "BudgetExtended", "reins.events.BudgetExtended"),
    "ContextCompacted": ("reins.core._events", "ContextCompacted", "reins.events.ContextCompacted"),
    "Event": ("reins.core._events", "Event", "reins.events.Event"),
    "FinishReason": ("reins.core._events", "FinishReason", "reins.events.FinishReason"),
    "ModelRequested": ("reins.core._events", "ModelRequested", "reins.events.ModelRequested"),
    "ModelResponded": ("reins.core._events", "ModelResponded", "reins.events.ModelResponded"),
    "Notice": ("reins.core._events", "Notice", "reins.events.Notice"),
    "PermissionDecided": (
        "reins.core._events",
        "PermissionDecided",
        "reins.events.PermissionDecided",
    ),
    "QuestionAnswered": ("reins.core._events", "QuestionAnswered", "reins.events.QuestionAnswered"),
    "ForkedFrom": ("reins.core._events", "ForkedFrom", "reins.events.ForkedFrom"),
    "Checkpoint": ("reins.core._events", "Checkpoint", "reins.events.Checkpoint"),
    "FilesRestored": ("reins.core._events", "FilesRestored", "reins.events.FilesRestored"),
    "QuestionAsked": ("reins.core._events", "QuestionAsked", "reins.events.QuestionAsked"),
    "Reflected": ("reins.core._events", "Reflected", "reins.events.Reflected"),
    "ResponseRejected": ("reins.core._events", "ResponseRejected", "reins.events.ResponseRejected"),
    "RunConfig": ("reins.core._events", "RunConfig", "reins.events.RunConfig"),
    "RunFinished": ("reins.core._events", "RunFinished", "reins.events.RunFinished"),
    "RunResumed": ("reins.core._events", "RunResumed", "reins.events.RunResumed"),
    "RunStarted": ("reins.core._events", "RunStarted", "reins.events.RunStarted"),
    "Steered": ("reins.core._events", "Steered", "reins.events.Steered"),
    "StreamEvent": ("reins.core._events", "StreamEvent", "reins.events.StreamEvent"),
    "SubagentEvent": ("reins.core._events", "SubagentEvent", "reins.events.SubagentEvent"),
    "TextDelta": ("reins.core._events", "TextDelta", "reins.events.TextDelta"),
    "ThinkingDelta": ("reins.core._events", "ThinkingDelta", "reins.events.ThinkingDelta"),
    "ToolCallFinished": ("reins.core._events", "ToolCallFinished", "reins.events.ToolCallFinished"),
    "ToolCallStarted": ("reins.core._events", "ToolCallStarted", "reins.events.ToolCallStarted"),
    "ToolsChanged": ("reins.core._events", "ToolsChanged", "reins.events.ToolsChanged"),
    "AfterResponse": ("reins.policies", "AfterResponse", "reins.policies.AfterResponse"),
    "AfterTools": ("reins.policies", "AfterTools", "reins.policies.AfterTools"),
    "BeforeRound": ("reins.policies", "BeforeRound", "reins.policies.BeforeRound"),
    "BeforeTool": ("reins.policies", "BeforeTool", "reins.policies.BeforeTool"),
    "OnFinal": ("reins.policies", "OnFinal", "reins.policies.OnFinal"),
    "BudgetNotices": ("reins.policies", "BudgetNotices", "reins.policies.BudgetNotices"),
    "CostBudget": ("reins.policies", "CostBudget", "reins.policies.CostBudget"),
    "TimeBudget": ("reins.policies", "TimeBudget", "reins.policies.TimeBudget"),
    "TokenBudget": ("reins.policies", "TokenBudget", "reins.policies.TokenBudget"),
    "MaxSteps": ("reins.policies", "MaxSteps", "reins.policies.MaxSteps"),
    "MaxTokensRecovery": (
        "reins.policies",
        "MaxTokensRecovery",
        "reins.policies.MaxTokensRecovery",
    ),
    "EmptyReply": ("reins.policies", "EmptyReply", "reins.policies.EmptyReply"),
    "StrictActions": ("reins.policies", "StrictActions", "reins.policies.StrictActions"),
    "Reflective": ("reins.policies", "Reflective", "reins.policies.Reflective"),
    "Reflect": ("reins.policies", "Reflect", "reins.policies.Reflect"),
    "Reflection": ("reins.policies", "Reflection", "reins.policies.Reflection"),
    "Answer": (
        "reins.core._policy",
        "Replace",
        "reins.Replace (the verdict; the final answer is RunResult.output)",
    ),
    "ReflectiveAgent": ("reins.agent._agent", "ReflectiveAgent", "reins.Agent(reflect=True)"),
}
"""Names that moved in 0.2: (module, attribute, where it lives now)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        from .core._renamed import old_name

        return old_name(__name__, name, _RENAMED)
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "MESSAGES",
    "Agent",
    "AgentRun",
    "Approval",
    "ApprovalRequest",
    "Ask",
    "AssistantMessage",
    "Budgets",
    "CallScope",
    "Cancel",
    "CapHandler",
    "CapOffer",
    "Checks",
    "ContextSettings",
    "ContextTooLarge",
    "Continue",
    "Document",
    "EventLog",
    "Guards",
    "Image",
    "Inject",
    "LogCorrupted",
    "LogUnverified",
    "Memory",
    "MemoryLog",
    "Message",
    "Model",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelInfo",
    "ModelResponse",
    "ModelSettings",
    "ModelTimeout",
    "PermissionRules",
    "Permissions",
    "Policy",
    "QuestionRequest",
    "ReinsError",
    "Reject",
    "Replace",
    "Retrying",
    "Rewrite",
    "RunError",
    "RunInfo",
    "RunNotFound",
    "RunResult",
    "RunState",
    "SQLiteLog",
    "ScriptError",
    "SessionBusy",
    "Stop",
    "StopReason",
    "StoreError",
    "StreamItem",
    "Subagents",
    "SystemMessage",
    "TextChunk",
    "ThinkingBlock",
    "ThinkingChunk",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolResultMessage",
    "ToolSpec",
    "UnknownModel",
    "Usage",
    "UsageError",
    "UserMessage",
    "Verdict",
    "Verified",
    "Workspace",
    "WorkspaceError",
    "register_model",
    "resolve_model",
    "tool",
]
