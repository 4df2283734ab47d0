"""Policies: small objects the loop consults at fixed hook points (see `Policy`)."""

from ..core._caps import CAP_REASONS, CapHandler, CapOffer
from ..core._guard_settings import GUARD_NAMES, Guards
from ..core._policy import (
    CONTINUE,
    AfterResponse,
    AfterTools,
    Answer,
    BeforeRound,
    BeforeTool,
    Continue,
    Inject,
    OnFinal,
    Policy,
    Reflect,
    Reflection,
    Reject,
    Rewrite,
    Stop,
    Verdict,
    Verified,
)
from ._budgets import (
    BudgetNotices,
    CostBudget,
    TimeBudget,
    TokenBudget,
    budget_policies,
    budget_stops,
)
from ._caps import MaxSteps, MaxTokensRecovery
from ._checks import Checks
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
    "Answer",
    "BeforeRound",
    "BeforeTool",
    "BudgetNotices",
    "CapHandler",
    "CapOffer",
    "Checks",
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
