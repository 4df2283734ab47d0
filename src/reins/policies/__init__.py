"""Policies: small objects the loop consults at fixed hook points (see `Policy`)."""

from typing import Any

from ..core._caps import CAP_REASONS, CapHandler, CapOffer
from ..core._guard_settings import GUARD_NAMES, Guards
from ..core._policy import (
    CONTINUE,
    AfterResponse,
    AfterTools,
    BeforeRound,
    BeforeTool,
    Continue,
    Inject,
    OnFinal,
    Policy,
    Reflect,
    Reflection,
    Reject,
    Replace,
    Rewrite,
    Stop,
    Verdict,
    Verified,
)
from ..core._renamed import old_name
from ._budgets import (
    BudgetNotices,
    CostBudget,
    TimeBudget,
    TokenBudget,
    budget_policies,
    budget_stops,
)
from ._caps import MaxSteps, MaxTokensRecovery
from ._checks import CheckCommands
from ._command_hooks import HOOK_EVENTS, Hook, HookEvent, hook_policies
from ._guards import (
    FileActionGuard,
    GoalAnchor,
    LeakedMarkup,
    LoopGuard,
    OneCallPerStep,
    RepeatCache,
    RunFacts,
    guard_policies,
)
from ._reflect import Reflective, parse_reflection
from ._repair import EmptyReply, StrictActions
from ._stop_hooks import CommandHook, StopHook, StopHookFunction, StopHooks
from ._verify import NoVerifier

__all__ = [
    "CAP_REASONS",
    "CONTINUE",
    "GUARD_NAMES",
    "HOOK_EVENTS",
    "AfterResponse",
    "AfterTools",
    "BeforeRound",
    "BeforeTool",
    "BudgetNotices",
    "CapHandler",
    "CapOffer",
    "CheckCommands",
    "CommandHook",
    "Continue",
    "CostBudget",
    "EmptyReply",
    "FileActionGuard",
    "GoalAnchor",
    "Guards",
    "Hook",
    "HookEvent",
    "Inject",
    "LeakedMarkup",
    "LoopGuard",
    "MaxSteps",
    "MaxTokensRecovery",
    "NoVerifier",
    "OnFinal",
    "OneCallPerStep",
    "Policy",
    "Reflect",
    "Reflection",
    "Reflective",
    "Reject",
    "RepeatCache",
    "Replace",
    "Rewrite",
    "RunFacts",
    "Stop",
    "StopHook",
    "StopHookFunction",
    "StopHooks",
    "StrictActions",
    "TimeBudget",
    "TokenBudget",
    "Verdict",
    "Verified",
    "budget_policies",
    "budget_stops",
    "guard_policies",
    "hook_policies",
    "parse_reflection",
]

_RENAMED = {
    "Answer": ("reins.core._policy", "Replace", "reins.Replace"),
    "Checks": ("reins.policies._checks", "CheckCommands", "reins.policies.CheckCommands"),
}


def __getattr__(name: str) -> Any:
    return old_name(__name__, name, _RENAMED)
