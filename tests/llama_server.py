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
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .servers import free_port, serve

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_llama_server.sh"
TOOL_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"


def llama_server_cache_dir() -> Path:
    """Where the build script installs the binary: the same path logic as the script."""
    version = importlib.metadata.version("llama-cpp-python")
    root = os.environ.get("REINS_CACHE") or str(Path.home() / ".cache" / "reins")
    return Path(root) / f"llama-server-{version}-avx2"


def llama_server_binary() -> Path | None:
    """The cached `llama-server` binary, or None when it has not been built (never builds)."""
    try:
        binary = llama_server_cache_dir() / "llama-server"
    except importlib.metadata.PackageNotFoundError:
        return None
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    return None


def built_llama_server() -> Path:
    """The cached binary; the test is skipped without it (failed on CI, which builds it)."""
    import pytest

    binary = llama_server_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"llama-server is not built; .ci/run builds it with {BUILD_SCRIPT}")
        pytest.skip(f"llama-server is not built; run {BUILD_SCRIPT}")
    return binary


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
    command = [
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
    ]
    with serve(command, f"{base_url}/health", timeout=timeout):  # 503 until the model loads
        yield base_url
