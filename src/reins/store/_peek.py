"""A quick look at a log's run index, as shell completion takes one: read-only, no journal
read or verified, nothing made or changed, and nothing at all if there is no log."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from ..core._log import RunInfo
from ._sqlite import _info


def peek_runs(directory: Path) -> list[RunInfo]:
    """The runs the index of the log in `directory` lists, latest first (a journal written
    since it was last indexed may be missing); [] if there is no log or it cannot be read."""
    database = directory / "reins.db"
    if not database.is_file():
        return []
    try:
        uri = f"{database.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=0.5)) as db:
            rows = db.execute(
                "SELECT run_id, session_id, goal, model, started_at, stop_reason FROM runs "
                "ORDER BY started_at DESC"
            ).fetchall()
        return [_info(row) for row in rows]
    except (sqlite3.Error, ValueError):  # locked, damaged, another schema: nothing to offer
        return []
