"""Fault injection: the OpenAI-compatible provider, and so `resilient`, against a scripted HTTP/1.1
server on 127.0.0.1 that answers with error statuses, resets, stalls and silences."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Cancel,
    ModelResponse,
    ModelSettings,
    StopReason,
    StreamItem,
    TextChunk,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageError,
    UserMessage,
)
from reins.core._errors import (
    ModelConnectionError,
    ModelHTTPError,
    ModelTimeout,
)  # not exported by `reins` (yet)
from reins.core._model import Retrying
from reins.events import Notice, TextDelta
from reins.models import OpenAIModel

HELLO = [UserMessage(content="hi")]
FAST = ModelSettings(
    first_chunk_timeout=3.0, chunk_timeout=3.0, retry_base_delay=0.02, retry_max_delay=1.0
)
RATE_LIMITED = '{"error":{"message":"slow down","type":"rate_limit"}}'


# --- a scripted server ---------------------------------------------------------------------------


@dataclass
class Connection:
    """One TCP connection, as the server saw it."""

    left_at: float | None = None
    """When the server read EOF or a reset from the client."""
    left: asyncio.Event = field(default_factory=asyncio.Event)

    def client_left(self) -> None:
        if self.left_at is None:
            self.left_at = time.monotonic()
            self.left.set()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    connection: Connection


@dataclass
class Wire:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    connection: Connection

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def until_client_leaves(self) -> bool:
        """Read (and drop) whatever comes until the client closes the connection."""
        try:
            while await self.reader.read(65536):
                pass
        except ConnectionError:
            pass
        self.connection.client_left()
        return False

    def reset(self) -> None:
        """Close abruptly: SO_LINGER 0 turns the close into a TCP RST."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


Handler = Callable[[Request, Wire], Awaitable[bool]]
"""Answers one request; returns whether the connection can take another."""


class Peer:
    """An HTTP/1.1 server on a free port of 127.0.0.1. Request n gets `script[n]`; the last
    handler answers every request after it. Keep-alive, like the servers the SDK talks to."""

    def __init__(self) -> None:
        self.script: list[Handler] = []
        self.requests: list[Request] = []
        self.connections: list[Connection] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        wire = Wire(reader, writer, Connection())
        self.connections.append(wire.connection)
        try:
            while (request := await _read_request(wire)) is not None:
                self.requests.append(request)
                handler = self.script[min(len(self.requests), len(self.script)) - 1]
                if not await handler(request, wire):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            wire.connection.client_left()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()


async def _read_request(wire: Wire) -> Request | None:
    try:
        head = await wire.reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        wire.connection.client_left()  # a clean close between requests
        return None
    line, *fields = head.decode("latin-1").split("\r\n")[:-2]
    method, path, _ = line.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, v in (f.split(":", 1) for f in fields)}
    body = await wire.reader.readexactly(int(headers.get("content-length", "0")))
    return Request(
        method=method,
        path=path,
        headers=headers,
        body=json.loads(body) if body else {},
        at=time.monotonic(),
        connection=wire.connection,
    )


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} Whatever"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status(code: int, body: str, headers: dict[str, str] | None = None) -> Handler:
    async def handle(request: Request, wire: Wire) -> bool:
        data = body.encode()
        fields = {"content-type": "application/json", "content-length": str(len(data))}
        await wire.send(_head(code, fields | (headers or {})) + data)
        return True

    return handle


def completion(text: str) -> Handler:
    """A plain (not streamed) `chat.completion`."""
    return status(
        200,
        json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
            }
        ),
    )


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE_CHUNK = {
    "id": "x",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [],
    "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
}
USAGE = Usage(input_tokens=7, output_tokens=2, requests=1)


def answer(*texts: str) -> list[dict[str, Any]]:
    """The chunks of a whole streamed answer: role, texts, finish, usage."""
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": t}) for t in texts),
        chunk({}, "stop"),
        USAGE_CHUNK,
    ]


def paced(chunks: Sequence[dict[str, Any]], gap: float) -> list[dict[str, Any] | float]:
    """`chunks` with a pause of `gap` seconds between each two."""
    out: list[dict[str, Any] | float] = []
    for c in chunks:
        out += [gap, c] if out else [c]
    return out


def partial(*texts: str) -> list[dict[str, Any]]:
    """The first chunks of an answer that never finishes."""
    return [chunk({"role": "assistant", "content": ""}), *(chunk({"content": t}) for t in texts)]


End = Literal["done", "fin", "rst", "eof", "stall"]


def streamed(
    chunks: Sequence[dict[str, Any] | float], *, end: End = "done", wait: float = 0.0
) -> Handler:
    """Headers after `wait` seconds of prefill, an SSE body of `chunks` (a number is a pause of
    that many seconds), then:
    done: `[DONE]` and the end of the chunked body;
    fin: a clean close in the middle of the chunked body (no last chunk, no `[DONE]`);
    rst: an abrupt close (TCP reset);
    eof: a body delimited by the close (no chunked encoding), closed before `[DONE]`;
    stall: nothing more, ever, until the client leaves."""
    chunked = end != "eof"

    async def handle(request: Request, wire: Wire) -> bool:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        headers |= {"transfer-encoding": "chunked"} if chunked else {"connection": "close"}
        await asyncio.sleep(wait)
        await wire.send(_head(200, headers))
        events = [c if isinstance(c, float) else f"data: {json.dumps(c)}\n\n" for c in chunks]
        if end == "done":
            events.append("data: [DONE]\n\n")
        for event in events:
            if isinstance(event, float):
                await asyncio.sleep(event)
            else:
                data = event.encode()
                await wire.send(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
        match end:
            case "done":
                await wire.send(b"0\r\n\r\n")
                return True
            case "fin" | "eof":
                await asyncio.sleep(0.05)  # the client has read the chunks
                return False
            case "rst":
                await asyncio.sleep(0.05)  # a reset may drop data not read yet
                wire.reset()
                return False
            case "stall":
                return await wire.until_client_leaves()

    return handle


def silent() -> Handler:
    """Accepts the request and says nothing: a prefill that never ends."""

    async def handle(request: Request, wire: Wire) -> bool:
        return await wire.until_client_leaves()

    return handle


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = Peer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def model(peer: Peer) -> AsyncIterator[OpenAIModel]:
    provider = OpenAIModel(model="m", base_url=peer.base_url, api_key="x")
    yield provider
    await provider.aclose()


async def collect(stream: AsyncIterator[StreamItem]) -> list[StreamItem]:
    return [item async for item in stream]


async def call_model(model: OpenAIModel, call: str, settings: ModelSettings) -> list[StreamItem]:
    """The items of a `stream`, or the one response of a `request`."""
    if call == "request":
        return [await model.request(HELLO, [], settings)]
    return await collect(model.stream(HELLO, [], settings))


def response(text: str) -> ModelResponse:
    return ModelResponse(
        message=AssistantMessage(text=text), usage=USAGE, finish="end_turn", model_name="openai:m"
    )


async def left_within(connection: Connection, seconds: float) -> float:
    """When the client closed `connection`; fails if it is still open after `seconds`."""
    await asyncio.wait_for(connection.left.wait(), seconds)
    assert connection.left_at is not None
    return connection.left_at


# --- error statuses ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "max_delay"),
    [
        ({"retry-after": "0.2"}, 30.0),
        ({"retry-after-ms": "200"}, 30.0),
        ({"retry-after": "120"}, 0.2),  # capped by retry_max_delay
    ],
    ids=["retry-after", "retry-after-ms", "capped"],
)
async def test_a_429_is_retried_after_the_delay_the_server_asks_for(
    peer: Peer, model: OpenAIModel, headers: dict[str, str], max_delay: float
) -> None:
    peer.script = [status(429, RATE_LIMITED, headers), streamed(answer("Hi", " there"))]
    settings = ModelSettings(retry_base_delay=5.0, retry_max_delay=max_delay)
    items = await collect(model.stream(HELLO, [], settings))
    assert items == [
        Retrying(attempt=1, delay=0.2, error=f"HTTP 429: {RATE_LIMITED}"),
        TextChunk("Hi"),
        TextChunk(" there"),
        response("Hi there"),
    ]
    first, second = peer.requests
    assert second.at - first.at >= 0.2
    assert second.at - first.at < 2.0  # not the 5 s of our own backoff
    assert second.body == first.body  # the same request, made again
    assert first.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")


async def test_5xx_errors_are_retried_with_exponential_backoff(
    peer: Peer, model: OpenAIModel
) -> None:
    peer.script = [
        status(500, '{"error":"boom"}'),
        status(503, '{"error":"overloaded"}'),
        streamed(answer("ok")),
    ]
    base = 0.05
    settings = ModelSettings(retry_base_delay=base, retry_max_delay=1.0)
    items = await collect(model.stream(HELLO, [], settings))
    retries = [i for i in items if isinstance(i, Retrying)]
    assert [(r.attempt, r.error) for r in retries] == [
        (1, 'HTTP 500: {"error":"boom"}'),
        (2, 'HTTP 503: {"error":"overloaded"}'),
    ]
    # full jitter over the upper half: [base/2, base], then [base, 2 base]
    assert base / 2 <= retries[0].delay <= base
    assert base <= retries[1].delay <= 2 * base
    assert items == [*retries, TextChunk("ok"), response("ok")]
    times = [r.at for r in peer.requests]
    assert len(times) == 3
    assert times[1] - times[0] >= retries[0].delay
    assert times[2] - times[1] >= retries[1].delay


@pytest.mark.parametrize("call", ["request", "stream"])
async def test_a_persistent_500_fails_after_max_retries(
    peer: Peer, model: OpenAIModel, call: str
) -> None:
    body = '{"error":{"message":"the GPU caught fire"}}'
    peer.script = [status(500, body)]
    settings = ModelSettings(max_retries=2, retry_base_delay=0.01)
    with pytest.raises(ModelHTTPError) as caught:
        await call_model(model, call, settings)
    assert (caught.value.status, caught.value.body, caught.value.retry_after) == (500, body, None)
    assert str(caught.value) == f"HTTP 500: {body}"
    assert len(peer.requests) == 3


@pytest.mark.parametrize("call", ["request", "stream"])
async def test_a_400_is_not_retried_and_carries_the_servers_body(
    peer: Peer, model: OpenAIModel, call: str
) -> None:
    body = json.dumps(
        {"error": {"message": "messages: too long", "type": "invalid_request_error", "code": None}}
    )
    peer.script = [status(400, body), completion("never asked")]
    with pytest.raises(ModelHTTPError) as caught:
        await call_model(model, call, FAST)
    assert (caught.value.status, caught.value.body, caught.value.transient) == (400, body, False)
    assert json.loads(caught.value.body)["error"]["message"] == "messages: too long"
    assert len(peer.requests) == 1


async def test_a_plain_request_is_retried_too(peer: Peer, model: OpenAIModel) -> None:
    peer.script = [status(502, "bad gateway"), completion("fine")]
    result = await model.request(HELLO, [], FAST)
    assert result == response("fine")
    assert [r.body.get("stream") for r in peer.requests] == [None, None]


async def test_a_refused_connection_is_retried_then_raised() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIModel(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
    settings = ModelSettings(max_retries=1, retry_base_delay=0.01)
    stream = model.stream(HELLO, [], settings)
    try:
        retry = await anext(stream)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        with pytest.raises(ModelConnectionError, match=rf"^no connection to {url} \("):
            await anext(stream)
    finally:
        await model.aclose()
    assert isinstance(retry, Retrying)
    assert retry.attempt == 1
    assert retry.error.startswith(f"no connection to {url} (")
    assert "refused" in retry.error.lower()


# --- broken and stalled streams ------------------------------------------------------------------


@pytest.mark.parametrize("end", ["fin", "rst", "eof"])
async def test_a_stream_cut_midway_is_made_again(peer: Peer, model: OpenAIModel, end: End) -> None:
    peer.script = [streamed(partial("Hel", "lo"), end=end), streamed(answer("Second", " try"))]
    items = await collect(model.stream(HELLO, [], FAST))
    [retry] = [i for i in items if isinstance(i, Retrying)]
    cut = items.index(retry)
    before, after = items[:cut], items[cut + 1 :]
    if end == "rst":  # a reset may overtake the chunks sent just before it
        assert before in ([], [TextChunk("Hel")], [TextChunk("Hel"), TextChunk("lo")])
    else:
        assert before == [TextChunk("Hel"), TextChunk("lo")]
    assert after == [TextChunk("Second"), TextChunk(" try"), response("Second try")]
    assert retry.attempt == 1
    assert FAST.retry_base_delay / 2 <= retry.delay <= FAST.retry_base_delay
    if end == "eof":  # the body ended cleanly, but the answer did not
        assert retry.error == "the stream ended before the model finished"
    else:
        assert retry.error.startswith(f"lost the connection to {peer.base_url}/chat/completions (")
    assert len(peer.requests) == 2


async def test_a_stalled_stream_times_out_and_is_closed(peer: Peer, model: OpenAIModel) -> None:
    peer.script = [streamed(partial("Hel"), end="stall")]
    settings = ModelSettings(
        first_chunk_timeout=3.0, chunk_timeout=0.3, max_retries=1, retry_base_delay=0.05
    )
    start = time.monotonic()
    with pytest.raises(ModelTimeout) as caught:
        await collect(model.stream(HELLO, [], settings))
    raised = time.monotonic()
    assert (
        str(caught.value) == "the stream stalled: no chunk from the model in 0.3 s; stream closed"
    )
    assert 0.6 <= raised - start < 5.0  # two attempts of 0.3 s
    first, second = peer.requests
    assert first.connection is not second.connection
    # Each stalled stream was closed, so a real server would stop generating: the first one
    # before the request was made again, the second one when the call gave up.
    assert await left_within(first.connection, 1.0) <= second.at
    assert await left_within(second.connection, 1.0) - raised < 1.0


async def test_no_first_chunk_times_out_and_the_request_is_dropped(
    peer: Peer, model: OpenAIModel
) -> None:
    peer.script = [silent()]
    settings = ModelSettings(first_chunk_timeout=0.3, chunk_timeout=30.0, max_retries=0)
    start = time.monotonic()
    with pytest.raises(ModelTimeout) as caught:
        await collect(model.stream(HELLO, [], settings))
    raised = time.monotonic()
    assert str(caught.value) == "no first chunk from the model in 0.3 s; stream closed"
    assert 0.3 <= raised - start < 3.0
    [request] = peer.requests
    assert await left_within(request.connection, 1.0) - raised < 1.0


async def test_a_slow_prefill_is_timed_by_the_first_chunk_timeout_only(
    peer: Peer, model: OpenAIModel
) -> None:
    peer.script = [streamed(answer("late"), wait=0.4)]
    settings = ModelSettings(first_chunk_timeout=3.0, chunk_timeout=0.2, max_retries=0)
    items = await collect(model.stream(HELLO, [], settings))
    assert items == [TextChunk("late"), response("late")]


async def test_a_slow_steady_stream_does_not_stall(peer: Peer, model: OpenAIModel) -> None:
    """The inter-chunk timeout is per gap, not for the whole stream."""
    role, *texts, finish, usage = answer("a", "b", "c", "d")
    peer.script = [streamed([role, *paced(texts, 0.15), finish, usage])]
    settings = ModelSettings(first_chunk_timeout=3.0, chunk_timeout=0.3, max_retries=0)
    start = time.monotonic()
    items = await collect(model.stream(HELLO, [], settings))
    assert time.monotonic() - start >= 0.45  # longer than chunk_timeout in all
    assert items == [*(TextChunk(t) for t in "abcd"), response("abcd")]


WRITE = ToolSpec(
    name="write_file",
    description="Write a file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    },
)


async def test_a_steadily_streamed_tool_call_does_not_stall(peer: Peer, model: OpenAIModel) -> None:
    arguments = ['{"path": "a.txt", ', '"content": "', "x" * 10, "y" * 10, "z" * 10, '"}']
    start = chunk({"role": "assistant", "tool_calls": [_tool_delta("write_file", "")]})
    deltas = [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in arguments
    ]
    peer.script = [streamed([*paced([start, *deltas], 0.1), chunk({}, "tool_calls"), USAGE_CHUNK])]
    settings = ModelSettings(first_chunk_timeout=0.4, chunk_timeout=0.4, max_retries=0)
    items = await collect(model.stream(HELLO, [WRITE], settings))
    content = "x" * 10 + "y" * 10 + "z" * 10
    call = ToolCall(id="call_1", name="write_file", arguments={"path": "a.txt", "content": content})
    assert items[-1] == ModelResponse(
        message=AssistantMessage(tool_calls=(call,)),
        usage=USAGE,
        finish="tool_use",
        model_name="openai:m",
    )


async def test_a_request_where_no_tool_may_be_called_still_sends_the_tools(
    peer: Peer, model: OpenAIModel
) -> None:
    """The summary at a cap: a history with calls and results, and no tool to be called."""
    call = ToolCall(id="call_1", name="write_file", arguments={"path": "a.txt", "content": "hi"})
    history = [
        *HELLO,
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="call_1", name="write_file", content="Wrote 2 bytes"),
        UserMessage(content="[CAP REACHED] Sum up."),
    ]
    peer.script = [completion("Wrote a.txt.")]
    result = await model.request(history, [WRITE], ModelSettings(tool_choice="none"))
    assert result.message == AssistantMessage(text="Wrote a.txt.")
    [request] = peer.requests
    assert request.body["tool_choice"] == "none"
    assert [t["function"]["name"] for t in request.body["tools"]] == ["write_file"]


def _tool_delta(name: str, arguments: str) -> dict[str, Any]:
    return {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


# --- through the loop ----------------------------------------------------------------------------


@pytest.mark.real_model
async def test_cancel_during_a_silent_prefill_closes_the_connection(
    peer: Peer, model: OpenAIModel, workspace: Path
) -> None:
    peer.script = [silent()]
    cancel = Cancel()
    agent = Agent(model=model, workspace=workspace, settings=FAST)
    start = time.monotonic()

    async def cancel_while_silent() -> None:  # once the request is in: a loaded machine is slow
        while not peer.requests:  # noqa: ASYNC110 (the peer has no event for it)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        cancel.cancel()

    canceller = asyncio.ensure_future(cancel_while_silent())
    result = await asyncio.wait_for(agent.run("go", cancel=cancel), 10)
    finished = time.monotonic()
    await canceller
    assert (result.stop_reason, result.detail) == (
        StopReason.CANCELLED,
        "cancelled while the model answered",
    )
    assert 0.2 <= finished - start < 3.0
    [request] = peer.requests
    assert request.body["stream"] is True
    assert await left_within(request.connection, 1.0) - finished < 1.0


@pytest.mark.real_model
async def test_the_events_say_when_streamed_text_was_discarded_by_a_retry(
    peer: Peer, model: OpenAIModel, workspace: Path
) -> None:
    peer.script = [streamed(partial("Hel", "lo"), end="fin"), streamed(answer("Second", " try"))]
    run = Agent(model=model, workspace=workspace, settings=FAST).iter("go")
    events = [e async for e in run]
    assert run.state.finished is not None
    assert run.state.finished.final_answer == "Second try"
    deltas = [(i, e.text) for i, e in enumerate(events) if isinstance(e, TextDelta)]
    assert [text for _, text in deltas] == ["Hel", "lo", "Second", " try"]
    # An event between the two attempts' deltas tells a consumer to drop "Hello".
    (lo, _), (second, _) = deltas[1:3]
    [notice] = [e for e in events[lo:second] if isinstance(e, Notice)]
    assert (notice.source, notice.level) == ("model", "warning")
    assert notice.text.startswith("retry 1 in ")
    assert notice.text.endswith("the text streamed before this is discarded")


# --- settings from the environment ---------------------------------------------------------------


def test_stream_timeouts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REINS_FIRST_CHUNK_TIMEOUT", "2.5")
    monkeypatch.setenv("REINS_CHUNK_TIMEOUT", "0.75")
    settings = ModelSettings()
    assert (settings.first_chunk_timeout, settings.chunk_timeout) == (2.5, 0.75)
    explicit = ModelSettings(first_chunk_timeout=9.0, chunk_timeout=8.0)
    assert (explicit.first_chunk_timeout, explicit.chunk_timeout) == (9.0, 8.0)


def test_stream_timeouts_default_without_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REINS_FIRST_CHUNK_TIMEOUT", raising=False)
    monkeypatch.delenv("REINS_CHUNK_TIMEOUT", raising=False)
    settings = ModelSettings()
    assert (settings.first_chunk_timeout, settings.chunk_timeout) == (90.0, 60.0)


@pytest.mark.parametrize("name", ["REINS_FIRST_CHUNK_TIMEOUT", "REINS_CHUNK_TIMEOUT"])
@pytest.mark.parametrize(
    "value",
    [
        "abc",
        "0",
        "-1",
        "",
        "nan",
        "inf",
    ],
)
def test_a_bad_timeout_in_the_environment_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError) as caught:
        ModelSettings()
    assert name in str(caught.value)
    assert repr(value) in str(caught.value)


async def test_the_environment_times_a_real_stream(
    peer: Peer, model: OpenAIModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REINS_FIRST_CHUNK_TIMEOUT", "0.3")
    peer.script = [silent()]
    start = time.monotonic()
    with pytest.raises(ModelTimeout, match=r"no first chunk from the model in 0\.3 s"):
        await collect(model.stream(HELLO, [], ModelSettings(max_retries=0)))
    assert time.monotonic() - start < 3.0


@pytest.mark.parametrize(
    ("name", "sent", "kept"),
    [
        ("o4-mini", {"max_completion_tokens": 300, "reasoning_effort": "low"}, ["temperature"]),
        ("gpt-5-mini", {"max_completion_tokens": 300, "reasoning_effort": "low"}, ["temperature"]),
        ("qwen2.5", {"max_tokens": 300, "temperature": 0.2, "reasoning_effort": "low"}, []),
    ],
)
async def test_reasoning_models_get_their_parameters(
    peer: Peer, name: str, sent: dict[str, Any], kept: list[str]
) -> None:
    """o-series and gpt-5 models take max_completion_tokens and reasoning_effort and refuse a
    temperature; another server's model keeps max_tokens."""
    peer.script = [streamed(answer("ok"))]
    model = OpenAIModel(model=name, base_url=peer.base_url, api_key="x")
    settings = ModelSettings(max_tokens=300, temperature=0.2, reasoning_effort="low")
    try:
        await collect(model.stream([UserMessage(content="hi")], [], settings))
    finally:
        await model.aclose()
    body = peer.requests[0].body
    assert {k: body[k] for k in sent} == sent
    for key in [
        *kept,
        "max_tokens" if "max_completion_tokens" in sent else "max_completion_tokens",
    ]:
        assert key not in body


@pytest.mark.real_model  # a real provider, to a port where nothing listens
async def test_a_retry_notice_names_the_server_and_claims_no_text_that_never_came(
    workspace: Path,
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIModel(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
    agent = Agent(
        model=model,
        workspace=workspace,
        settings=ModelSettings(max_retries=1, retry_base_delay=0.01),
    )
    try:
        events = [e async for e in agent.iter("go")]
    finally:
        await model.aclose()
    [notice] = [e for e in events if isinstance(e, Notice) and e.source == "model"]
    assert notice.text.startswith(
        f"retry 1 in 0.0 s after: no connection to http://127.0.0.1:{port}/"
    )
    assert "Connection refused" in notice.text
    assert "discarded" not in notice.text  # nothing was streamed
