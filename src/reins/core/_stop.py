"""Why a run ended: a closed enum, importable without loading the rest of reins."""

from __future__ import annotations

from enum import StrEnum


class StopReason(StrEnum):
    """Why a run ended. Closed: the loop and every reader match it exhaustively."""

    END_TURN = "end_turn"
    CANCELLED = "cancelled"
    MAX_STEPS = "max_steps"
    MAX_TOKENS = "max_tokens"
    TOKEN_BUDGET = "token_budget"
    TIME_BUDGET = "time_budget"
    COST_BUDGET = "cost_budget"
    REFUSAL = "refusal"
    MISSING_EVIDENCE = "missing_evidence"
    STALLED = "stalled"
    """Went in circles or made no progress, and went on after a warning (`LoopGuard`); or the
    reflection judged `reflect_max_retries` steps in a row failed (`Reflective`)."""
    ERROR = "error"
    WAITING = "waiting"
    """Paused until a person answers its approval requests; resume it with the answers."""
