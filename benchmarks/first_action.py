"""A new run's first action on the default embedded model, with and without the prefix cache,
and the decoding choices on a file edit.

    PYTHONPATH=src python benchmarks/first_action.py [--runs 5] [--model local] [--decoding 3]

First action: each run is a fresh `reins run --json` process (its imports, the model's load
and its first request included), timed from its start to its first action; the step time
is the gap between its first and second model responses. Four kinds of run alternate, so
they share the machine's noise: cold (`REINS_PREFIX_CACHE=0`), warm (the cache holds this
very prompt), warm with a goal never seen (only the system prompt and the tools are shared)
and warm without drafted tokens (`REINS_LOCAL_DRAFTS=0`). With `--no-repack`, runs with
llama.cpp's weight repacking off (`REINS_LOCAL_REPACK=0`) alternate with them too. The cache
lives in a folder of the benchmark's own (the models' folder linked in).

Decoding (`--decoding N`, N rounds of paired requests, 0: skip), on a request to rewrite a file
just read: the decode rate and whether the reply is the same, for reins's sampler (the grammar
consulted for the top token first, `reins.models._greedy_grammar`, with and without drafted
tokens checked in one batch, `reins.models._drafts`), llama-cpp-python's own
(the grammar filters the whole vocabulary before every token), and its
`LlamaPromptLookupDecoding` (draft tokens taken from the prompt).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOAL = "Create the file hello.txt containing the text: Hello from reins"


def new_run(goal: str, env: dict[str, str], model: str) -> tuple[float, float | None]:
    """Seconds from a fresh process's start to its first action (the first model response:
    the embedded model's every reply is one action), and between its first two responses
    (None: the run had one)."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        command = [sys.executable, "-m", "reins", "run", goal, "--json", "--max-steps", "2"]
        command += ["--model", model, "--workspace", str(workspace), "--store", f"{tmp}/store"]
        start = time.perf_counter()
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert child.stdout is not None
        responses: list[float] = []
        for line in child.stdout:
            if line.startswith("{") and json.loads(line).get("kind") == "model_response":
                responses.append(time.perf_counter() - start)
        child.wait()
    if not responses:
        raise SystemExit(f"the run of {goal!r} had no model response (exit {child.returncode})")
    step = responses[1] - responses[0] if len(responses) > 1 else None
    return responses[0], step


def first_actions(runs: int, model: str, plain: bool) -> None:
    cache = Path(tempfile.mkdtemp(prefix="reins-bench-cache-"))
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    (cache / "reins").mkdir()
    if (home / "reins" / "models").is_dir():  # the assembled models, not assembled again
        (cache / "reins" / "models").symlink_to(home / "reins" / "models")
    # A loaded machine may take longer than the first-chunk guard's 90 s: a retry would be
    # timed, not the request.
    base = {
        **os.environ,
        "XDG_CACHE_HOME": str(cache),
        "PYTHONUNBUFFERED": "1",
        "REINS_FIRST_CHUNK_TIMEOUT": "1800",
    }
    base["REINS_LOCAL_REPACK"] = "1"
    cold_env = {**base, "REINS_PREFIX_CACHE": "0"}
    warm_env = {**base, "REINS_PREFIX_CACHE": "1"}
    plain_env = {**warm_env, "REINS_LOCAL_REPACK": "0"}  # an entry of its own (its key)
    undrafted_env = {**warm_env, "REINS_LOCAL_DRAFTS": "0"}
    new_run(GOAL, warm_env, model)  # fills the cache
    if plain:
        new_run(GOAL, plain_env, model)
    kinds: dict[str, list[tuple[float, float | None]]] = {
        "cold": [],
        "warm": [],
        "new goal": [],
        "warm, no drafts": [],
    }
    if plain:
        kinds |= {"warm, not repacked": [], "new goal, not repacked": []}
    for n in range(runs):
        kinds["cold"].append(new_run(GOAL, cold_env, model))
        kinds["warm"].append(new_run(GOAL, warm_env, model))
        other = f"Create the file note{n}.txt containing the text: run {n} of the benchmark"
        kinds["new goal"].append(new_run(other, warm_env, model))
        kinds["warm, no drafts"].append(new_run(GOAL, undrafted_env, model))
        if plain:
            kinds["warm, not repacked"].append(new_run(GOAL, plain_env, model))
            other = f"Create the file plain{n}.txt containing the text: run {n}"
            kinds["new goal, not repacked"].append(new_run(other, plain_env, model))
        print(f"run {n + 1}: " + ", ".join(f"{k} {v[-1][0]:.1f}s" for k, v in kinds.items()))
    print(f"{model}, median of {runs} fresh processes (first action / step 2):")
    for kind, values in kinds.items():
        first = statistics.median(v[0] for v in values)
        steps = [v[1] for v in values if v[1] is not None]
        step = f"{statistics.median(steps):.1f}s" if steps else "-"
        print(f"  {kind:22} first action {first:.1f}s, step 2 {step}")
    entries = list((cache / "reins" / "prefix").glob("*.prefix"))
    size = sum(p.stat().st_size for p in entries)
    print(f"  cache: {len(entries)} entries, {size / 1e6:.0f} MB")


FILE = "\n".join(
    [
        '"""Settings of the web service."""',
        "",
        "import os",
        "",
        "HOST = os.environ.get('HOST', '127.0.0.1')",
        "PORT = 8080",
        "WORKERS = 4",
        "TIMEOUT = 30",
        "",
        "",
        "def database_url() -> str:",
        '    """Where the service keeps its data."""',
        "    user = os.environ.get('DB_USER', 'service')",
        "    host = os.environ.get('DB_HOST', 'localhost')",
        "    return f'postgresql://{user}@{host}:5432/service'",
        "",
        "",
        "def describe() -> str:",
        "    return f'{HOST}:{PORT} with {WORKERS} workers, timeout {TIMEOUT}s'",
        "",
    ]
)


async def decoding(pairs: int, embedded: str | None) -> None:
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from reins import ModelSettings, SystemMessage, ToolCall, UserMessage
    from reins.core._messages import AssistantMessage, Message, ToolResultMessage
    from reins.core._model import ModelResponse, TextChunk
    from reins.models import LocalModel
    from reins.models._embedded import DEFAULT_EMBEDDED, embedded_gguf
    from reins.models._local import _default_threads
    from reins.tools import final_answer, read_file, write_file

    @dataclass(kw_only=True)
    class Stock(LocalModel):
        """The embedded model on llama-cpp-python's own `Llama` (and its options)."""

        options: dict[str, Any]

        def load(self) -> Any:
            if self._llm is None:
                threads = self.threads or _default_threads()
                self._llm = Llama(
                    model_path=str(embedded_gguf(self.embedded or DEFAULT_EMBEDDED)),
                    n_ctx=self.n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                    **self.options,
                )
            return self._llm

    call = ToolCall(id="c1", name="read_file", arguments={"path": "settings.py"})
    messages: list[Message] = [
        SystemMessage(content="You are an agent. Change files with write_file."),
        UserMessage(content="In settings.py, change the port from 8080 to 9090."),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="c1", name="read_file", content=FILE),
    ]
    tools = [read_file.spec, write_file.spec, final_answer.spec]

    async def timed(model: LocalModel) -> tuple[float, str]:
        first = end = None
        response = None
        async for item in model.stream(messages, tools, ModelSettings(max_tokens=600)):
            if isinstance(item, TextChunk) and first is None:
                first = time.perf_counter()
            elif isinstance(item, ModelResponse):
                end, response = time.perf_counter(), item
        assert first is not None
        assert end is not None
        assert response is not None
        rate = (response.usage.output_tokens - 1) / (end - first)
        return rate, json.dumps([c.arguments for c in response.message.tool_calls])

    lookup = {
        "draft_model": LlamaPromptLookupDecoding(num_pred_tokens=10),
        # Implied by a draft model, yet without it the logits array is sized for one batch
        # only, and a longer prompt fails (llama-cpp-python 0.3.36).
        "logits_all": True,
    }
    models = {
        "reins": LocalModel(embedded=embedded, prefix_cache=False),
        "no drafts": LocalModel(embedded=embedded, prefix_cache=False, drafts=False),
        "grammar first": Stock(embedded=embedded, prefix_cache=False, options={}),
        "prompt lookup": Stock(embedded=embedded, prefix_cache=False, options=lookup),
    }
    rates: dict[str, list[float]] = {name: [] for name in models}
    replies: dict[str, set[str]] = {name: set() for name in models}
    for n in range(pairs):  # the rate is the decode's, after the first token
        for name, model in models.items():
            rate, reply = await timed(model)
            replies[name].add(reply)
            rates[name].append(rate)
            print(f"pair {n + 1}: {name} {rate:.1f} tok/s")
    for name in models:
        print(f"{name:13}: median {statistics.median(rates[name]):.1f} tok/s")
    same = len(replies["reins"]) == 1 and all(t == replies["reins"] for t in replies.values())
    print(f"same reply: {same}")
    if not same:
        for name, texts in replies.items():
            for text in texts:
                print(f"  {name}: {text[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="fresh processes of each kind")
    parser.add_argument("--model", default="local")
    parser.add_argument(
        "--no-repack", action="store_true", help="also warm runs with the weights as filed"
    )
    parser.add_argument("--decoding", type=int, default=3, help="rounds of requests (0: skip)")
    args = parser.parse_args()
    if args.runs:
        first_actions(args.runs, args.model, args.no_repack)
    if args.decoding:
        embedded = args.model.removeprefix("local").removeprefix(":") or None
        asyncio.run(decoding(args.decoding, embedded))


if __name__ == "__main__":
    main()
