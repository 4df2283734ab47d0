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
from ._budgets import (
    CAP_REASONS,
    BudgetNotices,
    CapHandler,
    CapOffer,
    CostBudget,
    TimeBudget,
    TokenBudget,
    budget_policies,
)
from ._caps import MaxSteps, MaxTokensRecovery
from ._repair import EmptyReply, StrictActions

__all__ = [
    "CAP_REASONS",
    "CONTINUE",
    "AfterResponse",
    "AfterTools",
    "Answer",
    "BeforeRound",
    "BeforeTool",
    "BudgetNotices",
    "CapHandler",
    "CapOffer",
    "Continue",
    "CostBudget",
    "EmptyReply",
    "Inject",
    "MaxSteps",
    "MaxTokensRecovery",
    "OnFinal",
    "Policy",
    "Reject",
    "Stop",
    "StrictActions",
    "TimeBudget",
    "TokenBudget",
    "Verdict",
    "budget_policies",
]
