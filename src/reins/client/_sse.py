"""Server-sent events read off an httpx response: each event's `id` and its `data`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx


@dataclass(frozen=True, slots=True)
class Message:
    id: str | None
    data: str


async def messages(response: httpx.Response) -> AsyncIterator[Message]:
    """The stream's messages, as the SSE format frames them (comments and keep-alives
    skipped, multi-line data joined)."""
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield Message(event_id, "\n".join(data))
            event_id, data = None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
    if data:
        yield Message(event_id, "\n".join(data))
