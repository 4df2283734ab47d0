"""The model protocol: what the loop needs from any provider."""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ._catalog import lookup
from ._errors import UsageError
from ._events import FinishReason
from ._messages import AssistantMessage, Message, ToolSpec, Usage


def _env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name}={raw!r} is not a number of seconds above 0")
    return value


@dataclass(kw_only=True, frozen=True)
class ModelSettings:
    """How a model is called: output cap, sampling, tool choice, reasoning, and the timeouts
    and retries around each call. Checked when made: a value no provider takes is an error."""

    max_tokens: int | None = None
    """Cap on output tokens of one response."""
    temperature: float | None = None
    tool_choice: Literal["auto", "required", "none"] = "auto"
    excluded_tools: frozenset[str] = frozenset()
    """Tools the reply may not call, though they stay offered: the prompt (and a provider's
    cache of it) does not change. The embedded model's grammar leaves them out; the other
    providers have no such setting and ignore it. Set for one request by a repair."""
    argument_schemas: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict[str, Mapping[str, Any]]
    )
    """JSON schemas that replace some arguments' of a tool in the reply, by tool and
    argument (an edit's `old` held to the lines of the file it failed on): the embedded
    model's grammar holds to them; the other providers ignore them, and the tool's own
    schema in the prompt stays as it is. Set for one request by a repair."""
    thinking_budget: int | None = None
    """Tokens the model may spend reasoning before it answers (Anthropic's extended thinking,
    Claude's on Bedrock, Gemini's thinking budget); None: the provider's default."""
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """How hard an OpenAI reasoning model (o-series, gpt-5) thinks, or Gemini's thinking level;
    None: its default."""
    first_chunk_timeout: float = field(
        default_factory=lambda: _env_seconds("REINS_FIRST_CHUNK_TIMEOUT", 90.0)
    )
    """Seconds to wait for the first chunk of a response (prefill included)."""
    chunk_timeout: float = field(default_factory=lambda: _env_seconds("REINS_CHUNK_TIMEOUT", 60.0))
    """Seconds to wait between two chunks before the stream counts as stalled."""
    request_timeout: float = 600.0
    """Seconds for a whole answer that is not streamed (it has no chunks to time)."""
    max_retries: int = 4
    """Retries of a transient failure (connection, timeout, 408/409/429/5xx) per model call."""
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    """Cap on one wait between retries, Retry-After included."""

    def __post_init__(self) -> None:
        if self.tool_choice not in ("auto", "required", "none"):
            raise UsageError(f"tool_choice={self.tool_choice!r}: say auto, required or none")
        if self.reasoning_effort not in (None, "minimal", "low", "medium", "high"):
            raise UsageError(
                f"reasoning_effort={self.reasoning_effort!r}: say minimal, low, medium or high"
            )
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise UsageError(f"temperature={self.temperature!r}: it is from 0 to 2")
        for name in ("max_tokens", "thinking_budget"):
            if (value := getattr(self, name)) is not None and value < 1:
                raise UsageError(f"{name}={value!r}: it is 1 or more (None: the default)")


@dataclass(kw_only=True, frozen=True)
class ModelResponse:
    """One whole reply of a model: the message, its token usage, why it stopped (`finish`)
    and the model that answered."""

    message: AssistantMessage
    usage: Usage
    finish: FinishReason
    model_name: str
    notes: tuple[str, ...] = ()
    """What the provider did to the reply that the log should show (tool calls it recovered
    from the text, say); the loop records each as a notice."""


@dataclass(frozen=True)
class TextChunk:
    """A piece of a reply's text as it streams."""

    text: str


@dataclass(frozen=True)
class ThinkingChunk:
    """A piece of a reply's reasoning (thinking) as it streams."""

    text: str


@dataclass(frozen=True)
class Retrying:
    """A transient failure; the call is made again after `delay` seconds. Deltas already
    streamed belong to the failed attempt."""

    attempt: int
    delay: float
    error: str


@dataclass(frozen=True)
class Alive:
    """A provider got a chunk with nothing to show (a piece of a tool call, usage): it feeds
    the stall guard and goes no further."""


ALIVE = Alive()

StreamItem = TextChunk | ThinkingChunk | Retrying | ModelResponse
"""What `Model.stream` yields: deltas (and retry notices), then exactly one `ModelResponse`."""


@runtime_checkable
class Model(Protocol):
    """What the loop calls: any object with a `name` and these two methods is a model
    (`OpenAIModel`, `AnthropicModel`, `LocalModel`, the test doubles of `reins.testing`)."""

    @property
    def name(self) -> str:
        """`provider:model`, as the log records it (and `reins resume` resolves it again)."""
        ...

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """One reply to `messages`, with `tools` offered, as a whole."""
        ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The same reply as it comes: text and thinking chunks (and retry notices), then
        exactly one `ModelResponse`."""
        ...


def takes_media(model: Model) -> bool:
    """Whether `model` is sent images and documents: not when it says it takes none (its
    `vision` is False: the embedded models), nor when the catalog knows it has no vision; a
    model the catalog does not know is sent them (its server says so if it cannot)."""
    vision: bool | None = getattr(model, "vision", None)
    if vision is not None:
        return vision
    info = lookup(model.name)
    return info.vision or not info.known


ALLOW_MODEL_REQUESTS = True
"""False (inside `reins.testing.block_model_requests`) refuses calls to any model that is not
a test double; the loop checks before every call, so no provider can forget to."""


def ensure_requests_allowed(model: Model) -> None:
    if not ALLOW_MODEL_REQUESTS and not getattr(model, "offline", False):
        raise UsageError(
            f"real model requests are disabled here (model {model.name!r}); "
            "mark the test with @pytest.mark.real_model to allow them"
        )


async def final_response(items: AsyncIterator[StreamItem]) -> ModelResponse:
    """The `ModelResponse` that ends a stream: `Model.request` in terms of `Model.stream`."""
    response: ModelResponse | None = None
    async for item in items:
        if isinstance(item, ModelResponse):
            response = item
    if response is None:
        from ._errors import ModelError

        raise ModelError("the model stream ended without a response")
    return response
