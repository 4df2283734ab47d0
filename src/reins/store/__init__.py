"""Event logs: SQLite with a JSONL mirror (the default on disk) and in-memory."""

from ._log import EventLog, MemoryLog, RunInfo, find_run, find_session
from ._sqlite import SQLiteLog

__all__ = ["EventLog", "MemoryLog", "RunInfo", "SQLiteLog", "find_run", "find_session"]
