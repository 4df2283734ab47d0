"""Model providers: OpenAI-compatible servers, Anthropic, the embedded llama.cpp model."""

from ._openai import OpenAIModel
from ._resilience import backoff, resilient

__all__ = ["OpenAIModel", "backoff", "resilient"]
