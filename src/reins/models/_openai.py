"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp), through the
official `openai` SDK. Retries and stream guards are ours (`resilient`), so the SDK's are off."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..core._errors import ModelConnectionError, ModelTimeout
from ..core._events import FinishReason
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from ..core._model import (
    ALIVE,
    Alive,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ThinkingChunk,
    final_response,
)
from ._media_wire import chat_part, returned_by
from ._provider import SDKModel, tool_call, unfinished
from ._resilience import resilient
from ._sdk_errors import sdk_errors
from ._text_calls import recover

FINISH: dict[str, FinishReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


@dataclass(kw_only=True)
class OpenAIEndpoint(SDKModel):
    """A model behind an OpenAI API and its SDK client."""

    base_url: str | None = None
    """Defaults to OPENAI_BASE_URL, then OpenAI's own."""
    api_key: str | None = None
    """Defaults to OPENAI_API_KEY; local servers take any value."""
    provider: str = "openai"

    @property
    def served_at(self) -> str | None:
        """The base URL the requests go to; None: OpenAI's own API (the catalog prices by it)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def _connect(self) -> Any:
        return _openai().AsyncOpenAI(
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "none",
            max_retries=0,
            timeout=None,  # the stream guards time the call
        )


@dataclass(kw_only=True)
class OpenAIModel(OpenAIEndpoint):
    """A chat-completions model."""

    stream_usage: bool = True
    """Ask for usage in the stream (`stream_options`); turn off for servers that refuse it."""
    text_calls: bool = True
    """Run tool calls the model wrote as text (`<tool_call>` markup, a JSON action in a fence,
    Mistral's `[TOOL_CALLS]`, ...) when the server did not parse them: small models on servers
    with no tool-call parser for them do this (see `_text_calls`). The log says so (a notice)."""
    _streams_tools: bool = field(default=True, init=False, repr=False)
    """Cleared when the server answers a streamed request with tools by an empty stream, or
    drops it (llama-cpp-python's server does): from then on such requests are not streamed."""

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        return await final_response(
            resilient(lambda: self._once(messages, tools, settings), settings)
        )

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        return resilient(lambda: self._attempt(messages, tools, settings), settings)

    def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        if tools and not self._streams_tools:
            return self._once(messages, tools, settings)
        return self._stream_once(messages, tools, settings)

    async def _once(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        """One answer, not streamed: awaited under `request_timeout`, with heartbeats for the
        stall guard meanwhile (a whole answer can take longer than a gap between chunks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.request_timeout
        beat = min(settings.first_chunk_timeout, settings.chunk_timeout) / 2
        request = asyncio.ensure_future(
            self.client().chat.completions.create(**self._params(messages, tools, settings))
        )
        try:
            while not request.done():
                left = deadline - loop.time()
                if left <= 0:
                    raise ModelTimeout(f"no answer in {settings.request_timeout:g} s")
                await asyncio.wait({request}, timeout=min(beat, left))
                if not request.done():
                    yield ALIVE
            with sdk_errors(_openai()):
                completion = request.result()
        finally:
            request.cancel()
        choice = completion.choices[0]
        message = choice.message
        reasoning = getattr(message, "reasoning_content", None) or ""
        calls = tuple(
            tool_call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()
        )
        yield self._response(
            text=message.content or "",
            thinking=reasoning,
            calls=calls,
            usage=_usage(completion.usage),
            reason=choice.finish_reason,
            refusal=message.refusal,
            tools=tools,
            settings=settings,
        )

    async def _stream_once(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        params = self._params(messages, tools, settings)
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        text: list[str] = []
        thinking: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        refusal: str | None = None
        usage = Usage(requests=1)
        chunks = 0
        try:
            with sdk_errors(_openai()):
                stream = await self.client().chat.completions.create(stream=True, **params)
                async with stream:
                    async for chunk in stream:
                        chunks += 1
                        yield ALIVE  # every chunk feeds the stall guard, shown or not
                        if chunk.usage is not None:
                            usage = _usage(chunk.usage)
                        if not chunk.choices:
                            continue
                        choice = chunk.choices[0]
                        delta = choice.delta
                        finish = choice.finish_reason or finish
                        refusal = delta.refusal or refusal
                        if reasoning := getattr(delta, "reasoning_content", None):
                            thinking.append(reasoning)
                            yield ThinkingChunk(reasoning)
                        if delta.content:
                            text.append(delta.content)
                            yield TextChunk(delta.content)
                        for part in delta.tool_calls or ():
                            acc = calls.setdefault(
                                part.index, {"id": "", "name": "", "arguments": ""}
                            )
                            acc["id"] = part.id or acc["id"]
                            if part.function is not None:
                                acc["name"] += part.function.name or ""
                                acc["arguments"] += part.function.arguments or ""
        except ModelConnectionError:
            if chunks or not tools:
                raise
            # Some servers drop a streamed request with tools instead of answering it
            # (llama-cpp-python's does); below, the same request is made without streaming.
        if chunks == 0 and tools:
            self._streams_tools = False
            async for item in self._once(messages, tools, settings):
                yield item
            return
        if finish is None:
            raise unfinished()
        tool_calls = tuple(
            tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())
        )
        yield self._response(
            text="".join(text),
            thinking="".join(thinking),
            calls=tool_calls,
            usage=usage,
            reason=finish,
            refusal=refusal,
            tools=tools,
            settings=settings,
        )

    def _response(
        self,
        *,
        text: str,
        thinking: str,
        calls: tuple[ToolCall, ...],
        usage: Usage,
        reason: str | None,
        refusal: str | None,
        tools: Sequence[ToolSpec],
        settings: ModelSettings,
    ) -> ModelResponse:
        """The response; tool calls the model wrote as text become calls, where it may call."""
        notes: tuple[str, ...] = ()
        may_call = tools and settings.tool_choice != "none" and not refusal
        if not calls and self.text_calls and may_call and (found := recover(text, tools)):
            text, calls, notes = found.text, found.calls, (found.note(),)
        return ModelResponse(
            message=AssistantMessage(text=text, thinking=thinking, tool_calls=calls),
            usage=usage,
            finish=_finish(reason, refusal, calls),
            model_name=self.name,
            notes=notes,
        )

    def _params(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": _conversation(messages),
        }
        if tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            params["tool_choice"] = settings.tool_choice
        reasoning = _reasons(self.model)
        if settings.max_tokens is not None:
            # OpenAI's own API and its reasoning models take the newer name; other servers
            # (vLLM, llama.cpp, Ollama) know the older one.
            newer = reasoning or (self.provider == "openai" and self._official)
            params["max_completion_tokens" if newer else "max_tokens"] = settings.max_tokens
        if settings.temperature is not None and not reasoning:  # they refuse one
            params["temperature"] = settings.temperature
        if settings.reasoning_effort is not None:
            params["reasoning_effort"] = settings.reasoning_effort
        return params

    @property
    def _official(self) -> bool:
        """Talking to OpenAI's own API (no other base URL given)."""
        return not (self.base_url or os.environ.get("OPENAI_BASE_URL"))


REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)")
"""OpenAI's reasoning models (o1, o3, o4-mini, gpt-5...): no temperature, max_completion_tokens."""


def _reasons(model: str) -> bool:
    return REASONING.match(model) is not None


def _conversation(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages on the wire. A tool message holds text only: the images and documents of
    a step's results follow its last result, in one user message that says whose they are."""
    wire: list[dict[str, Any]] = []
    returned: list[dict[str, Any]] = []
    for message in messages:
        if returned and not isinstance(message, ToolResultMessage):
            wire.append({"role": "user", "content": returned})
            returned = []
        wire.append(_wire(message))
        if isinstance(message, ToolResultMessage):
            for media in message.media:
                text = returned_by(media, message.name, message.call_id)
                returned += [{"type": "text", "text": text}, chat_part(media)]
    if returned:
        wire.append({"role": "user", "content": returned})
    return wire


def _wire(message: Message) -> dict[str, Any]:
    match message:
        case SystemMessage():
            return {"role": message.role, "content": message.content}
        case UserMessage():
            if not message.media:
                return {"role": "user", "content": message.content}
            text = [{"type": "text", "text": message.content}] if message.content else []
            return {"role": "user", "content": text + [chat_part(m) for m in message.media]}
        case AssistantMessage():
            wire: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                wire["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": _arguments(c)},
                    }
                    for c in message.tool_calls
                ]
            return wire
        case ToolResultMessage():
            return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}


def _arguments(call: ToolCall) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage(requests=1)
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        requests=1,
        cache_read_tokens=getattr(details, "cached_tokens", None) or 0,
    )


def _finish(reason: str | None, refusal: str | None, calls: tuple[ToolCall, ...]) -> FinishReason:
    if refusal:
        return "refusal"
    finish = FINISH.get(reason or "stop", "end_turn")
    # Some servers say "stop" after tool calls; what was sent decides.
    return "tool_use" if finish == "end_turn" and calls else finish


def _openai() -> ModuleType:
    import openai  # on first use: it costs a tenth of a second

    return openai
