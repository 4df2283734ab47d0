"""Real peers the tests start: llama-cpp-python's OpenAI-compatible server on the embedded model."""

from __future__ import annotations

import json
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
def llama_cpp_server() -> Iterator[str]:
    """Start `python -m llama_cpp.server` on 127.0.0.1; yield its base URL."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        yield from _serve(port, log)


def _serve(port: int, log: IO[bytes]) -> Iterator[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(embedded_gguf()),
            "--chat_format",
            "chatml-function-calling",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,  # a file: llama.cpp logs a lot, and a full pipe would block it
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"llama_cpp.server died: {log.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=1) as answer:
                    json.load(answer)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
