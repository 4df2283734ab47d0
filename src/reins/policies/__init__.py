"""Policies: small objects the loop consults at fixed hook points (see `Policy`)."""

from ._base import (
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
    Reject,
    Stop,
    Verdict,
)
from ._caps import MaxSteps, MaxTokensRecovery
from ._guards import (
    GUARD_NAMES,
    FileActionGuard,
    GoalAnchor,
    Guards,
    LeakedMarkup,
    LoopGuard,
    OneCallPerStep,
    RepeatCache,
    RunFacts,
)
from ._repair import EmptyReply, StrictActions

__all__ = [
    "CONTINUE",
    "GUARD_NAMES",
    "AfterResponse",
    "AfterTools",
    "Answer",
    "BeforeRound",
    "BeforeTool",
    "Continue",
    "EmptyReply",
    "FileActionGuard",
    "GoalAnchor",
    "Guards",
    "Inject",
    "LeakedMarkup",
    "LoopGuard",
    "MaxSteps",
    "MaxTokensRecovery",
    "OnFinal",
    "OneCallPerStep",
    "Policy",
    "Reject",
    "RepeatCache",
    "RunFacts",
    "Stop",
    "StrictActions",
    "Verdict",
]
