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
"""False (inside `reins.testing.block_model_requests`) refuses calls to any model that is not
a test double; the loop checks before every call, so no provider can forget to."""


def ensure_requests_allowed(model: Model) -> None:
    if not ALLOW_MODEL_REQUESTS and not getattr(model, "offline", False):
        raise UsageError(
            f"real model requests are disabled here (model {model.name!r}); "
            "mark the test with @pytest.mark.real_model to allow them"
        )
