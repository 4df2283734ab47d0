"""A real HTTP server on 127.0.0.1 for provider tests: each request is recorded, and answered by
a function of the test that speaks the provider's wire format."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from reins import Model, ModelSettings, UserMessage
from reins.core._errors import ModelTimeout

FAST = ModelSettings(first_chunk_timeout=5, chunk_timeout=5, retry_base_delay=0.01)
"""Settings for a model of the tests' server: a stall fails in seconds, a retry comes at once."""


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] = ()
    """The body, written and flushed piece by piece (a stream's events)."""


Handler = Callable[[Received], Answer]


def unset(_: Received) -> Answer:
    """The handler of a server whose test has not set its own yet."""
    return Answer(status=500)


@dataclass
class WireServer:
    url: str
    received: list[Received]
    handler: Handler
    broken: threading.Event = field(default_factory=threading.Event)
    """Set when a write fails: the client closed the connection mid-answer."""


@contextmanager
def wire_server(handler: Handler = unset) -> Iterator[WireServer]:
    """Serve until the block ends; `server.handler` may be swapped between requests."""
    received: list[Received] = []

    class Handle(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Received(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length),
            )
            received.append(request)
            answer = state.handler(request)
            self.send_response(answer.status)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            # A stream goes chunked, as the providers send one: a client reads each piece as
            # it comes (reading a body to its close, urllib3 waits for a whole buffer).
            chunked = "Content-Length" not in answer.headers
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for chunk in answer.chunks:
                    if not chunk:
                        continue  # chunked, an empty piece would end the body
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    self.wfile.flush()
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except OSError:  # reset, broken pipe
                state.broken.set()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet tests

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    httpd.daemon_threads = True
    state = WireServer(f"http://127.0.0.1:{httpd.server_address[1]}", received, handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_url() -> str:
    """The URL of a server that stopped: nothing listens there."""
    with wire_server() as gone:
        return gone.url


def stalling(content_type: str, first: bytes, again: bytes) -> Answer:
    """A stream that sends `first`, then is silent for a while, then sends `again` now and
    then (writes that fail once the client has closed the connection)."""

    def chunks() -> Iterator[bytes]:
        yield first
        for _ in range(30):
            time.sleep(0.2)
            yield again

    return Answer(headers={"Content-Type": content_type}, chunks=chunks())


async def assert_a_stall_closes_the_connection(model: Model, server: WireServer) -> None:
    """A stream that stalls times out, and the client closes its connection: the server stops
    writing (set `server.handler` to a `stalling` answer first)."""
    settings = ModelSettings(first_chunk_timeout=5, chunk_timeout=0.1, max_retries=0)
    with pytest.raises(ModelTimeout, match="the stream stalled"):
        await model.request([UserMessage(content="?")], [], settings)
    assert server.broken.wait(5)
