"""mem0 (PyPI `mem0ai` 2.x) as a peer of the recall suite, fully offline.

mem0 runs in a venv of its own (it pins protobuf<7, which this project's venv does not meet), as a
worker process of this same file that speaks JSON lines over stdin/stdout. Its LLM and embedder
are OpenAI-compatible servers on 127.0.0.1 that this class starts (from the project's venv, which
has llama-cpp-python) and stops:

- chat: `python -m llama_cpp.server` on the model, in JSON mode for mem0's extraction. mem0's
  system prompt is ~7.9k Qwen tokens; llama.cpp reuses the common prefix of consecutive requests
  from its KV cache, so the worker sends it once at start and each add reads only its own part;
- embeddings: this file's `embed-server`, llama.cpp with mean pooling (the stock server has no
  pooling option, and these chat GGUFs default to per-token embeddings, which mem0 cannot use).

Vector store: qdrant in local mode (qdrant-client is a dependency of mem0ai). mem0's optional
extras stay out: without fastembed (BM25, which downloads `Qdrant/bm25` at run time) and spaCy
(entities and lemmas, which downloads `en_core_web_sm`) it ranks by embedding similarity only.
Telemetry and the remote notice config are off (`MEM0_TELEMETRY=False`).

Setup (once):

    python3.11 -m venv /tmp/mem0-venv && /tmp/mem0-venv/bin/pip install mem0ai==2.2.1

Use (from the project's venv; `MEM0_PYTHON` overrides the worker's interpreter, and
`REINS_LOCAL_THREADS` the servers' threads, as for LocalModel: on a busy machine 1 decodes ~4x
faster than 2):

    with Mem0Peer(model_path) as peer:  # workdir: a temporary folder unless given
        peer.add("I always indent Python with tabs.", user_id="u")
        peer.search("indentation", user_id="u")  # -> ["User always indents ...", ...]

    python benchmarks/memory/mem0_peer.py demo [GGUF]  # the indentation sample, timed

Starting takes minutes (llama.cpp reads mem0's system prompt once), an add some 15-40 s with
Qwen2.5-Coder 1.5B on 2 cores, a search under a second.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

MEM0_PYTHON = os.environ.get("MEM0_PYTHON", "/tmp/mem0-venv/bin/python")
N_CTX = 12288  # mem0's system prompt (~7.9k tokens) + existing memories + last messages + reply
MAX_TOKENS = 512  # one turn's extraction; a runaway reply stops here
THREADS = int(os.environ.get("REINS_LOCAL_THREADS") or os.cpu_count() or 1)  # as LocalModel
LOCAL_ENV = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """A child process serving HTTP on 127.0.0.1:port, its log in a file."""

    def __init__(self, argv: list[str], port: int, log: Path) -> None:
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log = log
        with log.open("wb") as out:
            env = {**os.environ, **LOCAL_ENV}
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env
            )

    def wait_up(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server died: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                    json.load(answer)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def stop(self) -> None:
        _end(self.process)


def _end(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Mem0Peer:
    """mem0 on local llama.cpp servers; a context manager that starts and stops them all."""

    def __init__(
        self,
        model_path: str | Path,
        workdir: Path | None = None,
        *,
        embed_model_path: str | Path | None = None,
        python: str = MEM0_PYTHON,
    ) -> None:
        self.model_path = Path(model_path)
        self.embed_model_path = Path(embed_model_path or model_path)
        self._temporary = workdir is None  # removed on exit
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="mem0-peer-"))
        self.python = python
        self._servers: list[_Server] = []
        self._worker: subprocess.Popen[str] | None = None
        self._worker_log: IO[bytes] | None = None

    @classmethod
    def for_benchmark(cls) -> Mem0Peer:
        """On the default embedded model (the suite's answerer), in a temporary folder."""
        from reins.models._embedded import embedded_gguf

        return cls(embedded_gguf())

    def __enter__(self) -> Mem0Peer:
        if not Path(self.python).exists():
            raise RuntimeError(
                f"no mem0 venv at {self.python}: python3.11 -m venv /tmp/mem0-venv && "
                "/tmp/mem0-venv/bin/pip install mem0ai==2.2.1 (or set MEM0_PYTHON)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        chat_port, embed_port = free_port(), free_port()
        chat = _Server(
            [
                sys.executable, "-m", "llama_cpp.server",
                "--model", str(self.model_path), "--model_alias", "local",
                "--chat_format", "chatml", "--n_ctx", str(N_CTX),
                "--logits_all", "false",  # else it keeps n_ctx x n_vocab floats (7.5 GB)
                "--n_threads", str(THREADS), "--n_threads_batch", str(THREADS),
                "--host", "127.0.0.1", "--port", str(chat_port),
            ],
            chat_port, self.workdir / "chat-server.log",
        )  # fmt: skip
        self._servers.append(chat)
        embed = _Server(
            [sys.executable, __file__, "embed-server", str(self.embed_model_path), str(embed_port)],
            embed_port, self.workdir / "embed-server.log",
        )  # fmt: skip
        self._servers.append(embed)
        chat.wait_up()
        embed.wait_up()
        with urllib.request.urlopen(f"{embed.base_url}/models") as answer:
            dims = json.load(answer)["data"][0]["dims"]
        config = {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": "local", "api_key": "local", "openai_base_url": chat.base_url,
                    "temperature": 0.0, "max_tokens": MAX_TOKENS,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {"model": "local", "api_key": "local", "openai_base_url": embed.base_url},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(self.workdir / "qdrant"), "embedding_model_dims": dims,
                    "collection_name": "mem0",
                },
            },
            "history_db_path": str(self.workdir / "history.db"),
        }  # fmt: skip
        env = {
            **os.environ, **LOCAL_ENV, "MEM0_TELEMETRY": "False",
            "MEM0_DIR": str(self.workdir / "mem0"), "HF_HUB_OFFLINE": "1",
        }  # fmt: skip
        self._worker_log = (self.workdir / "worker.log").open("wb")
        self._worker = subprocess.Popen(
            [self.python, __file__, "worker", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._worker_log,
            text=True, env=env,
        )  # fmt: skip
        self._read()  # "ready", once mem0 is up and its system prompt is in the KV cache

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._worker is not None:
            if self._worker.stdin and self._worker.poll() is None:
                self._worker.stdin.close()
            try:
                self._worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _end(self._worker)
            self._worker = None
        if self._worker_log is not None:
            self._worker_log.close()
            self._worker_log = None
        for server in self._servers:
            server.stop()
        self._servers = []
        if self._temporary:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def add(self, text: str, *, user_id: str) -> None:
        """mem0's add of one user turn: its LLM extracts facts, deduplicated against the
        user's existing memories (mem0 2.x only adds: it neither updates nor deletes)."""
        self._call(op="add", text=text, user_id=user_id)

    def search(self, query: str, *, user_id: str, limit: int = 10) -> list[str]:
        """The user's memories' texts, best first."""
        return list(self._call(op="search", query=query, user_id=user_id, limit=limit))

    def get_all(self, *, user_id: str) -> list[str]:
        """Every memory the user has (for inspection)."""
        return list(self._call(op="get_all", user_id=user_id))

    def reset(self) -> None:
        """Forget everything (between scenarios)."""
        self._call(op="reset")

    def _call(self, **request: Any) -> Any:
        if self._worker is None or self._worker.stdin is None:
            raise RuntimeError("Mem0Peer is not started: use it in a `with` block")
        self._worker.stdin.write(json.dumps(request) + "\n")
        self._worker.stdin.flush()
        return self._read()

    def _read(self) -> Any:
        if self._worker is None or self._worker.stdout is None:
            raise RuntimeError("Mem0Peer is not started: use it in a `with` block")
        line = self._worker.stdout.readline()
        if not line:
            log = (self.workdir / "worker.log").read_text()[-3000:]
            raise RuntimeError(f"mem0 worker died: {log}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"mem0: {answer['error']}")
        return answer["result"]


def worker(config: dict[str, Any]) -> None:
    """In the mem0 venv: answer JSON-line requests from stdin; stray prints go to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import openai
    from mem0 import Memory
    from mem0.configs.prompts import ADDITIVE_EXTRACTION_PROMPT

    memory = Memory.from_config(config)
    llm = config["llm"]["config"]
    client = openai.OpenAI(base_url=llm["openai_base_url"], api_key="local")
    client.chat.completions.create(  # puts mem0's system prompt in the server's KV cache
        model="local",
        messages=[
            {"role": "system", "content": str(ADDITIVE_EXTRACTION_PROMPT)},
            {"role": "user", "content": "-"},
        ],
        max_tokens=1,
    )

    def reply(answer: dict[str, Any]) -> None:
        out.write(json.dumps(answer) + "\n")
        out.flush()

    reply({"result": "ready"})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            op = request["op"]
            if op == "add":
                memory.add(
                    [{"role": "user", "content": request["text"]}], user_id=request["user_id"]
                )
                result: Any = None
            elif op == "search":
                found = memory.search(
                    request["query"],
                    top_k=request["limit"],
                    filters={"user_id": request["user_id"]},
                )
                result = [item["memory"] for item in found["results"]]
            elif op == "get_all":
                found = memory.get_all(filters={"user_id": request["user_id"]}, top_k=100)
                result = [item["memory"] for item in found["results"]]
            elif op == "reset":
                memory.reset()
                result = None
            else:
                raise ValueError(f"unknown op {op!r}")
            reply({"result": result})
        except Exception as e:  # the peer raises it
            reply({"error": f"{type(e).__name__}: {e}"})


def embed_server(model: str, port: int) -> None:
    """In the project venv: POST /v1/embeddings (OpenAI's shape), mean-pooled by llama.cpp."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=model, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        n_ctx=2048, n_batch=2048, n_ubatch=2048, n_threads=THREADS, n_threads_batch=THREADS,
        verbose=False,
    )  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # /v1/models: the readiness probe, with the dimensions
            self._send({"object": "list", "data": [{"id": "local", "dims": llm.n_embd()}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = llm.embed(texts, normalize=True)
            data = [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": 0, "total_tokens": 0}
            self._send({"object": "list", "data": data, "model": "local", "usage": usage})

        def _send(self, answer: dict[str, Any]) -> None:
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


def demo(model: str | None) -> None:
    """The indentation sample, timed."""
    started = time.perf_counter()
    with Mem0Peer.for_benchmark() if model is None else Mem0Peer(model) as peer:
        print(f"start (servers, mem0, prompt read): {time.perf_counter() - started:.1f} s")
        for text in (
            "I always indent Python with tabs.",
            "Change of plan: I now indent Python with 4 spaces.",
        ):
            t = time.perf_counter()
            peer.add(text, user_id="demo")
            print(f"add {time.perf_counter() - t:6.1f} s  {text!r}")
        for query in ("indentation", "How should I indent Python code?"):
            t = time.perf_counter()
            found = peer.search(query, user_id="demo")
            print(f"search {time.perf_counter() - t:5.2f} s  {query!r} -> {found}")
        print("all:", peer.get_all(user_id="demo"))
        peer.reset()
        print("after reset:", peer.get_all(user_id="demo"))


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["worker", config]:
            worker(json.loads(config))
        case ["embed-server", model, port]:
            embed_server(model, int(port))
        case ["demo", *model]:
            demo(model[0] if model else None)
        case _:
            sys.exit(__doc__)
