"""Model providers: OpenAI-compatible servers (chat completions, or the Responses API),
Anthropic, Gemini, Amazon Bedrock, the embedded llama.cpp model.

Names load on first use (PEP 562): the loop needs only the catalog, and the providers bring
their SDKs and the JSON action contract (jsonschema), a tenth of a second to import."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._anthropic import AnthropicModel
    from ._bedrock import BedrockModel
    from ._gemini import GeminiModel
    from ._local import LocalModel
    from ._openai import OpenAIModel
    from ._resilience import backoff, resilient
    from ._responses import OpenAIResponsesModel

_LAZY = {
    "AnthropicModel": "._anthropic",
    "BedrockModel": "._bedrock",
    "GeminiModel": "._gemini",
    "LocalModel": "._local",
    "OpenAIModel": "._openai",
    "OpenAIResponsesModel": "._responses",
    "backoff": "._resilience",
    "resilient": "._resilience",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reins.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AnthropicModel",
    "BedrockModel",
    "GeminiModel",
    "LocalModel",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "backoff",
    "resilient",
]
