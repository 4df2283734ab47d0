"""Stream guards and retries, the same for every provider.

A provider's raw stream maps its SDK's failures to `ModelError`s; this wraps it with the
first-chunk and inter-chunk timeouts (closing the stream, so a local server stops generating)
and retries transient failures with exponential backoff and jitter, honouring Retry-After.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing

from ..core._errors import ModelError, ModelHTTPError, ModelTimeout
from ..core._messages import Message, ToolSpec
from ..core._model import Alive, ModelResponse, ModelSettings, Retrying, StreamItem, final_response


class Retried:
    """A model made of one attempt at a reply (`_attempt`): `stream` guards and retries it,
    `request` waits for its response."""

    def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        raise NotImplementedError

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        return await final_response(self.stream(messages, tools, settings))

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        return resilient(lambda: self._attempt(messages, tools, settings), settings)


async def resilient(
    attempt: Callable[[], AsyncGenerator[StreamItem | Alive]], settings: ModelSettings
) -> AsyncIterator[StreamItem]:
    """Yield the items of `attempt()`, made again after each transient failure."""
    failures = 0
    while True:
        try:
            async with aclosing(attempt()) as stream:
                async for item in _guarded(stream, settings):
                    if isinstance(item, Alive):
                        continue
                    yield item
                    if isinstance(item, ModelResponse):
                        return
            raise ModelError("the model stream ended without a response")
        except ModelError as exc:
            if not exc.transient or failures >= settings.max_retries:
                raise
            failures += 1
            delay = backoff(failures, exc, settings)
            yield Retrying(attempt=failures, delay=delay, error=str(exc))
            await asyncio.sleep(delay)


async def _guarded(
    stream: AsyncIterator[StreamItem | Alive], settings: ModelSettings
) -> AsyncIterator[StreamItem | Alive]:
    timeout, what = settings.first_chunk_timeout, "no first chunk"
    while True:
        try:
            async with asyncio.timeout(timeout):
                item = await anext(stream)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise ModelTimeout(f"{what} from the model in {timeout:g} s; stream closed") from None
        yield item
        timeout, what = settings.chunk_timeout, "the stream stalled: no chunk"


def backoff(failures: int, error: ModelError, settings: ModelSettings) -> float:
    """Seconds before retry number `failures`: the server's Retry-After if it gave one, else
    exponential with full jitter; never more than `retry_max_delay`."""
    if isinstance(error, ModelHTTPError) and error.retry_after is not None:
        return min(max(error.retry_after, 0.0), settings.retry_max_delay)
    ceiling = min(settings.retry_max_delay, settings.retry_base_delay * 2 ** (failures - 1))
    return random.uniform(ceiling / 2, ceiling)
