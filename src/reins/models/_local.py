"""The embedded models: llama.cpp in this process (extra `reins[local]`), offline.

Small models keep to the strict JSON action protocol, and decoding is constrained by a grammar
made from the tools' schemas, so every sampled reply is a valid action. Generation runs in a
worker thread; its tokens cross to the event loop one by one, and closing the stream stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..core._errors import ModelError, UsageError
from ..core._events import FinishReason
from ..core._messages import Message, ToolSpec, Usage
from ..core._model import ModelResponse, ModelSettings, StreamItem, TextChunk
from . import _json_actions
from ._embedded import DEFAULT_EMBEDDED, embedded_gguf, embedded_model
from ._resilience import Retried

DEFAULT_MAX_TOKENS = 1024
TEMPLATE_TOKENS = 5
"""Tokens a chat template puts around a message (`<|im_start|>user\n` … `<|im_end|>\n`)."""


@dataclass(kw_only=True)
class LocalModel(Retried):
    """A GGUF model run by llama-cpp-python; by default the default embedded model."""

    path: str | Path | None = None
    """The GGUF file; None: an embedded model."""
    embedded: str | None = None
    """The embedded model's name (`reins.models._embedded.EMBEDDED`) when `path` is None;
    None: `DEFAULT_EMBEDDED`."""
    n_ctx: int = 8192
    threads: int | None = None
    """Threads for decoding and prompt processing; None: `$REINS_LOCAL_THREADS`, else every
    physical core this process may run on (llama-cpp-python's own default is half the
    logical CPUs: one of two cores on a machine without hyperthreads). On a machine busy with
    other work (parallel runs), fewer threads are far faster: llama.cpp's threads wait on each
    other, so one descheduled thread stalls them all."""
    constrained: bool = True
    """Constrain decoding to valid actions (a grammar from the tools' JSON schemas)."""
    seed: int | None = 0
    """The sampling seed of every request: above temperature 0 (a repair's bump), the same
    conversation gets the same reply, run after run. None: llama-cpp-python's own (it
    changes from request to request)."""
    drafts: bool | None = None
    """Draft the next tokens of an action (its structure, text the prompt holds) and check
    them in one batch (`reins.models._drafts`). None: `$REINS_LOCAL_DRAFTS` (1 or 0), else
    on."""
    prefix_cache: bool = True
    """Keep the state of a prompt's evaluated prefix on disk for later processes
    (`reins.models._prefix_cache`; `REINS_PREFIX_CACHE=0` turns it off for every model)."""
    repack: bool | None = None
    """Let llama.cpp repack the weights at load into its interleaved CPU layout (600 MB of
    the default model rewritten). On 2 cores a step is 11 % faster with it (the task suite's
    median), but every load slower: by 0.5 s when the last process repacked too, by 3.5-4.5 s
    after other work (benchmarks/first_action.py). Off suits a one-shot run whose first
    action matters more than its later steps. None: `$REINS_LOCAL_REPACK` (1 or 0), else on."""
    actions: ClassVar[str] = "json"
    vision: ClassVar[bool] = False
    """It reads text only: the loop tells it of an image or document in place of sending it."""
    """The action protocol: the loop adds the strict-actions policy for it."""
    _llm: Any = field(default=None, init=False, repr=False)
    _busy: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _prefixes: Any = field(default=None, init=False, repr=False)
    _drafting: bool = field(default=False, init=False, repr=False)

    @property
    def name(self) -> str:
        if self.path is not None:
            return f"local:{self.path}"
        return "local" if self.embedded is None else f"local:{self.embedded}"

    @property
    def context_window(self) -> int:
        """The context it allocates (`n_ctx`); once loaded, no more than it was trained for."""
        if self._llm is None:
            return self.n_ctx
        return int(min(self._llm.n_ctx(), self._llm.n_ctx_train()))

    def count_tokens(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        """The tokens of a request, by the model's own tokenizer (its chat template's markers
        estimated per message). Tokenizing reads only the vocabulary: no lock is needed."""
        llm = self.load()
        return sum(
            len(llm.tokenize(m["content"].encode(), add_bos=False, special=True)) + TEMPLATE_TOKENS
            for m in _json_actions.chat(messages, tools)
        )

    def load(self) -> Any:
        if self._llm is None:
            try:
                from ._greedy_grammar import GreedyGrammarLlama
            except ImportError:
                raise UsageError(
                    "the local model needs llama-cpp-python: pip install llama-cpp-python"
                ) from None
            path = (
                Path(self.path)
                if self.path is not None
                else embedded_gguf(self.embedded or DEFAULT_EMBEDDED)
            )
            if not path.is_file():
                raise UsageError(f"no GGUF model file at {path}")
            threads = self.threads or _default_threads()
            repack = _switch("REINS_LOCAL_REPACK", "repack") if self.repack is None else self.repack
            with _model_params(use_extra_bufts=repack):
                llm = GreedyGrammarLlama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                )
            self._prefixes = self._prefix_store(llm, path)
            self._drafting = (
                _switch("REINS_LOCAL_DRAFTS", "draft") if self.drafts is None else self.drafts
            )
            self._llm = llm
        return self._llm

    def _prefix_store(self, llm: Any, path: Path) -> Any:
        """The on-disk prefix cache for this model file and context, unless it is off (or
        the model is recurrent: its state cannot be cut back to a shared prefix)."""
        import llama_cpp

        from . import _prefix_cache

        if not (self.prefix_cache and _prefix_cache.enabled()):
            return None
        if llama_cpp.llama_model_is_recurrent(llm.model) or llama_cpp.llama_model_is_hybrid(
            llm.model
        ):
            return None
        if self.path is None:  # the catalog's sha256 (checked when a Qwen was assembled)
            model_id = f"sha256:{embedded_model(self.embedded or DEFAULT_EMBEDDED).sha256}"
        else:  # hashing a user's GGUF would cost seconds a process: its identity on disk
            info = path.stat()
            model_id = f"file:{path.resolve()}:{info.st_size}:{info.st_mtime_ns}"
        key = _prefix_cache.cache_key(llm, model_id)
        return _prefix_cache.PrefixStore(_prefix_cache.cache_folder(), key)

    async def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()
        max_tokens = settings.max_tokens or DEFAULT_MAX_TOKENS
        # With no tool to be called (the summary at a cap), a plain-text reply: no action
        # rules, no grammar.
        actions = () if settings.tool_choice == "none" else tools
        # A tool a repair excludes stays in the prompt (its prefix is cached), not the grammar.
        allowed = [t for t in actions if t.name not in settings.excluded_tools] or actions
        schema = (
            _json_actions.action_schema(
                allowed, max_chars=max_tokens, arguments=settings.argument_schemas
            )
            if self.constrained and actions
            else None
        )
        chat = _json_actions.chat(messages, actions)

        def work() -> None:
            def put(kind: str, value: Any) -> None:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

            try:
                with self._busy:  # one generation at a time: llama.cpp state is not shared
                    llm = self.load()
                    from ._prefix_cache import PromptHook

                    hook = PromptHook(llm, self._prefixes)
                    llm.cache = hook  # consulted with the prompt's tokens, then gone
                    if schema is not None and self._drafting:
                        llm.draft_model = _action_drafts(llm, schema)
                    chunks = llm.create_chat_completion(
                        messages=chat,
                        grammar=None if schema is None else _grammar(schema),
                        max_tokens=max_tokens,
                        temperature=0.0 if settings.temperature is None else settings.temperature,
                        seed=self.seed,
                        stream=True,
                    )
                    tokens = 0
                    finish = None
                    for chunk in chunks:
                        if stop.is_set():
                            chunks.close()  # stops generating
                            if hook.worth_saving():  # a timed-out first reply's prompt too
                                hook.save()
                            return
                        choice = chunk["choices"][0]
                        finish = choice.get("finish_reason") or finish
                        if text := choice["delta"].get("content"):
                            tokens += 1
                            put("text", text)
                    if hook.worth_saving():
                        hook.save()
                    put("done", (finish, tokens, hook.prompt, hook.reused))
            except BaseException as exc:  # reported to the awaiting side, never lost in a thread
                put("error", exc)
            finally:
                if self._llm is not None:
                    self._llm.cache = None
                    self._llm.draft_model = None

        worker = threading.Thread(target=work, name="reins-local-model", daemon=True)
        worker.start()
        text: list[str] = []
        try:
            while True:
                kind, value = await queue.get()
                if kind == "text":
                    text.append(value)
                    yield TextChunk(value)
                elif kind == "error":
                    if isinstance(value, UsageError):
                        raise value
                    raise ModelError(f"the local model failed: {value!r}") from value
                else:
                    finish, output_tokens, input_tokens, reused = value
                    break
        finally:
            stop.set()
        message = _json_actions.reply("".join(text), actions)
        reason: FinishReason = (
            "max_tokens" if finish == "length" else "tool_use" if message.tool_calls else "end_turn"
        )
        yield ModelResponse(
            message=message,
            usage=Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                requests=1,
                cache_read_tokens=min(reused, input_tokens),  # kept in the context, not evaluated
            ),
            finish=reason,
            model_name=self.name,
        )


def _grammar(schema: dict[str, Any]) -> Any:
    """Only valid actions: those `schema` (`_json_actions.action_schema`) admits."""
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(_gbnf(schema), verbose=False)


def _action_drafts(llm: Any, schema: dict[str, Any]) -> Any:
    from ._drafts import ActionDrafts, Shape

    return ActionDrafts(
        Shape(schema),
        tokenize=lambda text: llm.tokenize(text.encode(), add_bos=False),
        detokenize=lambda token: llm.detokenize([token]),
    )


def _gbnf(schema: dict[str, Any]) -> str:
    """llama-cpp-python's JSON schema to GBNF, with a backslash in a literal escaped: its
    converter leaves it (a `const` or `enum` string holding a quote, `"http": {`, came out as
    `\\"`, which closes the literal; the grammar failed to parse and nothing was held)."""
    from llama_cpp import llama_grammar

    base: Any = llama_grammar.SchemaConverter  # untyped

    class Converter(base):  # type: ignore[misc]
        def _format_literal(self, literal: str) -> str:
            return str(super()._format_literal(literal.replace("\\", "\\\\")))

    converter: Any = Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    converter.visit(converter.resolve_refs(schema, "stdin"), "")
    return str(converter.format_grammar())


_PARAMS_LOCK = threading.Lock()


@contextlib.contextmanager
def _model_params(**settings: Any) -> Iterator[None]:
    """Model settings `Llama` takes no argument for: its constructor starts from
    `llama_model_default_params()`, so that is wrapped while one is constructed."""
    from llama_cpp import llama_cpp as C

    defaults = C.llama_model_default_params

    def params() -> Any:
        value = defaults()
        for name, setting in settings.items():
            setattr(value, name, setting)
        return value

    with _PARAMS_LOCK:
        C.llama_model_default_params = params
        try:
            yield
        finally:
            C.llama_model_default_params = defaults


def _switch(variable: str, verb: str) -> bool:
    """An on-by-default setting's environment variable: 1 (or unset) or 0."""
    raw = os.environ.get(variable, "1")
    if raw not in ("0", "1"):
        raise UsageError(f"{variable}={raw!r} is neither 1 ({verb}) nor 0 (do not)")
    return raw == "1"


def _default_threads() -> int:
    """`$REINS_LOCAL_THREADS`, else one thread per physical core this process may use: a
    second hyperthread on a core slows llama.cpp's matrix work rather than speeding it."""
    if raw := os.environ.get("REINS_LOCAL_THREADS"):
        if not raw.isdigit() or int(raw) < 1:
            raise UsageError(f"REINS_LOCAL_THREADS={raw!r} is not a number of threads above 0")
        return int(raw)
    if not hasattr(os, "sched_getaffinity"):
        return os.cpu_count() or 1
    cpus = os.sched_getaffinity(0)  # a container's or taskset's share, not the whole machine
    try:
        cores = {
            Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list").read_text()
            for cpu in cpus
        }
    except OSError:  # no topology to read: count every CPU
        return len(cpus)
    return len(cores)
