"""A log opened from what `--store` says: a folder (SQLite + JSONL), or a PostgreSQL address."""

from __future__ import annotations

from pathlib import Path

from ..core._errors import StoreError
from ._log import IndexedLog
from ._sqlite import SQLiteLog

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(store: str | Path | None) -> bool:
    """Whether `store` (a --store value) names a PostgreSQL database rather than a folder."""
    return isinstance(store, str) and store.startswith(POSTGRES_SCHEMES)


def open_log(store: str | Path, *, create: bool = True) -> IndexedLog:
    """The log `store` names: `PostgresLog` for a `postgresql://` address (its tables made
    unless `create` is False: then a database without them is an error), else `SQLiteLog`."""
    if not is_postgres(store):
        return SQLiteLog(store)
    try:
        from ._postgres import PostgresLog
    except ImportError:
        raise StoreError(
            "a PostgreSQL store needs reins' postgres extra: pip install 'reins[postgres]'"
        ) from None
    return PostgresLog(str(store), create=create)
