"""What reins knows about common models: limits, prices, capabilities.

Prices are US dollars per million tokens as the providers published them in 2025; pass your own
`ModelInfo` to `register` where they differ. A model not listed runs with conservative limits,
no price, and a notice in the run's log.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    context_window: int
    max_output: int
    input_price: float | None = None
    """USD per million input tokens; None: unknown (no cost is accounted)."""
    output_price: float | None = None
    tools: bool = True
    thinking: bool = False
    vision: bool = False
    known: bool = True

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        if self.input_price is None or self.output_price is None:
            return None
        return (input_tokens * self.input_price + output_tokens * self.output_price) / 1e6


UNKNOWN = ModelInfo(context_window=8192, max_output=2048, known=False)
"""Conservative limits for a model reins has no facts about."""

FREE_LOCAL = ModelInfo(context_window=8192, max_output=2048, input_price=0.0, output_price=0.0)

CATALOG: dict[str, ModelInfo] = {
    # OpenAI
    "gpt-4o": ModelInfo(
        context_window=128_000, max_output=16_384, input_price=2.5, output_price=10.0, vision=True
    ),
    "gpt-4o-mini": ModelInfo(
        context_window=128_000, max_output=16_384, input_price=0.15, output_price=0.6, vision=True
    ),
    "gpt-4.1": ModelInfo(
        context_window=1_047_576, max_output=32_768, input_price=2.0, output_price=8.0, vision=True
    ),
    "gpt-4.1-mini": ModelInfo(
        context_window=1_047_576, max_output=32_768, input_price=0.4, output_price=1.6, vision=True
    ),
    "gpt-4.1-nano": ModelInfo(
        context_window=1_047_576, max_output=32_768, input_price=0.1, output_price=0.4, vision=True
    ),
    "o3": ModelInfo(
        context_window=200_000,
        max_output=100_000,
        input_price=2.0,
        output_price=8.0,
        thinking=True,
        vision=True,
    ),
    "o4-mini": ModelInfo(
        context_window=200_000,
        max_output=100_000,
        input_price=1.1,
        output_price=4.4,
        thinking=True,
        vision=True,
    ),
    # Anthropic
    "claude-opus-4": ModelInfo(
        context_window=200_000,
        max_output=32_000,
        input_price=15.0,
        output_price=75.0,
        thinking=True,
        vision=True,
    ),
    "claude-sonnet-4": ModelInfo(
        context_window=200_000,
        max_output=64_000,
        input_price=3.0,
        output_price=15.0,
        thinking=True,
        vision=True,
    ),
    "claude-3-7-sonnet": ModelInfo(
        context_window=200_000,
        max_output=64_000,
        input_price=3.0,
        output_price=15.0,
        thinking=True,
        vision=True,
    ),
    "claude-3-5-haiku": ModelInfo(
        context_window=200_000, max_output=8_192, input_price=0.8, output_price=4.0, vision=True
    ),
    # Open models, run locally or on a server of your own: no price.
    "llama3.2": FREE_LOCAL,
    "llama3.1": ModelInfo(
        context_window=131_072, max_output=4096, input_price=0.0, output_price=0.0
    ),
    "qwen2.5": ModelInfo(context_window=32_768, max_output=8192, input_price=0.0, output_price=0.0),
    "smollm2": FREE_LOCAL,
    "local": FREE_LOCAL,
}


_found: dict[str, ModelInfo] = {}
"""Lookups already made: the loop prices every response."""


def lookup(model_name: str) -> ModelInfo:
    """Facts for a model name such as `openai:gpt-4o-2024-08-06` or `anthropic:claude-sonnet-4-5`:
    the provider prefix is dropped and the longest catalog name the rest starts with wins."""
    info = _found.get(model_name)
    if info is None:
        info = _found[model_name] = _search(model_name)
    return info


def _search(model_name: str) -> ModelInfo:
    provider, _, name = model_name.rpartition(":")
    if provider == "local" or model_name == "local":
        return CATALOG["local"]
    name = name.lower()
    best = max((key for key in CATALOG if name.startswith(key)), key=len, default=None)
    return UNKNOWN if best is None else CATALOG[best]


def register(name: str, info: ModelInfo) -> None:
    """Add or correct a catalog entry (for example your negotiated prices)."""
    CATALOG[name.lower()] = info
    _found.clear()
