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
from ._repair import EmptyReply, StrictActions

__all__ = [
    "CONTINUE",
    "AfterResponse",
    "AfterTools",
    "Answer",
    "BeforeRound",
    "BeforeTool",
    "Continue",
    "EmptyReply",
    "Inject",
    "MaxSteps",
    "MaxTokensRecovery",
    "OnFinal",
    "Policy",
    "Reject",
    "Stop",
    "StrictActions",
    "Verdict",
]
