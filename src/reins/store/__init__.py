"""Event logs: SQLite with a JSONL mirror (the default on disk), PostgreSQL (many machines,
`reins[postgres]`: `PostgresLog` is imported when first named) and in-memory."""

from typing import TYPE_CHECKING, Any

from ..core._log import EventLog, RunInfo
from ._log import IndexedLog, MemoryLog, find_run, find_session, shown_ids
from ._open import is_postgres, open_log
from ._peek import peek_runs
from ._sqlite import SQLiteLog

if TYPE_CHECKING:
    from ._postgres import PostgresLog


def __getattr__(name: str) -> Any:
    if name == "PostgresLog":  # psycopg only when asked for: the extra may be missing
        from ._postgres import PostgresLog

        return PostgresLog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EventLog",
    "IndexedLog",
    "MemoryLog",
    "PostgresLog",
    "RunInfo",
    "SQLiteLog",
    "find_run",
    "find_session",
    "is_postgres",
    "open_log",
    "peek_runs",
    "shown_ids",
]
