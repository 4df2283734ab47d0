"""The default event log: a JSONL journal per session, indexed in one SQLite database (WAL).

The journal is the durable record: a commit is one write of whole lines, made before the run acts
on them. Each event is stored once, there. The database indexes it for queries (`reins
sessions`, `show`, the server): the runs, and the spans of journal bytes that hold each run's
events. It is filled from what this process wrote at most `INDEX_EVERY` seconds later, and from
the journals themselves when it lags (after a crash, or for another process's runs). Delete it
and it is rebuilt.

A journal that fails its checks (a line that is not an event, a file cut shorter than the index
says) takes down its own session only: what precedes the damage is indexed, the session is set
aside (reading it says where the damage is and to run `reins doctor`), and every other session
goes on. The checks run when journals are caught up, never on the append path.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from .._errors import LogCorrupted, RunNotFound, SessionBusy, StoreError
from .._events import EVENT, Event, RunFinished, RunResumed, RunStarted
from .._stop import StopReason
from .._unicode import NOTE, escape_model
from ._journal import Journals
from ._log import RunInfo, index_update

log = logging.getLogger("reins.store")

SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    goal TEXT NOT NULL,
    model TEXT NOT NULL,
    started_at TEXT NOT NULL,
    stop_reason TEXT
);
CREATE INDEX runs_by_session ON runs (session_id, started_at);
CREATE TABLE spans (
    run_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL,
    PRIMARY KEY (run_id, first_seq)
) WITHOUT ROWID;
CREATE TABLE journals (
    session_id TEXT PRIMARY KEY,
    indexed_bytes INTEGER NOT NULL
);
"""
"""`spans`: the bytes [start_byte, end_byte) of the session's journal are the run's events
first_seq..last_seq, one per line. Spans written by two processes may overlap; readers skip
the events they already have."""
SCHEMA_VERSION = 3
RUN_INDEX_TYPES = frozenset({RunStarted, RunResumed, RunFinished})
"""The events that change a run's line in the index (told apart by their exact type)."""
INDEX_EVERY = 0.05
"""Seconds a busy loop may run ahead of the index; a real model call takes longer than this,
so in practice the index follows each commit."""

SAVE_SPAN = (
    "INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, first_seq) DO UPDATE "
    "SET last_seq = max(last_seq, excluded.last_seq), end_byte = max(end_byte, excluded.end_byte)"
)
SAVE_RUN = "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)"
SAVE_JOURNAL = (
    "INSERT INTO journals VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE "
    "SET indexed_bytes = max(indexed_bytes, excluded.indexed_bytes)"
)


@dataclass(frozen=True)
class Damage:
    """Why a session's journal cannot be read past `offset` (the bytes before it are fine)."""

    session_id: str
    path: Path
    offset: int
    line: int | None
    """The first bad line (1-based), if a line is to blame."""
    problem: str

    def describe(self) -> str:
        where = f"{self.path}, line {self.line}," if self.line is not None else f"{self.path}"
        return f"{where} {self.problem}"

    def error(self) -> LogCorrupted:
        return LogCorrupted(
            f"{self.describe()}; session {self.session_id} is set aside (the other sessions are "
            "not affected): run `reins doctor` to move the damage aside and keep the rest"
        )


@dataclass(slots=True)
class Span:
    """Consecutive events of one run, written one after the other in its session's journal."""

    run_id: str
    first_seq: int
    last_seq: int
    session_id: str
    start: int
    end: int

    def row(self) -> tuple[str, int, int, str, int, int]:
        return (self.run_id, self.first_seq, self.last_seq, self.session_id, self.start, self.end)


class SQLiteLog:
    """Event log under `directory`: `sessions/<id>.jsonl` journals and `reins.db`, their index."""

    def __init__(self, directory: str | Path, *, durable: bool = False) -> None:
        """`durable=True` fsyncs every commit (survives power loss, not only a crash).

        On a read-only folder the log can be read, not written: the index is built in memory
        from the journals, and an append says the store is read-only."""
        self.directory = Path(directory)
        self.path = self.directory / "reins.db"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise StoreError(
                f"the event log {self.directory} is a file; the log is a folder (one that does "
                "not exist yet is made)"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot open the event log at {self.directory}: {exc}") from None
        self.read_only = not _writable(self.directory, self.path)
        try:
            self._db = sqlite3.connect(
                ":memory:" if self.read_only else self.path,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the event log at {self.path}: {exc}") from None
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            if not _disk_full(self.directory):
                raise LogCorrupted(
                    f"{self.path} is not a readable reins database ({exc}); run `reins doctor` "
                    "(it moves the file aside: it is an index, rebuilt from the session journals)"
                ) from None
            # No room for the database's own files: read the journals into memory instead,
            # and let a write say that the disk is full.
            log.warning("the disk holding %s is full: its index is read into memory", self.path)
            self.read_only = True
            self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._setup()
        self.journals = Journals(
            self.directory / "sessions", durable=durable, read_only=self.read_only
        )
        self._damaged: dict[str, tuple[int, Damage]] = {}
        """Sessions set aside, with their journal's size when the damage was found."""
        self._batch: dict[str, _Batch] = {}
        """What each session appended since its last commit."""
        self._next_seq: dict[str, int] = {}
        self._tails: dict[str, Span] = {}
        """The last span of each run going on here, extended while its events follow on."""
        self._unindexed: dict[tuple[str, int], Span] = {}
        self._run_events: list[Event] = []
        self._journal_sizes: dict[str, int] = {}
        self._live: dict[str, set[str]] = {}
        """Runs going on in this process, by session: a journal is kept open while it has one."""
        self._claimed: set[str] = set()
        """Sessions reserved for a turn about to start here (see `claim`)."""
        self._runs: dict[str, RunInfo] = {}
        self._indexed_at = time.monotonic()
        self._index_failed = False
        self._catch_up()

    def _setup(self) -> None:
        db = self._db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this reins")
        if self.read_only:
            db.executescript(SCHEMA)
            return
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        if version < SCHEMA_VERSION:  # an index: dropped, and rebuilt from the journals
            tables = [
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not name.startswith("sqlite_")
            ]
            db.executescript(
                "BEGIN;"
                + "".join(f'DROP TABLE "{name}";' for name in tables)
                + SCHEMA
                + f"PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
            )

    async def append(self, event: Event, *, commit: bool = True) -> None:
        run_id, seq = event.run_id, event.seq
        expected = self._next_seq.get(run_id) or (
            1 if type(event) is RunStarted else self._first_seq(run_id)
        )
        if seq != expected:
            raise StoreError(
                f"run {run_id}: event {seq} arrived where {expected} was due; "
                "is another process driving this run?"
            )
        self._next_seq[run_id] = seq + 1
        session_id = event.session_id
        batch = self._batch.get(session_id)
        if batch is None:
            batch = self._batch[session_id] = _Batch(run_id, seq, [event])
        else:
            batch.events.append(event)
            batch.one_run = batch.one_run and batch.run_id == run_id
        if type(event) in RUN_INDEX_TYPES:
            batch.run_changes = True
        if commit:
            self._commit()

    def _first_seq(self, run_id: str) -> int:
        self._refresh()
        row = self._query("SELECT max(last_seq) FROM spans WHERE run_id = ?", run_id)
        return (row[0][0] or 0) + 1

    async def commit(self) -> None:
        """Journal the batch: one write per session, handed to the OS before returning."""
        self._commit()

    def _commit(self) -> None:
        if not self._batch:
            return
        batches, self._batch = self._batch, {}
        for session_id, batch in batches.items():
            events = batch.events
            try:
                try:
                    lines = [e.__pydantic_serializer__.to_json(e) for e in events]
                except PydanticSerializationError:  # text JSON cannot hold: the rare path
                    events = batch.events = [_escaped(e) for e in events]
                    lines = [e.__pydantic_serializer__.to_json(e) for e in events]
                data = b"\n".join(lines) + b"\n"
                end = self.journals.append(session_id, data)
            except (OSError, ValueError, RecursionError) as exc:  # none of it is in the journal
                for event in reversed(events):
                    self._next_seq[event.run_id] = event.seq
                raise self._write_error(exc, _culprit(events, exc)) from None
            self._journal_sizes[session_id] = end
            self._locate(session_id, batch, lines, end - len(data), end)
        if time.monotonic() - self._indexed_at >= INDEX_EVERY:
            try:
                self._index()
            except StoreError as exc:  # the journal is whole: the index catches up later
                self._indexed_at = time.monotonic()
                if not self._index_failed:
                    log.warning("%s; the run goes on, recorded in its journal", exc)
                self._index_failed = True
            else:
                self._index_failed = False

    def _write_error(self, exc: Exception, event: Event) -> StoreError:
        where = self.journals.directory
        if not isinstance(exc, OSError):  # PydanticSerializationError is a ValueError
            return StoreError(
                f"run {event.run_id}: event {event.seq} ({event.kind}) cannot be recorded "
                f"({str(exc).removeprefix('Error serializing to JSON: ')}); nothing of it was "
                "written"
            )
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            then = (
                "run the command again"
                if event.kind == "run_started"
                else f"`reins resume {event.run_id}`"
            )
            return StoreError(
                f"the disk holding {where} is full ({exc.strerror}); the log ends at the last "
                f"whole event: free space and {then}"
            )
        return self._unwritable(exc)

    def _unwritable(self, exc: OSError) -> StoreError:
        if exc.errno == errno.EROFS or self.read_only:
            return StoreError(
                f"the event log at {self.directory} is read-only ({exc.strerror}): it can be "
                "read (sessions, show, replay) but not written; pass --store for a writable one"
            )
        return StoreError(f"cannot write the journal under {self.journals.directory}: {exc}")

    def _locate(
        self, session_id: str, batch: _Batch, lines: list[bytes], start: int, end: int
    ) -> None:
        """Note where the events just written lie, to index them."""
        events = batch.events
        if batch.one_run:  # the usual: consecutive events of one run (`append` checks seqs)
            last_seq = batch.first_seq + len(events) - 1
            span = (batch.run_id, batch.first_seq, last_seq, session_id, start, end)
            _extend(self._tails, self._unindexed, *span)
        else:
            for event, line in zip(events, lines, strict=True):
                stop = start + len(line) + 1
                span = (event.run_id, event.seq, event.seq, session_id, start, stop)
                _extend(self._tails, self._unindexed, *span)
                start = stop
        if batch.run_changes:
            for event in events:
                if type(event) in RUN_INDEX_TYPES:
                    self._run_events.append(event)
                    self._track_live(event)

    def _track_live(self, event: Event) -> None:
        live = self._live.setdefault(event.session_id, set())
        if event.kind != "run_finished":
            live.add(event.run_id)
            self._claimed.discard(event.session_id)
            return
        live.discard(event.run_id)
        # A finished run leaves nothing behind here (a long-lived server runs many); resuming
        # it asks the index where it ended.
        del self._tails[event.run_id]
        del self._next_seq[event.run_id]
        if not live:  # no run of the session goes on here: let others write it
            del self._live[event.session_id]
            self.journals.release(event.session_id)

    def claim(self, session_id: str, run_id: str | None = None) -> None:
        """Reserve the session for a new turn (or for resuming its run `run_id`) before its
        history is read, so that two turns never fork it: another run of the session going on,
        in this process or another, raises SessionBusy. The reservation passes to the run
        its first event starts, and ends with that run or with `release`."""
        others = self._live.get(session_id, set()) - {run_id}
        if session_id in self._claimed or others:
            raise SessionBusy(
                f"session {session_id} has a run going on in this process"
                + (f" ({min(others)})" if others else "")
                + "; a session takes one turn at a time: wait for it, or start a new session"
            )
        try:
            self.journals.claim(session_id)
        except OSError as exc:  # a read-only store: said as an append says it
            raise self._unwritable(exc) from None
        self._claimed.add(session_id)

    def release(self, session_id: str, run_id: str | None = None) -> None:
        """Give up a reservation whose run did not start; with `run_id`, the run stopped here
        without finishing (its loop raised or was closed): what it wrote is committed and the
        session is free again, here and for other processes."""
        self._claimed.discard(session_id)
        live = self._live.get(session_id, set())
        if run_id is not None and run_id in live:
            with contextlib.suppress(StoreError):  # a failed commit has said why already
                self._commit()
            live.discard(run_id)
            self._tails.pop(run_id, None)
            self._next_seq.pop(run_id, None)  # a resume asks the index where the run ended
        if not live:
            self._live.pop(session_id, None)
            self.journals.release(session_id)

    def _index(self) -> None:
        """Put what this process journaled into the database, in one transaction."""
        if self._unindexed or self._run_events:
            spans, self._unindexed = self._unindexed, {}
            run_events, self._run_events = self._run_events, []
            sizes, self._journal_sizes = self._journal_sizes, {}
            try:
                self._write_index([s.row() for s in spans.values()], run_events, sizes)
            except StoreError:  # kept for the next try (nothing came in meanwhile)
                self._unindexed, self._run_events, self._journal_sizes = spans, run_events, sizes
                raise
        self._indexed_at = time.monotonic()

    def _write_index(
        self, spans: list[tuple[Any, ...]], run_events: list[Event], sizes: dict[str, int]
    ) -> None:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(SAVE_SPAN, spans)
                db.executemany(SAVE_RUN, self._run_rows(run_events))
                db.executemany(SAVE_JOURNAL, list(sizes.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self._runs.clear()
                raise
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise StoreError(
                    f"the disk holding {self.path} is full; free space and run the command "
                    "again (the journals are whole: the index catches up from them)"
                ) from None
            raise StoreError(f"cannot write the index {self.path}: {exc}") from None

    def _run_rows(self, run_events: list[Event]) -> list[tuple[Any, ...]]:
        """One row for each run these events change: how it stands after the last of them."""
        changed: dict[str, RunInfo] = {}
        for event in run_events:
            run_id = event.run_id
            before = changed.get(run_id)
            if before is None and event.kind != "run_started":
                before = self._runs.get(run_id) or self._load_run(run_id)
            if (info := index_update(before, event)) is not None:
                changed[run_id] = info
        for info in changed.values():  # kept while unfinished: its finish comes in a later flush
            if info.stop_reason is None:
                self._runs[info.run_id] = info
            else:
                self._runs.pop(info.run_id, None)
        return [
            (i.run_id, i.session_id, i.goal, i.model, i.started_at.isoformat(), i.stop_reason)
            for i in changed.values()
        ]

    def _catch_up(self) -> None:
        """Index journal lines the database lacks: left by a crash, or by another process.
        A damaged journal sets its session aside (once per damage, with a warning); it never
        stops the others."""
        known = dict(self._query("SELECT session_id, indexed_bytes FROM journals"))
        directory = self.journals.directory
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            session_id = path.stem
            try:
                size = path.stat().st_size
            except OSError:
                continue  # gone since the listing
            noted = self._damaged.get(session_id)
            if noted is not None and noted[0] == size:
                continue  # unchanged since the damage was found: nothing new to read
            indexed = int(known.get(session_id, 0))
            damage: Damage | None = None
            if size < indexed:
                damage = Damage(
                    session_id,
                    path,
                    size,
                    None,
                    f"is shorter ({size} bytes) than the index says it was ({indexed}); it was "
                    "truncated or replaced after it was written",
                )
            elif size > indexed:
                try:
                    damage = self._ingest(path, session_id, indexed)
                except OSError as exc:
                    damage = Damage(session_id, path, indexed, None, f"cannot be read: {exc}")
            if damage is not None:
                if noted is None or noted[1] != damage:
                    log.warning("%s", damage.error())
                self._damaged[session_id] = (size, damage)
            elif noted is not None:
                del self._damaged[session_id]

    def _ingest(self, path: Path, session_id: str, offset: int) -> Damage | None:
        """Index the whole lines after `offset`, up to the first that is not an event."""
        tail = self.journals.read_from(session_id, offset)
        spans: dict[tuple[str, int], Span] = {}
        tails: dict[str, Span] = {}
        run_events: list[Event] = []
        start = offset
        damage: Damage | None = None
        for number, line in enumerate(tail.lines):
            try:
                event = _parse_line(path, line, offset, number)
            except BadLine as exc:
                damage = Damage(session_id, path, start, exc.line, exc.problem)
                break
            end = start + len(line) + 1
            _extend(tails, spans, event.run_id, event.seq, event.seq, session_id, start, end)
            if type(event) in RUN_INDEX_TYPES:
                run_events.append(event)
            start = end
        done = start if damage is not None else tail.end
        self._write_index([s.row() for s in spans.values()], run_events, {session_id: done})
        return damage

    def damage(self) -> list[Damage]:
        """The sessions set aside, as of the last catch-up."""
        self._refresh()
        return [damage for _, damage in self._damaged.values()]

    def indexed_sessions(self) -> set[str]:
        """The sessions the index holds runs of."""
        return {str(s) for (s,) in self._query("SELECT DISTINCT session_id FROM runs")}

    def reindex(self, session_id: str) -> Damage | None:
        """Forget what the index holds of a session and index its journal again from the
        start (after `reins doctor` has cut it); the damage left, if any."""
        self._index()
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            for table in ("spans", "runs", "journals"):
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            db.execute("ROLLBACK")
            raise StoreError(f"cannot write the index {self.path}: {exc}") from None
        self._runs.clear()
        self._damaged.pop(session_id, None)
        path = self.journals.path(session_id)
        damage = self._ingest(path, session_id, 0) if path.exists() else None
        if damage is not None:
            self._damaged[session_id] = (path.stat().st_size, damage)
        return damage

    async def events(self, run_id: str) -> list[Event]:
        self._refresh()
        spans = self._query(
            "SELECT first_seq, last_seq, session_id, start_byte, end_byte FROM spans "
            "WHERE run_id = ? ORDER BY first_seq",
            run_id,
        )
        if not spans:
            raise RunNotFound(f"no run {run_id!r} in {self.directory}")
        if (noted := self._damaged.get(spans[0][2])) is not None:
            raise noted[1].error()
        events: list[Event] = []
        for first, last, session_id, start, end in spans:
            if events and last <= events[-1].seq:
                continue  # indexed twice (two processes caught up on one journal)
            events.extend(self._read_span(run_id, first, last, session_id, start, end, events))
        return events

    def _read_span(
        self,
        run_id: str,
        first: int,
        last: int,
        session_id: str,
        start: int,
        end: int,
        before: list[Event],
    ) -> list[Event]:
        path = self.journals.path(session_id)
        try:
            data = self.journals.read(session_id, start, end)
        except OSError as exc:
            raise LogCorrupted(
                f"run {run_id}: its journal cannot be read ({exc}); `reins doctor` checks the log"
            ) from None
        lines = data.split(b"\n")
        if len(data) != end - start or lines.pop() != b"" or len(lines) != last - first + 1:
            raise _moved(path, run_id, first, last)
        seen = before[-1].seq if before else 0
        events: list[Event] = []
        for number, line in enumerate(lines):
            event = _parse_line(path, line, start, number)
            if event.run_id != run_id or event.seq != first + number:
                raise _moved(path, run_id, first, last)
            if event.seq > seen:
                events.append(event)
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

    async def remove(self, session_id: str) -> list[str]:
        """Delete a session for good: its journal, its runs in the index, their saved long
        outputs. `SessionBusy` if it is being written (here or by another process); returns
        the ids of its runs."""
        if self.read_only:
            raise StoreError(f"the event log at {self.directory} is read-only")
        await self.commit()
        self._refresh()
        if session_id in self._live or session_id in self._claimed:
            raise SessionBusy(f"session {session_id} has a run going on in this process")
        runs = [
            r for (r,) in self._query("SELECT run_id FROM runs WHERE session_id = ?", session_id)
        ]
        path = self.journals.path(session_id)
        if path.exists():
            self.journals.claim(session_id)  # its writer lock: no turn starts meanwhile
            try:
                # Out of the journals' sight first: a process catching up must not index it
                # again from the start while its rows go.
                leaving = path.with_name(f"{path.name}.removing")
                path.rename(leaving)
                self._forget(session_id, runs)
                leaving.unlink()
            finally:
                self.journals.release(session_id)
        else:
            self._forget(session_id, runs)
        for run_id in runs:
            shutil.rmtree(self.directory / "spill" / run_id, ignore_errors=True)
        return runs

    def _forget(self, session_id: str, runs: list[str]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM runs WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM spans WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM journals WHERE session_id = ?", (session_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        for run_id in runs:
            self._runs.pop(run_id, None)
            self._next_seq.pop(run_id, None)
            self._tails.pop(run_id, None)
        self._damaged.pop(session_id, None)
        self._journal_sizes.pop(session_id, None)

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
        try:
            await self.commit()
            try:
                self._index()
            except StoreError as exc:  # the journals are whole: the next open catches up
                log.warning("%s", exc)
        finally:
            self.journals.close()
            self._db.close()


@dataclass(slots=True)
class _Batch:
    """A session's events appended since its last commit."""

    run_id: str
    first_seq: int
    events: list[Event]
    one_run: bool = True
    """All of `run_id` (then their seqs follow on from `first_seq`)."""
    run_changes: bool = False
    """One of them changes its run's line in the index (`RUN_INDEX_TYPES`)."""


def _extend(
    tails: dict[str, Span],
    spans: dict[tuple[str, int], Span],
    run_id: str,
    first_seq: int,
    last_seq: int,
    session_id: str,
    start: int,
    end: int,
) -> None:
    """Events first_seq..last_seq of a run lie in [start, end) of its journal: they extend the
    run's last span (`tails`) if they follow on from it, else start a new one; either goes in
    `spans`, keyed as in the table."""
    span = tails.get(run_id)
    if span is not None and span.end == start and span.last_seq + 1 == first_seq:
        span.last_seq, span.end = last_seq, end
    else:
        span = tails[run_id] = Span(run_id, first_seq, last_seq, session_id, start, end)
    spans[run_id, span.first_seq] = span


class BadLine(LogCorrupted):
    """A journal line that is not an event: where, and what is wrong with it."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(
            f"{path}, line {line}, {problem}; run `reins doctor` to move the damage aside"
        )
        self.line = line
        self.problem = problem


def _parse_line(path: Path, line: bytes, offset: int, index: int) -> Event:
    """The event on a journal line: the `index`-th line after byte `offset`."""
    try:
        return EVENT.validate_json(line)
    except ValidationError as exc:
        with path.open("rb") as f:
            number = f.read(offset).count(b"\n") + index + 1
        raise BadLine(path, number, f"is not a reins event: {exc.errors()[0]['msg']}") from None


def _escaped(event: Event) -> Event:
    """The event with the text that JSON cannot carry (a lone surrogate) escaped, said so."""
    escaped = escape_model(event)
    if escaped is not event:
        log.warning("run %s, event %d: %s", event.run_id, event.seq, NOTE)
    return escaped


def _culprit(events: list[Event], exc: Exception) -> Event:
    """The event that could not be serialized (for a failed write: the first)."""
    if isinstance(exc, OSError):
        return events[0]
    for event in events:
        try:
            escaped = _escaped(event)
            escaped.__pydantic_serializer__.to_json(escaped)
        except (ValueError, RecursionError):
            return event
    return events[0]


def _disk_full(directory: Path) -> bool:
    """Less room left than SQLite needs to open its files (a few pages)."""
    try:
        found = os.statvfs(directory)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 64 * 1024


def _writable(directory: Path, database: Path) -> bool:
    """False on a read-only filesystem (or folder), for root too: `access` reports EROFS."""
    if not os.access(directory, os.W_OK):
        return False
    return not database.exists() or os.access(database, os.W_OK)


def _moved(path: Path, run_id: str, first: int, last: int) -> LogCorrupted:
    return LogCorrupted(
        f"{path} no longer holds run {run_id}'s events {first}-{last} where the index says; "
        "the journal was changed after it was written: run `reins doctor` to check it and "
        "rebuild the index"
    )


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
