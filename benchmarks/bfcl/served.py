"""llama-cpp-python's OpenAI-compatible server on the embedded model, started and stopped here
(the same start-up as tests/servers.py), and restarted on the same port when a request runs away.

Its chatml-function-calling handler ignores max_tokens while it writes a call's arguments, so a
degenerate reply runs until the context is full, minutes on 2 cores; it serves one request at a
time and does not stop when the client gives up, so the next harness would wait for it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

N_CTX = 8192  # LocalModel's default, so both see the same context


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server --chat_format chatml-function-calling` on 127.0.0.1."""

    def __init__(self, gguf: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.argv = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(gguf),
            "--chat_format", "chatml-function-calling",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(N_CTX),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        # The log goes to a file: llama.cpp logs a lot, and a full pipe would block it.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop())
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=self.log)
        try:
            self._wait_until_up(self.process, self.log)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def _wait_until_up(self, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"llama_cpp.server died: {log.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as answer:
                    json.load(answer)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
