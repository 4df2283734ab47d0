"""Real peers the tests start: llama-cpp-python's OpenAI-compatible server on the embedded model."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

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
