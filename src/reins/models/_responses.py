"""OpenAI's Responses API (`openai-responses:NAME`), through the official `openai` SDK: a
reasoning model's reasoning items go back to it, encrypted, on every later turn (with
`store=False`: OpenAI keeps nothing), so it does not think again from scratch after each tool
call. Servers that speak it (llama.cpp's `llama-server`) work too."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._errors import ModelError
from ..core._events import FinishReason
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
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
)
from ._media_wire import responses_part
from ._openai import OpenAIEndpoint, _arguments, _openai, _reasons
from ._provider import tool_call, unfinished
from ._resilience import Retried
from ._sdk_errors import sdk_errors


@dataclass(kw_only=True)
class OpenAIResponsesModel(Retried, OpenAIEndpoint):
    """A model through the Responses API (see the module's docstring)."""

    provider: str = "openai-responses"

    async def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        final: Any = None
        with sdk_errors(_openai()):
            stream = await self.client().responses.create(
                stream=True, **_params(self.model, messages, tools, settings)
            )
            async with stream:
                async for event in stream:
                    yield ALIVE
                    match event.type:
                        case "response.output_text.delta":
                            yield TextChunk(event.delta)
                        case "response.reasoning_summary_text.delta":
                            yield ThinkingChunk(event.delta)
                        case "response.reasoning_text.delta":
                            yield ThinkingChunk(event.delta)
                        case "response.completed" | "response.incomplete":
                            final = event.response
                        case "response.failed":
                            error = event.response.error
                            raise ModelError(
                                f"the response failed: {getattr(error, 'message', error)}"
                            )
                        case "error":
                            raise ModelError(f"the server reported an error: {event.message}")
        if final is None:
            raise unfinished()
        message, refused = _message(final.output)
        yield ModelResponse(
            message=message,
            usage=_usage(final.usage),
            finish=_finish(final, message, refused),
            model_name=self.name,
        )


def _params(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
) -> dict[str, Any]:
    params: dict[str, Any] = {"model": model, "input": _input(messages), "store": False}
    if tools:
        params["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,  # reins' schemas are not all strict-mode schemas
            }
            for t in tools
        ]
        params["tool_choice"] = settings.tool_choice
    if settings.max_tokens is not None:
        params["max_output_tokens"] = settings.max_tokens
    if _reasons(model):
        params["include"] = ["reasoning.encrypted_content"]  # to send back, with store=False
        params["reasoning"] = {"summary": "auto"}
        if settings.reasoning_effort is not None:
            params["reasoning"]["effort"] = settings.reasoning_effort
    elif settings.temperature is not None:
        params["temperature"] = settings.temperature
    return params


def _input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as input items: an assistant turn is its reasoning items (sent back
    as they came), its text, then its function calls; a result answers its call by id."""
    items: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case SystemMessage():
                items.append({"role": message.role, "content": message.content})
            case UserMessage():
                items.append({"role": "user", "content": _content(message)})
            case AssistantMessage():
                items.extend(
                    {
                        "type": "reasoning",
                        "id": block.item_id,
                        "summary": [{"type": "summary_text", "text": block.text}]
                        if block.text
                        else [],
                        "encrypted_content": block.signature,
                    }
                    for block in message.thinking_blocks
                    # ours (not a Gemini thought signature), and it can go back
                    if block.item_id and block.signature and not block.item_id.startswith("gemini:")
                )
                if message.text:
                    items.append({"role": "assistant", "content": message.text})
                items.extend(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": _arguments(call),
                    }
                    for call in message.tool_calls
                )
            case ToolResultMessage():
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.call_id,
                        "output": _content(message),
                    }
                )
    return items


def _content(message: UserMessage | ToolResultMessage) -> str | list[dict[str, Any]]:
    """Its text, or its text then its images and documents as input content items."""
    if not message.media:
        return message.content
    text = [{"type": "input_text", "text": message.content}] if message.content else []
    return text + [responses_part(m) for m in message.media]


def _message(output: Sequence[Any]) -> tuple[AssistantMessage, bool]:
    """The reply from the response's output items, and whether the model refused."""
    text: list[str] = []
    calls: list[ToolCall] = []
    blocks: list[ThinkingBlock] = []
    refused = False
    for item in output:
        match item.type:
            case "message":
                for part in item.content:
                    if part.type == "output_text":
                        text.append(part.text)
                    elif part.type == "refusal":
                        text.append(part.refusal)
                        refused = True
            case "function_call":
                calls.append(tool_call(item.call_id, item.name, item.arguments))
            case "reasoning":
                summary = [s.text for s in item.summary or ()]
                summary += [c.text for c in getattr(item, "content", None) or ()]
                blocks.append(
                    ThinkingBlock(
                        text="\n\n".join(summary),
                        signature=item.encrypted_content or "",
                        item_id=item.id,
                    )
                )
    message = AssistantMessage(
        text="".join(text),
        thinking="\n\n".join(b.text for b in blocks if b.text),
        tool_calls=tuple(calls),
        thinking_blocks=tuple(blocks),
    )
    return message, refused


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage(requests=1)
    details = getattr(usage, "input_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        requests=1,
        cache_read_tokens=getattr(details, "cached_tokens", None) or 0,
    )


def _finish(response: Any, message: AssistantMessage, refused: bool) -> FinishReason:
    if refused:
        return "refusal"
    incomplete = getattr(response, "incomplete_details", None)
    reason = getattr(incomplete, "reason", None)
    if reason == "max_output_tokens":
        return "max_tokens"
    if reason == "content_filter":
        return "refusal"
    return "tool_use" if message.tool_calls else "end_turn"
