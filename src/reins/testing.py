"""Test doubles: models that drive the real loop with no network.

`ScriptedModel` answers from a list, choosing the k-th entry for the k-th assistant turn of the
conversation (a compaction's summary says how many it replaced), so it holds no state and a
resumed run continues the script where the log left it.
`FunctionModel` answers by calling a function of the messages and tools.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from operator import countOf
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .context._compaction import SUMMARY_HEADER
from .core import _model
from .core._errors import ModelError, ScriptError
from .core._events import FinishReason
from .core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolSpec,
    Usage,
    UserMessage,
)
from .core._model import ModelResponse, ModelSettings, StreamItem, TextChunk, ThinkingChunk

__all__ = ["FunctionModel", "ScriptedModel", "block_model_requests", "load_script"]

Reply = AssistantMessage | str | ModelResponse
"""A text, a message, or a whole response (to script usage or a finish reason)."""
FunctionModelFn = Callable[[list[Message], list[ToolSpec]], Reply | Awaitable[Reply]]


class _TestModel:
    """Shared streaming and accounting for the doubles; subclasses implement `_reply`."""

    name: str
    offline = True
    """Allowed while real model requests are blocked."""

    async def _reply(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], turn: int
    ) -> Reply:
        raise NotImplementedError

    usage: Usage | None = None
    """Reported for every reply; None: estimated from the text, four characters a token."""

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        # This runs on every round of every test and benchmark: counted in C where it can be.
        turn = countOf(map(type, messages), AssistantMessage) + _compacted_replies(messages)
        input_tokens = 0 if self.usage else sum(map(_tokens, messages))
        reply = await self._reply(messages, tools, turn)
        if isinstance(reply, ModelResponse):
            return reply
        message = AssistantMessage(text=reply) if isinstance(reply, str) else reply
        finish: FinishReason = "tool_use" if message.tool_calls else "end_turn"
        usage = self.usage or Usage(
            input_tokens=input_tokens, output_tokens=_tokens(message), requests=1
        )
        return ModelResponse(message=message, usage=usage, finish=finish, model_name=self.name)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        response = await self.request(messages, tools, settings)
        if response.message.thinking:
            yield ThinkingChunk(response.message.thinking)
        for piece in _pieces(response.message.text):
            yield TextChunk(piece)
        yield response


class ScriptedModel(_TestModel):
    """Replies with `replies[k]` for the k-th assistant message of the conversation."""

    def __init__(
        self, replies: Sequence[Reply], *, name: str = "scripted", usage: Usage | None = None
    ) -> None:
        self.replies = [_with_call_ids(r, k) for k, r in enumerate(replies)]
        self.name = name
        self.usage = usage

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        # The absolute path goes in the log, so `reins resume` works from any folder.
        return cls(load_script(path), name=f"script:{Path(path).resolve()}")

    async def _reply(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], turn: int
    ) -> Reply:
        if turn >= len(self.replies):
            raise ModelError(f"the script has {len(self.replies)} replies and all were used")
        return self.replies[turn]


class FunctionModel(_TestModel):
    """Replies with whatever `fn(messages, tools)` returns (a string or an AssistantMessage)."""

    def __init__(
        self, fn: FunctionModelFn, *, name: str = "function", usage: Usage | None = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.usage = usage

    async def _reply(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], turn: int
    ) -> Reply:
        reply = self.fn(list(messages), list(tools))
        if inspect.isawaitable(reply):
            reply = await reply
        return reply


@contextmanager
def block_model_requests() -> Iterator[None]:
    """Refuse calls to real models inside the block (the test suite wraps every test in it)."""
    before = _model.ALLOW_MODEL_REQUESTS
    _model.ALLOW_MODEL_REQUESTS = False
    try:
        yield
    finally:
        _model.ALLOW_MODEL_REQUESTS = before


class _ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    id: str | None = None


class _ScriptReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    thinking: str = ""
    tool_calls: list[_ScriptCall] = Field(default_factory=list[_ScriptCall])


def _script_item(where: Path, index: int, item: object) -> str | _ScriptReply:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise ScriptError(f"script {where}: reply {index} must be a text or an object")
    try:
        return _ScriptReply.model_validate(item)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ScriptError(
            f"script {where}: reply {index}: {first['msg']} at {loc}; a reply is a text or "
            '{"text", "thinking", "tool_calls": [{"name", "arguments"}]}'
        ) from None


def load_script(path: str | Path) -> list[Reply]:
    """Read a script file: a JSON list whose items are a reply text or
    `{"text", "thinking", "tool_calls": [{"name", "arguments", "id"?}]}`."""
    where = Path(path)
    try:
        raw = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"cannot read script {where}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScriptError(f"script {where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ScriptError(f"script {where} is nested too deep to read") from None
    if not isinstance(raw, list):
        raise ScriptError(f"script {where} must be a JSON list of replies")
    items = [_script_item(where, index, item) for index, item in enumerate(raw)]
    if not items:
        raise ScriptError(f"script {where} is empty; it needs at least one reply")
    return [
        item
        if isinstance(item, str)
        else AssistantMessage(
            text=item.text,
            thinking=item.thinking,
            tool_calls=tuple(
                ToolCall(id=c.id or "", name=c.name, arguments=c.arguments) for c in item.tool_calls
            ),
        )
        for item in items
    ]


def _with_call_ids(reply: Reply, turn: int) -> Reply:
    if isinstance(reply, ModelResponse):
        return replace(reply, message=_with_call_ids(reply.message, turn))  # type: ignore[arg-type]
    if isinstance(reply, str) or all(call.id for call in reply.tool_calls):
        return reply
    calls = tuple(
        call if call.id else call.model_copy(update={"id": f"call_{turn}_{i}"})
        for i, call in enumerate(reply.tool_calls)
    )
    return reply.model_copy(update={"tool_calls": calls})


_REPLACED = re.compile(re.escape(SUMMARY_HEADER) + r"\n\(In place of your first (\d+) replies")


def _compacted_replies(messages: Sequence[Message]) -> int:
    """The replies a compaction took out of the conversation (its summary says how many), so
    that a scripted model goes on with the right reply."""
    for message in messages:  # the summary comes before any reply: a short search
        # By exact type: `isinstance` with a pydantic class is slow when it misses.
        if type(message) is UserMessage:
            if found := _REPLACED.match(message.content):
                return int(found.group(1))
        elif type(message) is not SystemMessage:
            break
    return 0


def _tokens(message: Message) -> int:
    """A rough token count (four characters a token), cheap enough for benchmarks."""
    match message:
        case AssistantMessage():
            size = len(message.text) + sum(len(str(c.arguments)) for c in message.tool_calls)
        case _:
            size = len(message.content)
    return (size + 3) // 4


def _pieces(text: str) -> Iterator[str]:
    """Split text into word-sized deltas, as a streaming provider would send it."""
    start = 0
    while start < len(text):
        end = text.find(" ", start + 1)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end
