"""The default event log: one SQLite database (WAL) per project plus a JSONL mirror per session.

Calls are synchronous inside `async def`: a local SQLite write takes microseconds, far less than
handing it to a thread would.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import LogCorrupted, RunNotFound, StoreError
from .._events import EVENT, Event, StopReason
from ._log import RunInfo, index_update
from ._mirror import Mirror

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    goal TEXT NOT NULL,
    model TEXT NOT NULL,
    started_at TEXT NOT NULL,
    stop_reason TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, started_at);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,
    UNIQUE (run_id, seq)
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, id);
"""
SCHEMA_VERSION = 1


class SQLiteLog:
    """Event log in `<directory>/reins.db`, mirrored to `<directory>/sessions/<id>.jsonl`."""

    def __init__(self, directory: str | Path, *, durable: bool = False) -> None:
        """`durable=True` syncs every commit to disk (survives power loss); the default
        survives any crash of the process, which is what resume needs."""
        self.directory = Path(directory)
        self.path = self.directory / "reins.db"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the event log at {self.path}: {exc}") from None
        try:
            self._setup(durable)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise LogCorrupted(
                f"{self.path} is not a readable reins database ({exc}); move it aside to start "
                "a new log, or restore it from a backup"
            ) from None
        self.mirror = Mirror(self.directory / "sessions")
        self._batch: list[Event] = []
        self._index: dict[str, RunInfo] = {}

    def _setup(self, durable: bool) -> None:
        db = self._db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this reins")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA busy_timeout=5000")
        if version < SCHEMA_VERSION:
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    async def append(self, event: Event, *, commit: bool = True) -> None:
        self._batch.append(event)
        if commit:
            await self.commit()

    async def commit(self) -> None:
        """Write the batch in one transaction, then mirror it. Nothing is held open between
        commits, so other processes can write to the same database meanwhile."""
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        bodies = [EVENT.dump_json(e) for e in batch]
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT INTO events (run_id, seq, session_id, kind, body) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [
                        (e.run_id, e.seq, e.session_id, e.kind, b)
                        for e, b in zip(batch, bodies, strict=True)
                    ],
                )
                for event in batch:
                    self._update_index(event)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._index.clear()
                raise
        except sqlite3.IntegrityError:
            raise StoreError(
                f"run {batch[0].run_id} already has event {batch[0].seq}: another process "
                "is writing this run"
            ) from None
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None
        lines: dict[str, list[bytes]] = {}
        for event, body in zip(batch, bodies, strict=True):
            lines.setdefault(event.session_id, []).append(body + b"\n")
        for session_id, session_lines in lines.items():
            self.mirror.write(session_id, session_lines, partial(self._missing, session_id))

    def _update_index(self, event: Event) -> None:
        info = index_update(self._index.get(event.run_id) or self._load_info(event.run_id), event)
        if info is None:
            return
        self._index[event.run_id] = info
        self._db.execute(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
            (
                info.run_id,
                info.session_id,
                info.goal,
                info.model,
                info.started_at.isoformat(),
                info.stop_reason,
            ),
        )

    def _missing(self, session_id: str, last: tuple[str, int] | None) -> list[bytes]:
        """Committed events of the session after (run_id, seq) `last`."""
        after = 0
        if last is not None:
            row = self._db.execute(
                "SELECT id FROM events WHERE run_id = ? AND seq = ?", last
            ).fetchone()
            if row is None:
                raise LogCorrupted(
                    f"{self.mirror.path(session_id)} holds event {last} that the database "
                    "lacks; the database may have been restored from an older copy"
                )
            after = row[0]
        rows = self._db.execute(
            "SELECT body FROM events WHERE session_id = ? AND id > ? ORDER BY id",
            (session_id, after),
        ).fetchall()
        return [bytes(r[0]) + b"\n" for r in rows]

    async def events(self, run_id: str) -> list[Event]:
        rows = self._query("SELECT seq, body FROM events WHERE run_id = ? ORDER BY seq", run_id)
        if not rows:
            raise RunNotFound(f"no run {run_id!r} in {self.path}")
        events: list[Event] = []
        for seq, body in rows:
            try:
                events.append(EVENT.validate_json(body))
            except ValidationError as exc:
                raise LogCorrupted(
                    f"{self.path}: run {run_id} event {seq} does not parse: "
                    f"{exc.errors()[0]['msg']}"
                ) from None
        return events

    async def runs(self, session_id: str | None = None) -> list[RunInfo]:
        sql = "SELECT * FROM runs"
        rows = (
            self._query(sql + " WHERE session_id = ? ORDER BY started_at", session_id)
            if session_id
            else self._query(sql + " ORDER BY started_at")
        )
        return [_info(row) for row in rows]

    def _load_info(self, run_id: str) -> RunInfo | None:
        row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else _info(row)

    def _query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise LogCorrupted(f"{self.path} cannot be read: {exc}") from None

    async def close(self) -> None:
        await self.commit()
        self.mirror.close()
        self._db.close()


def _info(row: tuple[object, ...]) -> RunInfo:
    run_id, session_id, goal, model, started_at, stop_reason = row
    return RunInfo(
        run_id=str(run_id),
        session_id=str(session_id),
        goal=str(goal),
        model=str(model),
        started_at=datetime.fromisoformat(str(started_at)),
        stop_reason=None if stop_reason is None else StopReason(str(stop_reason)),
    )
