"""Event logs: SQLite with a JSONL mirror (the default on disk) and in-memory."""

from ..core._log import EventLog, RunInfo
from ._log import MemoryLog, find_run, find_session
from ._sqlite import SQLiteLog

__all__ = ["EventLog", "MemoryLog", "RunInfo", "SQLiteLog", "find_run", "find_session"]
