"""Model providers: OpenAI-compatible servers, Anthropic, the embedded llama.cpp model."""

from ._anthropic import AnthropicModel
from ._local import LocalModel
from ._openai import OpenAIModel
from ._resilience import backoff, resilient

__all__ = ["AnthropicModel", "LocalModel", "OpenAIModel", "backoff", "resilient"]
