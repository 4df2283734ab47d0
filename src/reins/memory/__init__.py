"""Memory across sessions: facts an agent keeps, with when they were true and whose they are.

A turn's new messages are read when it ends (and before a compaction takes them out of the
window) for facts worth keeping: one model call extracts them, a second reconciles each with
the kept facts most like it, if any (`Capture`). A fact is never deleted when it stops being
true, but closed (`invalid_at`, `expired_at`), so what was true at a date can be asked
(`as_of`). Facts are
recalled at a session's start ("What you remember", `RecallSection`) and by `memory_search`,
by words (BM25) and, with `Embeddings`, by meaning too.
Which scopes a run reads and writes is the deployment's policy (`Memory`), never the model's.
Secrets are never kept; `reins memory forget` deletes for real.
"""

from ._capture import Capture
from ._errors import FactError, MemoryStoreError
from ._fact import SCOPES, Fact, Scope
from ._facts import FactStore
from ._memories import Memories, user_facts
from ._recall import RecallSection, memory_search_tool
from ._secrets import secret_in
from ._settings import Memory
from ._vectors import EmbeddingError, Embeddings

__all__ = [
    "SCOPES",
    "Capture",
    "EmbeddingError",
    "Embeddings",
    "Fact",
    "FactError",
    "FactStore",
    "Memories",
    "Memory",
    "MemoryStoreError",
    "RecallSection",
    "Scope",
    "memory_search_tool",
    "secret_in",
    "user_facts",
]
