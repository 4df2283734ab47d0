"""Token accounting: how big a request is, and how big it may be.

A provider's own count of the last prompt is the best figure there is; what was added since is
estimated at three characters a token (a conservative guess for English and code), and a model
that can count exactly (the embedded one, with its own tokenizer) is asked instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..core._catalog import lookup
from ..core._context_settings import ContextSettings
from ..core._messages import AssistantMessage, Message, ToolResultMessage, ToolSpec, UserMessage
from ..core._model import Model

CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds around each message (role markers, separators)."""

Counter = Callable[[Sequence[Message], Sequence[ToolSpec]], int]


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def message_text(message: Message) -> str:
    """All the text of a message that reaches the model."""
    # By exact type: `isinstance` with a pydantic class is slow when it misses.
    if type(message) is ToolResultMessage:
        return message.name + message.content
    match message:
        case AssistantMessage():
            calls = "".join(
                f"{c.name}{c.arguments}" for c in message.tool_calls
            )  # about JSON's size
            return message.thinking + message.text + calls
        case _:
            return message.content


def estimate(messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
    """Tokens of a request, by the characters heuristic."""
    listed = sum(text_tokens(t.description + t.parameters_json) for t in tools)
    told = sum(text_tokens(message_text(m)) + MESSAGE_OVERHEAD for m in messages)
    return listed + told + sum(media_tokens(m) for m in messages)


def media_tokens(message: Message) -> int:
    """The guessed tokens of a message's images and documents (`Image.tokens`)."""
    if type(message) is ToolResultMessage or type(message) is UserMessage:
        return sum(m.tokens for m in message.media)
    return 0


def counter_of(model: Model) -> Counter | None:
    """The model's exact count (`count_tokens(messages, tools)`), if it has one."""
    count: Any = getattr(model, "count_tokens", None)
    return count if callable(count) else None


def window_of(model: Model, settings: ContextSettings) -> int:
    """The context window a run works in: the settings', else the model's own (the embedded
    model's allocated context), else the catalog's."""
    if settings.window is not None:
        return settings.window
    own = getattr(model, "context_window", None)
    if isinstance(own, int) and own > 0:
        return own
    return lookup(model.name).context_window
