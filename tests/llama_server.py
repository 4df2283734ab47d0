"""llama.cpp's own `llama-server`: a real Anthropic Messages API (`/v1/messages`) and OpenAI peer.

`scripts/build_llama_server.sh` builds it once (8-10 minutes on 2 cores) into a cache outside
the repo, next to llama.cpp's vendored chat templates; the tests only use a cached binary and skip
when there is none.

SmolLM2's own chat template cannot render tools: the server then silently drops `tools` and
`tool_choice` and the model only ever answers text. Pass `chat_template=llama_server_template()`
(Qwen2.5's ChatML template with `<tool_call>` tags, same special tokens as SmolLM2) to get tools
into the prompt and `tool_use` blocks parsed out of the answer.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .servers import free_port

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_llama_server.sh"
TOOL_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"


def llama_server_cache_dir() -> Path:
    """Where the build script installs the binary: the same path logic as the script."""
    version = importlib.metadata.version("llama-cpp-python")
    root = os.environ.get("REINS_CACHE") or str(Path.home() / ".cache" / "reins")
    return Path(root) / f"llama-server-{version}"


def llama_server_binary() -> Path | None:
    """The cached `llama-server` binary, or None when it has not been built (never builds)."""
    try:
        binary = llama_server_cache_dir() / "llama-server"
    except importlib.metadata.PackageNotFoundError:
        return None
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    return None


def llama_server_template(name: str = TOOL_TEMPLATE) -> Path | None:
    """A chat template the build script installed next to the binary, or None."""
    try:
        template = llama_server_cache_dir() / "templates" / name
    except importlib.metadata.PackageNotFoundError:
        return None
    return template if template.is_file() else None


@contextmanager
def run_llama_server(
    binary: Path,
    gguf: Path,
    *,
    chat_template: Path | None = None,
    context: int = 4096,
    threads: int = 1,
    extra_args: tuple[str, ...] = (),
    timeout: float = 60.0,
) -> Iterator[str]:
    """Start `llama-server` on 127.0.0.1 and a free port; yield its base URL (without `/v1`).

    One thread by default: with llama.cpp's default (all cores, spinning workers) a request
    took over 100 s instead of 0.5 s while other processes kept the 2 cores busy.
    """
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    template_args = ("--chat-template-file", str(chat_template)) if chat_template else ()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [
                str(binary),
                "-m",
                str(gguf),
                "--jinja",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "-c",
                str(context),
                "--threads",
                str(threads),
                *template_args,
                *extra_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,  # a file: llama.cpp logs a lot, and a full pipe would block it
        )
        try:
            _wait_healthy(process, base_url, log, timeout)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_healthy(
    process: subprocess.Popen[bytes], base_url: str, log: IO[bytes], timeout: float
) -> None:
    """Poll `/health` (503 while the model loads, 200 once it serves) until it answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"llama-server exited with {process.returncode}: {tail}")
        try:
            with urllib.request.urlopen(f"{base_url}/health", timeout=1) as answer:
                if json.load(answer).get("status") == "ok":
                    return
        except (OSError, ValueError):  # refused, 503 while loading, or a partial answer
            pass
        if time.monotonic() > deadline:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise TimeoutError(f"llama-server not healthy after {timeout} s: {tail}")
        time.sleep(0.2)
