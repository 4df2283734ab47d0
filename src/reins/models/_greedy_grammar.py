"""Greedy decoding under a grammar that consults the grammar only when it must.

llama-cpp-python's sampler filters the whole vocabulary through the grammar before every token
(152,000 candidates a token for Qwen: about a third of a decoding step's time on 2 cores). At
temperature 0 the model's own top token is the answer whenever the grammar allows it, so it is
tried alone first; the whole vocabulary is filtered only for a token the grammar refuses. The
tokens chosen are the same (llama.cpp's server samples the same way: grammar last, and first
only on a rejection).

It also checks drafted tokens (`reins.models._drafts`, set as `draft_model` for a request):
llama-cpp-python's generate evaluates a drafted run with the last token and samples each
position in turn, keeping the drafted tokens up to the first the model would not have chosen.
The library computes every position's logits for that only if the whole context keeps them
(`logits_all`: 152,000 floats a token, copied after every batch); here only a drafted run's
positions get them."""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_cpp import Llama
from llama_cpp import llama_cpp as C
from llama_cpp.llama_grammar import LlamaGrammar

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class GreedyGrammarLlama(Llama):
    """A `Llama` whose greedy, grammar-constrained generations try the top token first."""

    _greedy: _GreedyGrammar | None = None

    def _init_sampler(self, **settings: Any) -> Any:  # type: ignore[override]  # once a generation
        grammar = settings.get("grammar")
        plain = (
            settings.get("temp") == 0.0
            and settings.get("repeat_penalty", 1.0) == 1.0
            and not settings.get("frequency_penalty")
            and not settings.get("presence_penalty")
            and settings.get("logits_processor") is None
        )
        self._greedy = _GreedyGrammar(self, grammar) if grammar is not None and plain else None
        if self._greedy is not None:
            settings["grammar"] = None  # the chain is not used: `sample` below takes over
        else:
            self.draft_model = None  # drafts are checked by the greedy sampler only
        return super()._init_sampler(**settings)

    def eval(self, tokens: Sequence[int]) -> None:
        drafts = self.draft_model
        if drafts is None or getattr(drafts, "start", None) is None or len(tokens) < 2:
            super().eval(tokens)  # the prompt, or a token alone
            return
        # A token and its draft (a few tokens: one batch): each position's logits are kept.
        self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
        self._batch.set_batch(batch=tokens, n_past=self.n_tokens, logits_all=True)
        self._ctx.decode(self._batch)
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self._requires_eval = False

    def sample(self, **settings: Any) -> int:  # type: ignore[override]
        idx = settings.get("idx")
        if self._greedy is None or self._sampler is None:
            return int(super().sample(**settings))
        return self._greedy.sample(-1 if idx is None else idx - self.n_tokens)


class _GreedyGrammar:
    """One generation's grammar state, advanced by each token chosen."""

    def __init__(self, llm: Llama, grammar: LlamaGrammar) -> None:
        self._ctx = llm._ctx.ctx
        self._vocab = llm.n_vocab()
        self._sampler = C.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode(), grammar._root.encode()
        )
        weakref.finalize(self, C.llama_sampler_free, self._sampler)
        self._one = (C.llama_token_data * 1)()
        self._all = (C.llama_token_data * self._vocab)()
        self._all_view = np.ctypeslib.as_array(self._all).view(_TOKEN_DATA)
        self._all_view["id"] = np.arange(self._vocab, dtype=np.int32)

    def sample(self, index: int) -> int:
        pointer = C.llama_get_logits_ith(self._ctx, index)
        logits = np.ctypeslib.as_array(pointer, shape=(self._vocab,))
        token = int(np.argmax(logits))
        if not self._allows(token, float(logits[token])):
            token = self._best_allowed(logits)
        C.llama_sampler_accept(self._sampler, token)
        return token

    def _allows(self, token: int, logit: float) -> bool:
        self._one[0] = C.llama_token_data(token, logit, 0.0)
        self._apply(self._one, 1)
        return bool(np.isfinite(self._one[0].logit))

    def _best_allowed(self, logits: np.ndarray[Any, Any]) -> int:
        self._all_view["logit"] = logits
        self._apply(self._all, self._vocab)
        return int(np.argmax(self._all_view["logit"]))

    def _apply(self, data: ctypes.Array[Any], size: int) -> None:
        candidates = C.llama_token_data_array(data=data, size=size, selected=-1, sorted=False)
        C.llama_sampler_apply(self._sampler, ctypes.byref(candidates))
