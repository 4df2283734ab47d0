"""Event logs: SQLite with a JSONL mirror (the default on disk) and in-memory."""

from ..core._log import EventLog, RunInfo
from ._log import MemoryLog, find_run, find_session, shown_ids
from ._peek import peek_runs
from ._sqlite import SQLiteLog

__all__ = [
    "EventLog",
    "MemoryLog",
    "RunInfo",
    "SQLiteLog",
    "find_run",
    "find_session",
    "peek_runs",
    "shown_ids",
]
