"""Recall by meaning (optional): each fact's embedding from an OpenAI-compatible `/v1/embeddings`
(OpenAI's, Ollama's, llama.cpp's `llama-server --embeddings`, vLLM's), kept beside it in the
memory's file, and the facts nearest a query found by cosine similarity, merged with the BM25
matches by reciprocal rank (`hybrid`). Recall by words works without it.

Facts get their vector when a recall first reads them (`index`): captures, `reins memory add`
and imports need no embedder, and a change of embedding model re-embeds what it reads. The
similarity is computed with numpy over the vectors of the scopes a run reads, not by the
`sqlite-vec` extension: Python builds without loadable SQLite extensions are common (pyenv's,
macOS's), and a second SQLite library on the same file in one process (apsw, pysqlite3) risks
its corruption (two copies' POSIX locks undo each other: sqlite.org/howtocorrupt.html)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core._errors import RunError, UsageError

if TYPE_CHECKING:
    from ._fact import Fact, Scope
    from ._memories import Memories

BATCH = 64
"""Texts embedded a request (a recall's backlog goes in several)."""
BACKLOG = 512
"""Facts a recall embeds at most before it searches (the rest at the next)."""
RRF = 60
"""Reciprocal rank fusion's constant: a fact ranked r in a list scores 1 / (RRF + r)."""


class EmbeddingError(RunError):
    """The embedding server failed or answered what is not an embedding; the message names
    the server and what to do."""


@dataclass(frozen=True, kw_only=True)
class Embeddings:
    """An OpenAI-compatible embedding model: `model` at `base_url` (None: OpenAI's), with
    `api_key` (None: OPENAI_API_KEY, or none for a local server).

        Memory(embeddings=Embeddings(model="nomic-embed-text", base_url="http://127.0.0.1:11434/v1"))
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        try:
            import numpy  # noqa: F401
        except ImportError:
            raise UsageError(
                "recall by meaning (memory embeddings) needs numpy: pip install 'reins[vector]'"
            ) from None
        if not self.timeout > 0:
            raise UsageError(f"embeddings timeout={self.timeout!r}: seconds above 0")

    @property
    def name(self) -> str:
        """What a vector is kept under: vectors of two models are not comparable."""
        return f"{self.model} @ {self.base_url or 'https://api.openai.com/v1'}"

    async def embed(self, texts: Sequence[str]) -> list[bytes]:
        """Each text's embedding, unit length, as float32 bytes."""
        import numpy as np
        import openai

        where = self.base_url or "OpenAI"
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "none",
            timeout=self.timeout,
            max_retries=1,
        )
        vectors: list[bytes] = []
        try:
            async with client:
                for start in range(0, len(texts), BATCH):
                    chunk = list(texts[start : start + BATCH])
                    answer = await client.embeddings.create(model=self.model, input=chunk)
                    got = sorted(answer.data, key=lambda d: d.index)
                    if len(got) != len(chunk):
                        raise EmbeddingError(
                            f"embeddings server {where} gave {len(got)} vectors for "
                            f"{len(chunk)} texts: check that it serves embeddings"
                        )
                    for item in got:
                        vector = np.asarray(item.embedding, dtype=np.float32)
                        norm = float(np.linalg.norm(vector))
                        if vector.ndim != 1 or not norm > 0:
                            raise EmbeddingError(
                                f"embeddings server {where} gave no usable vector (model "
                                f"{self.model!r}): does it pool each text into one?"
                            )
                        vectors.append((vector / norm).tobytes())
        except openai.APIConnectionError as exc:
            raise EmbeddingError(
                f"embeddings server {where} cannot be reached ({exc.__cause__ or exc}): "
                "start it, or check memory.embeddings"
            ) from None
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"embeddings server {where} refused (HTTP {exc.status_code}: "
                f"{_brief(exc.message)}): check the model {self.model!r} and its key"
            ) from None
        except (openai.OpenAIError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embeddings server {where} failed: {_brief(str(exc))}") from None
        return vectors


def _brief(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199] + "…"


async def index(
    memories: Memories, embeddings: Embeddings, scopes: Sequence[tuple[Scope, str]]
) -> int:
    """Embed the facts of `scopes` that have no vector of this model yet (the newest first,
    at most `BACKLOG`); how many were."""
    missing = await asyncio.to_thread(
        memories.unembedded, embeddings.name, scopes=scopes, limit=BACKLOG
    )
    if not missing:
        return 0
    vectors = await embeddings.embed([text for _, text in missing])
    rows = [(fact_id, vector) for (fact_id, _), vector in zip(missing, vectors, strict=True)]
    await asyncio.to_thread(memories.put_vectors, embeddings.name, rows)
    return len(rows)


async def hybrid(
    memories: Memories,
    embeddings: Embeddings | None,
    query: str,
    *,
    scopes: Sequence[tuple[Scope, str]],
    as_of: datetime | None = None,
    limit: int = 10,
) -> tuple[list[Fact], str]:
    """The facts of `scopes` valid at `as_of` that best match `query`: its BM25 matches and,
    with `embeddings`, the facts nearest its meaning, merged by reciprocal rank. Also why
    recall by meaning failed ("" if it did not): the words' matches still come."""
    by_words = await asyncio.to_thread(
        memories.search, query, scopes=scopes, as_of=as_of, limit=limit
    )
    if embeddings is None or not query.strip():
        return by_words, ""
    try:
        await index(memories, embeddings, scopes)
        (vector,) = await embeddings.embed([query])
    except EmbeddingError as exc:
        return by_words, str(exc)
    by_meaning = await asyncio.to_thread(
        memories.nearest, vector, embeddings.name, scopes=scopes, as_of=as_of, limit=limit
    )
    return fused([by_words, by_meaning])[:limit], ""


def fused(rankings: Sequence[Sequence[Fact]]) -> list[Fact]:
    """Several rankings as one (reciprocal rank fusion): a fact high in any list, or in
    both, comes first."""
    score: dict[str, float] = {}
    facts: dict[str, Any] = {}
    for ranking in rankings:
        for rank, fact in enumerate(ranking, start=1):
            score[fact.id] = score.get(fact.id, 0.0) + 1.0 / (RRF + rank)
            facts.setdefault(fact.id, fact)
    return [facts[i] for i in sorted(score, key=lambda i: -score[i])]
