"""Anthropic's Messages API (and servers that speak it, such as llama.cpp's `llama-server`),
through the official `anthropic` SDK; retries and stream guards are ours, as for OpenAI."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..core._errors import UsageError
from ..core._events import FinishReason
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
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
)
from ._media_wire import anthropic_block
from ._provider import (
    SDKModel,
    Turns,
    assistant_message,
    cached_apart,
    system_prompt,
    tool_call,
    unfinished,
)
from ._resilience import Retried
from ._sdk_errors import sdk_errors

FINISH: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
DEFAULT_MAX_TOKENS = 8192
"""The Messages API requires a cap on output; this one when the settings give none."""


@dataclass(kw_only=True)
class AnthropicModel(Retried, SDKModel):
    """A Claude model through Anthropic's Messages API (the official SDK): streaming, tool
    use, extended thinking, and prompt caching of the system prompt, tools and history."""

    base_url: str | None = None
    """Defaults to ANTHROPIC_BASE_URL, then Anthropic's own."""
    api_key: str | None = None
    """Defaults to ANTHROPIC_API_KEY."""
    provider: str = "anthropic"
    """Names it in logs: an endpoint of the config speaking the Messages API has its own."""
    prompt_cache: bool = True
    """Mark the tools, the system prompt and the latest turns as cacheable (`cache_control`),
    so that each step of a run reads the prefix the step before wrote at a tenth of the price."""

    @property
    def served_at(self) -> str | None:
        """The base URL the requests go to; None: Anthropic's own API (the catalog prices by
        it)."""
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None

    def _connect(self) -> Any:
        return _anthropic().AsyncAnthropic(
            base_url=self.base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            api_key=self.api_key or os.environ.get("ANTHROPIC_API_KEY") or "none",
            max_retries=0,
            timeout=None,  # the stream guards time the call
        )

    async def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        blocks: dict[int, dict[str, Any]] = {}
        usage = Usage(requests=1)
        stop: str | None = None
        with sdk_errors(_anthropic()):
            stream = await self.client().messages.create(
                stream=True,
                **_params(self.model, messages, tools, settings, cache=self.prompt_cache),
            )
            async with stream:
                async for event in stream:
                    yield ALIVE
                    match event.type:
                        case "message_start":
                            usage = _usage(event.message.usage)
                        case "content_block_start":
                            block = event.content_block
                            blocks[event.index] = {
                                "type": block.type,
                                "text": "",
                                "id": getattr(block, "id", ""),
                                "name": getattr(block, "name", ""),
                                "signature": getattr(block, "signature", "") or "",
                                "data": getattr(block, "data", "") or "",  # redacted thinking
                            }
                        case "content_block_delta":
                            chunk = _delta(blocks[event.index], event.delta)
                            if chunk is not None:
                                yield chunk
                        case "message_delta":
                            stop = event.delta.stop_reason or stop
                            output = event.usage.output_tokens or usage.output_tokens
                            usage = usage.model_copy(update={"output_tokens": output})
        if stop is None:
            raise unfinished()
        message = _message(blocks)
        yield ModelResponse(
            message=message,
            usage=usage,
            finish=FINISH.get(stop, "end_turn"),
            model_name=self.name,
        )


def _usage(usage: Any) -> Usage:
    """The API counts the prompt's tokens read from or written to its cache apart from
    `input_tokens`; reins counts all the prompt's tokens as input, the cached ones among them."""
    return cached_apart(
        getattr(usage, "input_tokens", None) or 0,
        0,  # counted as the reply streams (`message_delta`)
        getattr(usage, "cache_read_input_tokens", None) or 0,
        getattr(usage, "cache_creation_input_tokens", None) or 0,
    )


def _delta(block: dict[str, Any], delta: Any) -> StreamItem | None:
    """Accumulate one delta into its block; what a person would see streams on."""
    match delta.type:
        case "text_delta":
            block["text"] += delta.text
            return TextChunk(delta.text)
        case "thinking_delta":
            block["text"] += delta.thinking
            return ThinkingChunk(delta.thinking)
        case "input_json_delta":
            block["text"] += delta.partial_json
        case "signature_delta":
            block["signature"] += delta.signature
    return None


def _message(blocks: dict[int, dict[str, Any]]) -> AssistantMessage:
    text, calls, thinking = [], [], []
    for _, block in sorted(blocks.items()):
        match block["type"]:
            case "text":
                text.append(block["text"])
            case "thinking":
                thinking.append(ThinkingBlock(text=block["text"], signature=block["signature"]))
            case "redacted_thinking":
                thinking.append(ThinkingBlock(redacted=block["data"]))
            case "tool_use":
                calls.append(tool_call(block["id"], block["name"], block["text"]))
    return assistant_message(text, calls, thinking)


def _params(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    settings: ModelSettings,
    *,
    cache: bool = False,
) -> dict[str, Any]:
    system = system_prompt(messages)
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": _wire(messages),
    }
    if system:
        params["system"] = system
    thinking = settings.thinking_budget
    if thinking is not None:
        if params["max_tokens"] <= thinking:
            raise UsageError(
                f"max_tokens ({params['max_tokens']}) must exceed thinking_budget ({thinking}): "
                "the answer comes on top of the thinking"
            )
        params["thinking"] = {"type": "enabled", "budget_tokens": thinking}
    elif settings.temperature is not None:  # extended thinking takes no temperature
        # Newer SDK releases no longer take `temperature`; servers that do still read it.
        params["extra_body"] = {"temperature": settings.temperature}
    if tools:
        # Sent even when none may be called: the API refuses a history with tool_use or
        # tool_result blocks and no tools.
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        # With extended thinking the API allows only `auto` and `none`.
        forced = settings.tool_choice == "required" and thinking is None
        choice = "none" if settings.tool_choice == "none" else "any" if forced else "auto"
        params["tool_choice"] = {"type": choice}
    if cache:
        _mark_cacheable(params)
    return params


def _mark_cacheable(params: dict[str, Any]) -> None:
    """Cache breakpoints (four at most, the API's limit) after the tools, the system prompt
    and the two latest user turns: the latest writes this request's prefix to the cache, the
    one before reads what the previous step wrote, since its prompt ended there."""
    if "tools" in params:
        params["tools"][-1]["cache_control"] = {"type": "ephemeral"}
    if "system" in params:
        params["system"] = [
            {"type": "text", "text": params["system"], "cache_control": {"type": "ephemeral"}}
        ]
    users = [turn for turn in params["messages"] if turn["role"] == "user"]
    for turn in users[-2:]:
        turn["content"][-1]["cache_control"] = {"type": "ephemeral"}


def _wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Turns alternate user and assistant, each a list of content blocks; a call's results go
    back together in the next user turn, as the API requires."""
    turns = Turns()
    for message in messages:
        match message:
            case SystemMessage():
                pass  # sent as `system`
            case UserMessage():
                given = [anthropic_block(m) for m in message.media]  # after the text
                if message.content or not given:
                    given.insert(0, {"type": "text", "text": message.content})
                turns.add("user", given)
            case AssistantMessage():
                # Signed thinking goes back first and unchanged; unsigned (another provider's)
                # cannot go back at all.
                blocks: list[dict[str, Any]] = [
                    {"type": "redacted_thinking", "data": b.redacted}
                    if b.redacted
                    else {"type": "thinking", "thinking": b.text, "signature": b.signature}
                    for b in message.thinking_blocks
                    if (b.signature or b.redacted) and not b.item_id  # not another API's
                ]
                if message.text:
                    blocks.append({"type": "text", "text": message.text})
                blocks.extend(
                    {
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": c.arguments if c.raw_arguments is None else {},
                    }
                    for c in message.tool_calls
                )
                turns.add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
            case ToolResultMessage():
                result = {
                    "type": "tool_result",
                    "tool_use_id": message.call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                }
                if message.media:  # a result's content may hold images and documents too
                    returned = [anthropic_block(m) for m in message.media]
                    if message.content:
                        returned.insert(0, {"type": "text", "text": message.content})
                    result["content"] = returned
                turns.add("user", [result])
    return turns


def _anthropic() -> ModuleType:
    import anthropic  # on first use: it costs a tenth of a second

    return anthropic
