"""What the providers behind an SDK share: the model's client, made on first use and closed by
`aclose`, its name in logs, and the pieces their wire formats have in common (the system
prompt, alternating turns, a call's JSON arguments, a reply's parts, cache-counted usage)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core._errors import ModelConnectionError
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
    Usage,
)


@dataclass(kw_only=True)
class SDKModel:
    """A model behind a provider's SDK client (made by `_connect` on first use, with the SDK's
    own retries off: ours are `resilient`'s). `provider` names it in logs (`ollama:llama3.2`)."""

    model: str
    provider: str
    _client: Any = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def client(self) -> Any:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the HTTP connections; the model opens new ones if used again."""
        if self._client is not None:
            client, self._client = self._client, None
            await self._disconnect(client)

    async def _disconnect(self, client: Any) -> None:
        await client.close()


def unfinished() -> ModelConnectionError:
    """A stream that ended with no stop reason: cut off (a transient failure, retried)."""
    return ModelConnectionError("the stream ended before the model finished")


def system_prompt(messages: Sequence[Message]) -> str:
    """The system messages, as the one system prompt the APIs take apart from the turns."""
    return "\n\n".join(m.content for m in messages if isinstance(m, SystemMessage))


class Turns(list[dict[str, Any]]):
    """Turns that alternate user and assistant, each a list of content blocks: blocks of the
    same role as the turn before join it (a call's results go back together, as the APIs
    require)."""

    def add(self, role: str, blocks: list[dict[str, Any]]) -> None:
        if self and self[-1]["role"] == role:
            self[-1]["content"].extend(blocks)
        else:
            self.append({"role": role, "content": blocks})


def tool_call(call_id: str | None, name: str, arguments: str) -> ToolCall:
    """A call from its arguments' JSON text; text that is not a JSON object is kept raw, for
    the loop to tell the model what was wrong."""
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        return ToolCall(id=call_id or "", name=name, raw_arguments=arguments)
    return ToolCall(id=call_id or "", name=name, arguments=parsed)


def assistant_message(
    text: list[str], calls: list[ToolCall], thinking: list[ThinkingBlock]
) -> AssistantMessage:
    """A reply from its parts in the order they came."""
    return AssistantMessage(
        text="".join(text),
        thinking="".join(b.text for b in thinking),
        tool_calls=tuple(calls),
        thinking_blocks=tuple(thinking),
    )


def cached_apart(input_tokens: int, output_tokens: int, read: int, written: int) -> Usage:
    """Usage of an API that counts the prompt's tokens read from or written to its cache apart
    from its input tokens (Anthropic's, Converse): reins counts all the prompt's tokens as
    input, the cached ones among them."""
    return Usage(
        input_tokens=input_tokens + read + written,
        output_tokens=output_tokens,
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )
