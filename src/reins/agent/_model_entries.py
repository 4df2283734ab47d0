"""The config's `[models."NAME"]` tables: a model's window, output cap and prices where the
catalog has none or yours differ (a model on a server of yours, a price you negotiated).

    [models."vllm:qwen3-32b"]           # the model as --model names it
    context_window = 32768
    max_output = 8192
    [models."openai:gpt-4o-mini"]       # served at OPENAI_BASE_URL, by a gateway that bills
    input_price = 0.15                  # US dollars per million tokens
    output_price = 0.60
    cache_read_price = 0.075            # optional; default: the input price

A project's file may set windows and caps, not prices: a price bounds the user's cost budget.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from ..core._catalog import lookup, register

PRICES = ("input_price", "output_price", "cache_read_price", "cache_write_price")


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int | None = Field(default=None, gt=0)
    max_output: int | None = Field(default=None, gt=0)
    input_price: float | None = Field(default=None, ge=0)
    """US dollars per million input tokens (with `output_price`: the model is priced)."""
    output_price: float | None = Field(default=None, ge=0)
    cache_read_price: float | None = Field(default=None, ge=0)
    cache_write_price: float | None = Field(default=None, ge=0)


def register_entries(entries: dict[str, ModelEntry]) -> None:
    """Each entry over what the catalog knows of its model, as the catalog's entry for it."""
    for name, entry in entries.items():
        known = lookup(name)
        given = entry.model_dump(exclude_none=True)
        # Known once its window is: prices alone leave the assumed window assumed (and said).
        register(name, replace(known, **given, known=known.known or "context_window" in given))


def price_keys(models: object) -> list[str]:
    """The prices a `[models]` table sets, as `models."NAME".KEY`."""
    if not isinstance(models, dict):
        return []
    return [
        f'models."{name}".{key}'
        for name, entry in models.items()
        if isinstance(entry, dict)
        for key in PRICES
        if key in entry
    ]
