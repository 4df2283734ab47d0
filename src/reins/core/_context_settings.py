"""`ContextSettings`: how a run's context is kept inside its model's window.

A run's config records them (`RunConfig.context`), so a resume and a replay build the same view.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core._errors import UsageError


@dataclass(frozen=True, kw_only=True)
class ContextSettings:
    """Token accounting and compaction (`Agent(context=...)`, the config's `[context]`)."""

    window: int | None = None
    """The model's context window in tokens; None: what the model says (the embedded model:
    the context it allocated), else the model catalog."""
    compaction: bool = True
    """Compact the history before a model call that would pass `threshold` of the window;
    False: a run that outgrows its window stops (`error`, "context too large")."""
    threshold: float = 0.8
    """The share of the window past which the history is compacted."""
    keep_recent: int = 6
    """Messages at the end of the history kept verbatim by a compaction."""
    compaction_model: str | None = None
    """The model string that summarizes the compacted part; None: the cheapest catalogued
    model of the run's hosted provider, else the run's own model. Offline, or if it fails,
    a deterministic digest takes its place."""
    summary_chars: int = 8000
    """Characters of the compacted part's transcript the summarizer is given, at most."""
    message_token_budget: int | None = None
    """Tokens of one message sent as is; a longer one is cut (head and tail) in the request
    only, never in the log. None: a sixth of the window."""

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 256:
            raise UsageError(f"context window {self.window} is too small; give 256 tokens or more")
        if not 0.1 <= self.threshold <= 1.0:
            raise UsageError(f"compaction threshold {self.threshold} must be between 0.1 and 1")
        if self.keep_recent < 1:
            raise UsageError(f"keep_recent {self.keep_recent} must be at least 1")
        if self.summary_chars < 500:
            raise UsageError(f"summary_chars {self.summary_chars} must be at least 500")
        if self.message_token_budget is not None and self.message_token_budget < 64:
            raise UsageError(
                f"message_token_budget {self.message_token_budget} must be at least 64"
            )
