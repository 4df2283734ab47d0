"""Typed conversation messages: what the model sees, discriminated by `role`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ._errors import UsageError
from ._media import Document, Image, Media


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ToolCall(_Frozen):
    """One tool call requested by the model."""

    id: str
    """Provider call id; a tool result is paired to its call by this id."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    raw_arguments: str | None = None
    """What the model sent, kept only when it was not a JSON object (the call then fails
    with an observation that quotes it)."""


def _zero(value: int) -> bool:
    return value == 0


def _none(value: tuple[object, ...]) -> bool:
    return not value


class Usage(_Frozen):
    """Token counts of one model response, or a sum of them."""

    input_tokens: int = 0
    """All the prompt's tokens, those read from or written to the provider's cache included."""
    output_tokens: int = 0
    requests: int = 0
    # Left out of the log when 0 (most responses): every response records its usage.
    cache_read_tokens: int = Field(default=0, exclude_if=_zero)
    """Of `input_tokens`, those read from the provider's prompt cache (priced lower)."""
    cache_write_tokens: int = Field(default=0, exclude_if=_zero)
    """Of `input_tokens`, those written to the provider's prompt cache (priced higher)."""

    def __add__(self, other: Usage) -> Usage:
        # Straight to the validator (no `__init__` frame): the run's usage is summed each round.
        total: Usage = self.__pydantic_validator__.validate_python(
            {
                "input_tokens": self.input_tokens + other.input_tokens,
                "output_tokens": self.output_tokens + other.output_tokens,
                "requests": self.requests + other.requests,
                "cache_read_tokens": self.cache_read_tokens + other.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens + other.cache_write_tokens,
            }
        )
        return total

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class SystemMessage(_Frozen):
    """The system prompt (reins' base prompt, your instructions, the project's files)."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(_Frozen):
    """A goal, or what the harness tells the model between steps."""

    role: Literal["user"] = "user"
    content: str
    media: tuple[Media, ...] = Field(default=(), exclude_if=_none)
    """Images and documents given with the text, sent after it in this order (in the log:
    references to the log's blobs)."""


class ThinkingBlock(_Frozen):
    """One block of a model's reasoning as its provider sent it, to be sent back unchanged
    (Anthropic checks the signature of thinking it gets back alongside tool use)."""

    text: str = ""
    signature: str = ""
    """Anthropic's signature; the encrypted content of a Responses API reasoning item."""
    redacted: str = ""
    """The encrypted content of a redacted block (its text is empty)."""
    item_id: str = ""
    """The Responses API's id of the reasoning item it came as."""


class AssistantMessage(_Frozen):
    """A model's reply: its text, its reasoning, and the tool calls it made."""

    role: Literal["assistant"] = "assistant"
    text: str = ""
    thinking: str = ""
    """The reasoning as text, for people and for models that take it back as text."""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking_blocks: tuple[ThinkingBlock, ...] = ()
    """The reasoning as the provider's signed blocks, where it gives them."""


class ToolResultMessage(_Frozen):
    """The observation of one tool call, paired by `call_id`."""

    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    content: str
    is_error: bool = False
    media: tuple[Media, ...] = Field(default=(), exclude_if=_none)
    """Images and documents the tool returned (`read_file` of an image), after its text."""


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage,
    Field(discriminator="role"),
]
"""Any message of a conversation."""

MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(
    list[Message], config=ConfigDict(defer_build=True)
)
"""(De)serializes a list of messages."""


class ToolSpec(_Frozen):
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""

    @cached_property
    def parameters_json(self) -> str:
        """`parameters` as JSON text, made once (every run's first request counts it)."""
        return json.dumps(self.parameters)


def cannot_see(media: Media) -> str:
    """What a model that takes no images or documents is told in place of one."""
    return (
        f"[{media.describe()} was given here; this model cannot take {media.kind}s, so it "
        "was not sent]"
    )


Carrier = TypeVar("Carrier", bound=UserMessage | ToolResultMessage)


def unseen(message: Carrier) -> Carrier:
    """`message` with a note in place of each of its images and documents, for a model that
    takes none."""
    notes = [cannot_see(m) for m in message.media]
    content = "\n\n".join([message.content, *notes]) if message.content else "\n\n".join(notes)
    return cast(Carrier, message.model_copy(update={"content": content, "media": ()}))


Goal = str | Sequence[str | Image | Document]
"""What a run is asked: text, or text, images and documents (`["What is wrong?", Image...]`)."""


def goal_message(goal: Goal) -> UserMessage:
    """The user message of `goal`: its texts joined by blank lines, then its images and
    documents in order; a UsageError when it is empty or holds anything else."""
    from ._unicode import escape_text  # it imports this module

    items = [goal] if isinstance(goal, str) else goal
    if not isinstance(items, Sequence):
        raise UsageError(
            f"the goal is a {type(goal).__name__}: give it as text, or a list of texts, "
            "Images and Documents"
        )
    texts: list[str] = []
    media: list[Image | Document] = []
    for item in items:
        if isinstance(item, str):
            if item.strip():  # an argument that was not UTF-8 holds lone surrogates
                texts.append(escape_text(item))
        elif isinstance(item, Image | Document):
            media.append(item)
        else:
            raise UsageError(
                f"the goal holds a {type(item).__name__}: give texts, Images and Documents "
                "(Image.from_path(...), Document.from_path(...))"
            )
    if not texts and not media:
        raise UsageError("the goal is empty; say what the agent should do")
    return UserMessage(content="\n\n".join(texts), media=tuple(media))
