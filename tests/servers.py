"""Real peers the tests start: llama-cpp-python's OpenAI-compatible server on the embedded model,
and an OpenAI-compatible server that streams its replies slowly."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

from reins.models._embedded import embedded_gguf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(command: list[str], ready_url: str, *, timeout: float = 60.0) -> Iterator[None]:
    """Run a server until the block ends; ready once `ready_url` answers 200. Its stderr goes
    to a file: llama.cpp logs a lot, and a full pipe would block it."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            _wait_ready(process, ready_url, log, timeout)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: IO[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}: {tail}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:  # refused, or 503 while the model loads
            pass
        if time.monotonic() > deadline:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise TimeoutError(f"{url} not ready after {timeout} s: {tail}")
        time.sleep(0.2)


@contextmanager
def llama_cpp_server() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1; yields its base URL."""
    base_url = f"http://127.0.0.1:{(port := free_port())}/v1"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(embedded_gguf("smollm2")),
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
    ]
    with serve(command, f"{base_url}/models"):
        yield base_url


class SlowOpenAI:
    """An OpenAI-compatible server (in a thread of the test's) that streams each reply word by
    word, `gap` seconds apart, as a real server does: `POST /v1/chat/completions` answers the
    next of `replies` (a text, or {"text", "tool_calls": [{"name", "arguments"}]}). Each
    request's body is kept (`requests`)."""

    def __init__(self, replies: list[str | dict[str, Any]], *, gap: float = 0.05) -> None:
        self.replies = list(replies)
        self.gap = gap
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> SlowOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _chunks(self, reply: str | dict[str, Any]) -> Iterator[dict[str, Any]]:
        text = reply if isinstance(reply, str) else reply.get("text", "")
        calls = [] if isinstance(reply, str) else reply.get("tool_calls", [])
        yield _chunk({"role": "assistant", "content": ""})
        for word in re.findall(r"\S+\s*", text):
            yield _chunk({"content": word})
        for index, call in enumerate(calls):
            arguments = call["arguments"]  # a text: sent as it is (the model's raw JSON)
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            function = {"name": call["name"], "arguments": raw}
            tool = {"index": index, "id": f"call_{index}", "type": "function"}
            yield _chunk({"tool_calls": [{**tool, "function": function}]})
        yield _chunk({}, "tool_calls" if calls else "stop")
        yield {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                peer.requests.append(body)
                if not peer.replies:
                    self.send_error(500, "no reply left")
                    return
                reply = peer.replies.pop(0)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in peer._chunks(reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(peer.gap)
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
