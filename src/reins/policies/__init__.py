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
    Verified,
)
from ._caps import MaxSteps, MaxTokensRecovery
from ._checks import Checks
from ._repair import EmptyReply, StrictActions
from ._stop_hooks import CommandHook, StopHook, StopHookFunction, StopHooks
from ._verify import NoVerifier

__all__ = [
    "CONTINUE",
    "AfterResponse",
    "AfterTools",
    "Answer",
    "BeforeRound",
    "BeforeTool",
    "Checks",
    "CommandHook",
    "Continue",
    "EmptyReply",
    "Inject",
    "MaxSteps",
    "MaxTokensRecovery",
    "NoVerifier",
    "OnFinal",
    "Policy",
    "Reject",
    "Stop",
    "StopHook",
    "StopHookFunction",
    "StopHooks",
    "StrictActions",
    "Verdict",
    "Verified",
]
