"""The default event log: a JSONL journal per session, indexed in one SQLite database (WAL).

The journal is the durable record: a commit is one write of whole lines, made before the run acts
on them. Each event is stored once, there. The database indexes it for queries (`reins
sessions`, `show`, the server): the runs, and the spans of journal bytes that hold each run's
events. It is filled from what this process wrote at most `INDEX_EVERY` seconds later, and from
the journals themselves when it lags (after a crash, or for another process's runs). Delete it
and it is rebuilt.

Each journal line carries a MAC chained on from the line before, under the user's key (`_chain`):
a line changed, added, removed or moved by anyone without the key breaks the chain there. The
index keeps each session's head (its size and last MAC). Reading a run checks the MACs of its
lines; `claim` (a new turn, a resume) checks the whole session, and refuses one not signed with
the user's key (`LogUnverified`): what it allowed "always" would not be the user's.

A journal that fails its checks (a line that is not an event or whose MAC does not match, a
file cut shorter than the index says) takes down its own session only: what precedes the damage
is indexed, the session is set aside (reading it says where the damage is and to run `reins
doctor`), and every other session goes on. The checks run when journals are caught up and
read, never on the append path.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
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

from ..core._errors import (
    LogCorrupted,
    LogUnverified,
    RunNotFound,
    SessionBusy,
    StoreError,
    UsageError,
)
from ..core._events import EVENT, Event, RunFinished, RunResumed, RunStarted
from ..core._log import RunInfo
from ..core._paths import log_key_path
from ..core._stop import StopReason
from ._blobs import CARRIERS, FolderBlobs, media_in, referred
from ._chain import (
    SIGNED,
    TAIL,
    UNSIGNED,
    Chain,
    create_key,
    load_key,
    mac_before,
    mismatch,
    opened,
    trust_of,
)
from ._journal import Journals
from ._log import busy_here, index_update
from ._serialize import serialized, unrecordable
from ._transactions import transaction

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
    indexed_bytes INTEGER NOT NULL,
    head BLOB,
    trust TEXT NOT NULL
);
CREATE TABLE meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
"""`spans`: the bytes [start_byte, end_byte) of the session's journal are the run's events
first_seq..last_seq, one per line. Spans written by two processes may overlap; readers skip
the events they already have. `journals`: how far each journal is indexed, the MAC of the line
ending there (`head`), and whether the journal is signed with the user's key (`trust`: signed,
unsigned or foreign). `meta`: the id of the key the index was built under (another key: the
index is built again, since what was signed changes)."""
SCHEMA_VERSION = 4
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
SAVE_JOURNAL = (  # the head and trust go with the furthest reach (SET reads the old row)
    "INSERT INTO journals VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
    "head = iif(excluded.indexed_bytes > indexed_bytes, excluded.head, head), "
    "trust = iif(excluded.indexed_bytes > indexed_bytes, excluded.trust, trust), "
    "indexed_bytes = max(indexed_bytes, excluded.indexed_bytes)"
)
Reach = tuple[int, bytes | None, str]
"""How far a journal is indexed: its bytes, the MAC of the line ending there, its trust."""


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

    def __init__(
        self, directory: str | Path, *, durable: bool = False, key: bytes | None = None
    ) -> None:
        """`durable=True` fsyncs every commit (survives power loss, not only a crash). `key`
        signs the journals (see `_chain`); by default the user's, at `reins.core._paths.
        log_key_path()`, made by the first write.

        On a read-only folder the log can be read, not written: the index is built in memory
        from the journals, and an append says the store is read-only."""
        if key is not None and (not isinstance(key, bytes) or len(key) < 16):
            raise UsageError("key: give at least 16 random bytes (the default: the user's key)")
        self._chain: Chain | None = Chain(key) if key is not None else load_key(log_key_path())
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
        self.blobs = FolderBlobs(self.directory / "blobs", durable=durable)
        """The images and documents the events refer to (by sha256)."""
        self._damaged: dict[str, tuple[int, Damage]] = {}
        """Sessions set aside, with their journal's size when the damage was found."""
        self._batch: dict[str, _Batch] = {}
        """What each session appended since its last commit."""
        self._next_seq: dict[str, int] = {}
        self._tails: dict[str, Span] = {}
        """The last span of each run going on here, extended while its events follow on."""
        self._unindexed: dict[tuple[str, int], Span] = {}
        self._run_events: list[Event] = []
        self._journal_sizes: dict[str, Reach] = {}
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
        if self.read_only:
            db.executescript(SCHEMA)
            return
        db.execute("PRAGMA busy_timeout=5000")  # first: the next ones wait for other openers
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this reins")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if version == SCHEMA_VERSION and self._key_noted() == self._key_id():
            return
        # Made or changed by one process at a time: many started at once on a new store
        # each find the schema missing, and all but the first find it made once they hold
        # the lock.
        with transaction(db):
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:  # an index: dropped, and rebuilt from the journals
                for (name,) in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                ).fetchall():
                    if not name.startswith("sqlite_"):
                        db.execute(f'DROP TABLE "{name}"')
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            if self._key_noted() != self._key_id():  # what verifies changed: index again
                for table in ("runs", "spans", "journals"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('key', ?)", (self._key_id(),))

    def _key_noted(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()
        return None if row is None else str(row[0])

    def _key_id(self) -> str:
        return self._chain.key_id if self._chain is not None else ""

    def _verifier(self) -> Chain | None:
        """The key that checks the journals: the user's, once there is one (another process
        may make it while this one reads)."""
        if self._chain is None:
            self._adopt(load_key(log_key_path()))
        return self._chain

    def _signer(self) -> Chain:
        """The key that signs what is written: the user's, made by the first write."""
        chain = self._verifier()
        if chain is None:
            chain = create_key(log_key_path())
            self._adopt(chain)
        return chain

    def _adopt(self, chain: Chain | None) -> None:
        """Use the user's key, new since the log was opened (none was): nothing indexed was
        signed with it, so the index stands; it notes the key."""
        self._chain = chain
        if chain is not None and not self.read_only:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('key', ?)", (chain.key_id,))

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
        if type(event) in CARRIERS and not self.read_only:  # before the line naming it
            for media in media_in(event):
                self.blobs.put(media.sha256, media.data)
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
        self._refresh_run(run_id)
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
                chain = self._chain or self._signer()
                events, bodies = serialized(events)
                batch.events = events
                data, head = chain.seal(self.journals.head(session_id, chain), bodies)
                end = self.journals.append(session_id, data, head)
            except (OSError, ValueError, RecursionError, StoreError) as exc:
                for event in reversed(events):  # none of it is in the journal
                    self._next_seq[event.run_id] = event.seq
                if isinstance(exc, StoreError):
                    raise
                if not isinstance(exc, OSError):  # PydanticSerializationError is a ValueError
                    raise unrecordable(exc, events) from None
                raise self._write_error(exc, events[0]) from None
            self._journal_sizes[session_id] = (end, head, SIGNED)
            self._locate(session_id, batch, bodies, end - len(data), end)
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

    def _write_error(self, exc: OSError, event: Event) -> StoreError:
        where = self.journals.directory
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
        self, session_id: str, batch: _Batch, bodies: list[bytes], start: int, end: int
    ) -> None:
        """Note where the events just written (`bodies`, each on a line with its MAC) lie,
        to index them."""
        events = batch.events
        if batch.one_run:  # the usual: consecutive events of one run (`append` checks seqs)
            last_seq = batch.first_seq + len(events) - 1
            span = (batch.run_id, batch.first_seq, last_seq, session_id, start, end)
            _extend(self._tails, self._unindexed, *span)
        else:
            for event, body in zip(events, bodies, strict=True):
                stop = start + len(body) + TAIL  # the body, its MAC field, the newline
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
        its first event starts, and ends with that run or with `release`.

        The session goes on only if its whole journal verifies under the user's key (and ends
        where the index says): else `LogCorrupted` names the first event that does not match,
        or `LogUnverified` says it is not signed by the user (what it allowed "always" must
        never widen what a run of the user's may do)."""
        others = self._live.get(session_id, set()) - {run_id}
        if session_id in self._claimed or others:
            raise busy_here(session_id, others)
        if session_id not in self._live:  # else this process wrote it all: it is checked
            self._refresh(session_id)  # a torn last line set aside, before the lock keeps it
            if (noted := self._damaged.get(session_id)) is not None:
                raise noted[1].error()
        try:
            self.journals.claim(session_id)
        except OSError as exc:  # a read-only store: said as an append says it
            raise self._unwritable(exc) from None
        if session_id not in self._live:
            try:
                self._verify(session_id)
            except StoreError:
                self.journals.release(session_id)
                raise
        self._claimed.add(session_id)

    def _verify(self, session_id: str) -> None:
        """Check the session's whole journal against the chain and the index's head (the
        journal is locked: nobody of ours writes it meanwhile)."""
        path = self.journals.path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return  # a new session: nothing to check
        except OSError as exc:
            raise LogCorrupted(f"{path} cannot be read: {exc}") from None
        lines = data.split(b"\n")[:-1]  # whole lines (a torn one was set aside)
        trust, damage = self._walk(session_id, lines)
        if trust != SIGNED:
            raise LogUnverified(_not_ours(session_id, trust, lines))
        if damage is not None:
            self._damaged[session_id] = (len(data), damage)
            raise damage.error()

    def _name_damage(self, session_id: str) -> None:
        """Raise the first place a signed journal departs from its chain or its index, if one
        is found (the session is set aside)."""
        try:
            data = self.journals.path(session_id).read_bytes()
        except OSError:
            return
        damage = self._walk(session_id, data.split(b"\n")[:-1])[1]
        if damage is not None:
            self._damaged[session_id] = (len(data), damage)
            raise damage.error()

    def _walk(self, session_id: str, lines: list[bytes]) -> tuple[str, Damage | None]:
        """What a session's journal (its whole `lines`) is, and in a signed one the first line
        whose MAC does not match, or where it departs from the index (cut short, replaced)."""
        chain = self._verifier()
        trust = trust_of(chain, session_id, lines)
        if trust != SIGNED or chain is None:
            return trust, None
        path = self.journals.path(session_id)
        indexed, noted = self.head(session_id)
        head = chain.genesis(session_id)
        at, at_indexed = 0, head if indexed == 0 else None
        for number, line in enumerate(lines):
            body, mac = opened(line)
            if mac is None or not chain.check(head, body, mac):
                return trust, _broken(session_id, path, at, number + 1, body)
            head, at = mac, at + len(line) + 1
            if at == indexed:
                at_indexed = head
        if at < indexed:
            return trust, _shorter(session_id, path, at, indexed)
        if noted is not None and (at_indexed is None or not hmac.compare_digest(at_indexed, noted)):
            return trust, Damage(
                session_id,
                path,
                indexed,
                None,
                f"is not the journal the index holds (no line of it ends at byte {indexed} "
                "with the MAC the index holds): it was replaced after it was written",
            )
        return trust, None

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
        self, spans: list[tuple[Any, ...]], run_events: list[Event], reach: dict[str, Reach]
    ) -> None:
        db = self._db
        try:
            with transaction(db):
                try:
                    db.executemany(SAVE_SPAN, spans)
                    db.executemany(SAVE_RUN, self._run_rows(run_events))
                    db.executemany(SAVE_JOURNAL, [(s, *r) for s, r in reach.items()])
                except BaseException:
                    self._runs.clear()
                    raise
        except sqlite3.Error as exc:
            raise self._index_error(exc) from None

    def _index_error(self, exc: sqlite3.Error) -> StoreError:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return StoreError(
                f"the disk holding {self.path} is full; free space and run the command "
                "again (the journals are whole: the index catches up from them)"
            )
        return StoreError(f"cannot write the index {self.path}: {exc}")

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

    def _catch_up(self, session_id: str | None = None) -> None:
        """Index journal lines the database lacks: left by a crash, or by another process;
        of every journal, or of one session's (a read of one run or session need not look
        at the store's every file). A damaged journal sets its session aside (once per damage,
        with a warning); it never stops the others."""
        sql = "SELECT session_id, indexed_bytes, head, trust FROM journals"
        directory = self.journals.directory
        if session_id is not None:
            rows = self._query(sql + " WHERE session_id = ?", session_id)
            path = self.journals.path(session_id)
            paths = [path] if path.parent == directory else []  # an id is a name, not a path
        else:
            rows = self._query(sql)
            paths = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
        known: dict[str, Reach] = {row[0]: (int(row[1]), row[2], str(row[3])) for row in rows}
        for path in paths:
            session_id = path.stem
            try:
                size = path.stat().st_size
            except OSError:
                continue  # gone since the listing
            noted = self._damaged.get(session_id)
            if noted is not None and noted[0] == size:
                continue  # unchanged since the damage was found: nothing new to read
            reach = known.get(session_id, (0, None, SIGNED))
            indexed = reach[0]
            damage: Damage | None = None
            if size < indexed:
                damage = _shorter(session_id, path, size, indexed)
            elif size > indexed:
                try:
                    damage = self._ingest(path, session_id, reach)
                except OSError as exc:
                    damage = Damage(session_id, path, indexed, None, f"cannot be read: {exc}")
            if damage is not None and indexed > 0:
                # A line changed or taken out before the end of the index: the chain from the
                # journal's start says where (the error path only: it reads the whole file).
                with contextlib.suppress(OSError):
                    lines = path.read_bytes().split(b"\n")[:-1]
                    walked = self._walk(session_id, lines)[1]
                    if walked is not None and walked.offset < damage.offset:
                        damage = walked
            if damage is not None:
                if noted is None or noted[1] != damage:
                    log.warning("%s", damage.error())
                self._damaged[session_id] = (size, damage)
            elif noted is not None:
                del self._damaged[session_id]

    def _ingest(self, path: Path, session_id: str, reach: Reach) -> Damage | None:
        """Index the whole lines after `reach` (where the index ends), up to the first that is
        not an event or, in a journal signed with the user's key, whose MAC does not match."""
        offset, head, trust = reach
        tail = self.journals.read_from(session_id, offset)
        chain = self._verifier()
        if offset == 0:  # what the journal is, its first line says
            trust = trust_of(chain, session_id, tail.lines)
            head = chain.genesis(session_id) if chain is not None else None
        elif trust == SIGNED and head is None:
            head = mac_before(self.journals.read(session_id, max(0, offset - TAIL - 1), offset))
        check = chain if trust == SIGNED else None
        spans: dict[tuple[str, int], Span] = {}
        tails: dict[str, Span] = {}
        run_events: list[Event] = []
        start = offset
        damage: Damage | None = None
        for number, line in enumerate(tail.lines):
            body, mac = opened(line)
            if check is not None:
                if head is None or mac is None or not check.check(head, body, mac):
                    number = _line_number(path, offset, number)
                    damage = _broken(session_id, path, start, number, body)
                    break
                head = mac
            try:
                event = _parse_line(path, body, offset, number)
            except BadLine as exc:
                damage = Damage(session_id, path, start, exc.line, exc.problem)
                break
            end = start + len(line) + 1
            _extend(tails, spans, event.run_id, event.seq, event.seq, session_id, start, end)
            if type(event) in RUN_INDEX_TYPES:
                run_events.append(event)
            start = end
        done = start if damage is not None else tail.end
        reached = {session_id: (done, head if check is not None else None, trust)}
        self._write_index([s.row() for s in spans.values()], run_events, reached)
        return damage

    def damage(self) -> list[Damage]:
        """The sessions set aside, as of the last catch-up."""
        self._refresh()
        return [damage for _, damage in self._damaged.values()]

    @property
    def where(self) -> str:
        """The log, named for a message."""
        return f"the event log at {self.directory}"

    def writing(self, session_id: str) -> bool:
        """True if some process (this one included) holds the session's journal lock."""
        return self.journals.writing(session_id)

    def unverified(self, session_id: str) -> str | None:
        """Why the session's journal is not known to be the user's, as of the index (None: it
        is signed with the user's key; reading it checks each MAC); such a session is read,
        never continued."""
        row = self._query("SELECT trust FROM journals WHERE session_id = ?", session_id)
        if not row or row[0][0] == SIGNED:
            return None
        if row[0][0] == UNSIGNED:
            return "its journal is not signed (from a reins before signed logs, or another program)"
        return "its journal is not signed with your key (from another store or another user)"

    def verifier(self) -> Chain | None:
        """The key that checks the journals (None: the user has none yet)."""
        return self._verifier()

    def head(self, session_id: str) -> tuple[int, bytes | None]:
        """How far the index holds the session's journal, and the MAC of the line ending
        there (None: not signed, or nothing indexed)."""
        row = self._query(
            "SELECT indexed_bytes, head FROM journals WHERE session_id = ?", session_id
        )
        return (int(row[0][0]), row[0][1]) if row else (0, None)

    def indexed_sessions(self) -> set[str]:
        """The sessions the index holds runs of."""
        return {str(s) for (s,) in self._query("SELECT DISTINCT session_id FROM runs")}

    def reindex(self, session_id: str) -> Damage | None:
        """Forget what the index holds of a session and index its journal again from the
        start (after `reins doctor` has cut it); the damage left, if any."""
        self._index()
        db = self._db
        try:
            with transaction(db):
                for table in ("spans", "runs", "journals"):
                    db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        except sqlite3.Error as exc:
            raise self._index_error(exc) from None
        self._runs.clear()
        self._damaged.pop(session_id, None)
        path = self.journals.path(session_id)
        damage = self._ingest(path, session_id, (0, None, SIGNED)) if path.exists() else None
        if damage is not None:
            self._damaged[session_id] = (path.stat().st_size, damage)
        return damage

    async def events(self, run_id: str) -> list[Event]:
        self._refresh_run(run_id)
        spans = self._query(
            "SELECT first_seq, last_seq, session_id, start_byte, end_byte FROM spans "
            "WHERE run_id = ? ORDER BY first_seq",
            run_id,
        )
        if not spans:
            raise RunNotFound(f"no run {run_id!r} in {self.directory}")
        session_id = spans[0][2]
        if (noted := self._damaged.get(session_id)) is not None:
            raise noted[1].error()
        chain = self._verifier()
        signed = self._query(
            "SELECT 1 FROM journals WHERE session_id = ? AND trust = ?", session_id, SIGNED
        )
        check = chain if signed else None
        events: list[Event] = []
        try:
            for first, last, _, start, end in spans:
                if events and last <= events[-1].seq:
                    continue  # indexed twice (two processes caught up on one journal)
                span = (run_id, first, last, session_id, start, end)
                events.extend(self._read_span(*span, events, check))
        except LogCorrupted:
            if check is not None:  # which line does not match, from the journal's start
                self._name_damage(session_id)
            raise
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
        check: Chain | None,
    ) -> list[Event]:
        """The run's events `first`..`last`, on the bytes [start, end) of the journal; with
        `check`, each line's MAC is checked (the first's against the line before it)."""
        path = self.journals.path(session_id)
        ahead = 0 if check is None else min(start, TAIL + 1)  # the MAC ending the line before
        try:
            data = self.journals.read(session_id, start - ahead, end)
        except OSError as exc:
            raise LogCorrupted(
                f"run {run_id}: its journal cannot be read ({exc}); `reins doctor` checks the log"
            ) from None
        head: bytes | None = None
        if check is not None:
            head = check.genesis(session_id) if start == 0 else mac_before(data[:ahead])
            data = data[ahead:]
        lines = data.split(b"\n")
        if len(data) != end - start or lines.pop() != b"" or len(lines) != last - first + 1:
            raise _moved(path, run_id, first, last)
        seen = before[-1].seq if before else 0
        events: list[Event] = []
        for number, line in enumerate(lines):
            body, mac = opened(line)
            if check is not None:
                if head is None or mac is None or not check.check(head, body, mac):
                    raise _moved(path, run_id, first, last)  # `events` says which line
                head = mac
            event = _parse_line(path, body, start, number, self.blobs)
            if event.run_id != run_id or event.seq != first + number:
                raise _moved(path, run_id, first, last)
            if event.seq > seen:
                events.append(event)
        return events

    async def runs(self, session_id: str | None = None) -> list[RunInfo]:
        self._refresh(session_id)
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
        self._refresh(session_id)
        if session_id in self._live or session_id in self._claimed:
            raise SessionBusy(f"session {session_id} has a run going on in this process")
        runs = [
            r for (r,) in self._query("SELECT run_id FROM runs WHERE session_id = ?", session_id)
        ]
        path = self.journals.path(session_id)
        unused: set[str] = set()
        if path.exists():
            self.journals.claim(session_id)  # its writer lock: no turn starts meanwhile
            try:
                # Out of the journals' sight first: a process catching up must not index it
                # again from the start while its rows go.
                leaving = path.with_name(f"{path.name}.removing")
                path.rename(leaving)
                self._forget(session_id, runs)
                unused = referred(leaving.read_bytes())
                leaving.unlink()
            finally:
                self.journals.release(session_id)
        else:
            self._forget(session_id, runs)
        for run_id in runs:
            shutil.rmtree(self.directory / "spill" / run_id, ignore_errors=True)
        if unused:  # its images and documents, unless another session's lines name them
            others = self.journals.directory.iterdir()  # set-aside damage too: it may return
            self.blobs.drop(unused, in_use=(p for p in others if p.is_file()))
        return runs

    def _forget(self, session_id: str, runs: list[str]) -> None:
        db = self._db
        try:
            with transaction(db):
                for table in ("runs", "spans", "journals"):
                    db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        except sqlite3.Error as exc:
            raise self._index_error(exc) from None
        for run_id in runs:
            self._runs.pop(run_id, None)
            self._next_seq.pop(run_id, None)
            self._tails.pop(run_id, None)
        self._damaged.pop(session_id, None)
        self._journal_sizes.pop(session_id, None)

    def _refresh(self, session_id: str | None = None) -> None:
        """Before a read: what this process wrote, then what others did (to every session,
        or to one)."""
        self._index()
        self._catch_up(session_id)

    def _refresh_run(self, run_id: str) -> None:
        """Before a read of a run: its session's journal caught up, or, for a run the index
        does not know yet (another process's new one), every journal."""
        self._index()
        row = self._query("SELECT session_id FROM spans WHERE run_id = ? LIMIT 1", run_id)
        self._catch_up(str(row[0][0]) if row else None)

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


def _parse_line(
    path: Path, line: bytes, offset: int, index: int, blobs: FolderBlobs | None = None
) -> Event:
    """The event on a journal line (its MAC taken off): the `index`-th line after `offset`;
    with `blobs`, its images and documents hold their bytes."""
    try:
        return EVENT.validate_json(line, context=None if blobs is None else {"blobs": blobs})
    except ValidationError as exc:
        number = _line_number(path, offset, index)
        raise BadLine(path, number, f"is not a reins event: {exc.errors()[0]['msg']}") from None


def _line_number(path: Path, offset: int, index: int) -> int:
    """The number (1-based) of the `index`-th line after byte `offset` (on the error path)."""
    with path.open("rb") as f:
        return f.read(offset).count(b"\n") + index + 1


def _broken(session_id: str, path: Path, start: int, line: int, body: bytes) -> Damage:
    """A line (at byte `start`) whose MAC does not match: which event it holds, if any."""
    try:
        event = EVENT.validate_json(body)
    except ValidationError as exc:
        problem = f"is not a reins event: {exc.errors()[0]['msg']}"
        return Damage(session_id, path, start, line, problem)
    return Damage(session_id, path, start, line, mismatch(event.run_id, event.seq))


def _shorter(session_id: str, path: Path, size: int, indexed: int) -> Damage:
    return Damage(
        session_id,
        path,
        size,
        None,
        f"is shorter ({size} bytes) than the index says it was ({indexed}); it was "
        "truncated or replaced after it was written",
    )


def _not_ours(session_id: str, trust: str, lines: list[bytes]) -> str:
    """Why a session not signed with the user's key is not continued, and what to do."""
    try:
        first = EVENT.validate_json(opened(lines[0])[0]) if lines else None
    except ValidationError:
        first = None
    where = f" (line 1: run {first.run_id}, event seq {first.seq})" if first else ""
    why = (
        "its journal is not signed (written by a reins from before logs were signed, or by "
        "another program)"
        if trust == UNSIGNED
        else "its journal is not signed with your key (it came from another store or another "
        "user, or its start was changed)"
    )
    return (
        f"session {session_id} cannot go on: {why}{where}, so what it allowed cannot be "
        "shown to be yours; `reins show` still reads it: start a new session instead"
    )


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
