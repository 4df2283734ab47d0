"""The model protocol: what the loop needs from any provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._errors import UsageError
from ._events import FinishReason
from ._messages import AssistantMessage, Message, ToolSpec, Usage


@dataclass(kw_only=True, frozen=True)
class ModelSettings:
    max_tokens: int | None = None
    """Cap on output tokens of one response."""
    temperature: float | None = None


@dataclass(kw_only=True, frozen=True)
class ModelResponse:
    message: AssistantMessage
    usage: Usage
    finish: FinishReason
    model_name: str


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ThinkingChunk:
    text: str


StreamItem = TextChunk | ThinkingChunk | ModelResponse
"""What `Model.stream` yields: deltas, then exactly one `ModelResponse` last."""


@runtime_checkable
class Model(Protocol):
    @property
    def name(self) -> str: ...

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse: ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]: ...


ALLOW_MODEL_REQUESTS = True
"""Set to False (the test suite does) to refuse every call to a real model."""


def ensure_requests_allowed(model_name: str) -> None:
    """Called by every provider that reaches a real model, before it sends anything."""
    if not ALLOW_MODEL_REQUESTS:
        raise UsageError(
            f"real model requests are disabled here (model {model_name!r}); "
            "mark the test with @pytest.mark.real_model to allow them"
        )
