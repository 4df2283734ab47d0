"""The default event log: a JSONL journal per session, indexed in one SQLite database (WAL).

The journal is the durable record: a commit is one write of whole lines, made before the run acts
on them. The database is an index for queries (`reins sessions`, `show`, the server), filled from
what this process wrote at most `INDEX_EVERY` seconds later, and from the journals themselves
when it lags (after a crash, or for another process's runs). Delete it and it is rebuilt.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import LogCorrupted, RunNotFound, StoreError
from .._events import EVENT, Event
from .._stop import StopReason
from ._journal import Journals
from ._log import RunInfo, index_update

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
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journals (
    session_id TEXT PRIMARY KEY,
    indexed_bytes INTEGER NOT NULL
);
"""
SCHEMA_VERSION = 2
RUN_INDEX_KINDS = frozenset({"run_started", "run_resumed", "run_finished"})
INDEX_EVERY = 0.05
"""Seconds a busy loop may run ahead of the index; a real model call takes longer than this,
so in practice the index follows each commit."""


class SQLiteLog:
    """Event log under `directory`: `sessions/<id>.jsonl` journals and `reins.db`, their index."""

    def __init__(self, directory: str | Path, *, durable: bool = False) -> None:
        """`durable=True` fsyncs every commit (survives power loss, not only a crash)."""
        self.directory = Path(directory)
        self.path = self.directory / "reins.db"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the event log at {self.path}: {exc}") from None
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise LogCorrupted(
                f"{self.path} is not a readable reins database ({exc}); move it aside (it is "
                "an index, rebuilt from the session journals) or restore it from a backup"
            ) from None
        self.journals = Journals(self.directory / "sessions", durable=durable)
        self._batch: list[Event] = []
        self._unindexed: list[tuple[Event, bytes]] = []
        self._journal_sizes: dict[str, int] = {}
        self._next_seq: dict[str, int] = {}
        self._live: dict[str, set[str]] = {}
        """Runs going on in this process, by session: a journal is kept open while it has one."""
        self._runs: dict[str, RunInfo] = {}
        self._indexed_at = time.monotonic()
        self._catch_up()

    def _setup(self) -> None:
        db = self._db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this reins")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        if version < SCHEMA_VERSION:
            db.executescript(
                "DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS events;"  # an index: rebuilt
                + SCHEMA
                + f"PRAGMA user_version={SCHEMA_VERSION};"
            )

    async def append(self, event: Event, *, commit: bool = True) -> None:
        expected = self._next_seq.get(event.run_id) or (
            1 if event.kind == "run_started" else self._first_seq(event.run_id)
        )
        if event.seq != expected:
            raise StoreError(
                f"run {event.run_id}: event {event.seq} arrived where {expected} was due; "
                "is another process driving this run?"
            )
        self._next_seq[event.run_id] = event.seq + 1
        self._batch.append(event)
        if commit:
            await self.commit()

    def _first_seq(self, run_id: str) -> int:
        row = self._db.execute("SELECT max(seq) FROM events WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0] or 0) + 1

    async def commit(self) -> None:
        """Journal the batch: one write per session, handed to the OS before returning."""
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        rows = [(e, e.__pydantic_serializer__.to_json(e)) for e in batch]  # as EVENT.dump_json
        lines: dict[str, list[bytes]] = {}
        for event, body in rows:
            lines.setdefault(event.session_id, []).append(body + b"\n")
        try:
            for session_id, session_lines in lines.items():
                self._journal_sizes[session_id] = self.journals.append(session_id, session_lines)
            for event, _ in rows:
                if event.kind in RUN_INDEX_KINDS:
                    self._track_live(event)
        except OSError as exc:
            raise StoreError(f"cannot write the journal under {self.directory}: {exc}") from None
        self._unindexed.extend(rows)  # only what is journaled gets indexed
        if time.monotonic() - self._indexed_at >= INDEX_EVERY:
            self._index()

    def _track_live(self, event: Event) -> None:
        live = self._live.setdefault(event.session_id, set())
        if event.kind != "run_finished":
            live.add(event.run_id)
            return
        live.discard(event.run_id)
        if not live:  # no run of the session goes on here: let others write it
            del self._live[event.session_id]
            self.journals.release(event.session_id)

    def _index(self) -> None:
        """Put what this process journaled into the database, in one transaction."""
        if not self._unindexed:
            return
        rows, self._unindexed = self._unindexed, []
        sizes, self._journal_sizes = self._journal_sizes, {}
        self._write_index(rows, sizes)
        self._indexed_at = time.monotonic()

    def _write_index(self, rows: list[tuple[Event, bytes]], sizes: dict[str, int]) -> None:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)",
                    [(e.run_id, e.seq, e.session_id, e.kind, body) for e, body in rows],
                )
                for event, _ in rows:
                    if event.kind in RUN_INDEX_KINDS:
                        self._update_run(event)
                db.executemany(
                    "INSERT INTO journals VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE "
                    "SET indexed_bytes = max(indexed_bytes, excluded.indexed_bytes)",
                    list(sizes.items()),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._runs.clear()
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the index {self.path}: {exc}") from None

    def _update_run(self, event: Event) -> None:
        info = index_update(self._runs.get(event.run_id) or self._load_run(event.run_id), event)
        if info is None:
            return
        self._runs[event.run_id] = info
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

    def _catch_up(self) -> None:
        """Index journal lines the database lacks: left by a crash, or by another process."""
        known = dict(self._query("SELECT session_id, indexed_bytes FROM journals"))
        directory = self.journals.directory
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            session_id = path.stem
            indexed = int(known.get(session_id, 0))
            size = path.stat().st_size
            if size < indexed:
                raise LogCorrupted(
                    f"{path} is shorter ({size} bytes) than the index says it was "
                    f"({indexed}); it was truncated or replaced after it was written"
                )
            if size > indexed:
                self._ingest(path, session_id, indexed)

    def _ingest(self, path: Path, session_id: str, offset: int) -> None:
        tail = self.journals.read_from(session_id, offset)
        rows: list[tuple[Event, bytes]] = []
        for number, line in enumerate(tail.lines):
            try:
                rows.append((EVENT.validate_json(line), line))
            except ValidationError as exc:
                before = path.read_bytes()[:offset].count(b"\n")
                raise LogCorrupted(
                    f"{path}, line {before + number + 1}, is not a reins event: "
                    f"{exc.errors()[0]['msg']}"
                ) from None
        self._write_index(rows, {session_id: tail.end})

    async def events(self, run_id: str) -> list[Event]:
        self._refresh()
        rows = self._query("SELECT seq, body FROM events WHERE run_id = ? ORDER BY seq", run_id)
        if not rows:
            raise RunNotFound(f"no run {run_id!r} in {self.directory}")
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
        self._refresh()
        sql = "SELECT * FROM runs"
        rows = (
            self._query(sql + " WHERE session_id = ? ORDER BY started_at", session_id)
            if session_id
            else self._query(sql + " ORDER BY started_at")
        )
        return [_info(row) for row in rows]

    def _refresh(self) -> None:
        """Before a read: what this process wrote, then what others did."""
        self._index()
        self._catch_up()

    def _load_run(self, run_id: str) -> RunInfo | None:
        row = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else _info(row)

    def _query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise LogCorrupted(f"{self.path} cannot be read: {exc}") from None

    async def close(self) -> None:
        await self.commit()
        self._index()
        self.journals.close()
        self._db.close()


def _info(row: tuple[Any, ...]) -> RunInfo:
    run_id, session_id, goal, model, started_at, stop_reason = row
    return RunInfo(
        run_id=str(run_id),
        session_id=str(session_id),
        goal=str(goal),
        model=str(model),
        started_at=datetime.fromisoformat(str(started_at)),
        stop_reason=None if stop_reason is None else StopReason(str(stop_reason)),
    )
