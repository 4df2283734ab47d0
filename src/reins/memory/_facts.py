"""Facts an agent keeps across sessions, in one SQLite file, recalled by BM25 (FTS5).

A fact is bi-temporal, as in Graphiti: `valid_at`..`invalid_at` is when it was true in the
world, `created_at`..`expired_at` when the system held it to be. Nothing is overwritten: an
update closes the old version (both of its end times set) and adds a new one that `supersedes`
it, in one transaction, so a recall `as_of` an earlier time finds what was true then, and the
chain of versions stays readable. Only `forget` removes a fact, and then for real: from the
table, from the full-text index (merged so no segment keeps its words), from freed pages
(`secure_delete`) and from the WAL (checkpointed).

The file and its folder are made by the first write, never by a read: recall in a project that
never kept a fact leaves nothing behind. Every SQLite failure becomes one `MemoryStoreError`
that names the file and what to do.

The methods are blocking (callers use `asyncio.to_thread`); one connection serves them all,
one call at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core._errors import UsageError
from ..store._transactions import transaction
from ._errors import FactError, MemoryStoreError
from ._fact import (
    Fact,
    Scope,
    check,
    check_scope,
    fact_text,
    one_line,
    stamp,
    utc,
)

SCHEMA_VERSION = 2
VECTORS = """
CREATE TABLE vectors (
    num INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TRIGGER facts_unembedded AFTER DELETE ON facts BEGIN
    DELETE FROM vectors WHERE num = old.num;
END;
"""
"""Version 2: a fact's embedding (`num` is its fact's; float32, unit length) under the name of
the model that made it; a fact's deletion takes its vector with it."""
MIGRATIONS = {1: VECTORS}
"""What brings a file of a version to the next."""
SCHEMA = (
    """
CREATE TABLE facts (
    num INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    session_id TEXT,
    run_id TEXT,
    seq INTEGER,
    created_at TEXT NOT NULL,
    valid_at TEXT NOT NULL,
    invalid_at TEXT,
    expired_at TEXT,
    supersedes TEXT,
    reason TEXT NOT NULL,
    closed_reason TEXT NOT NULL,
    key TEXT NOT NULL
);
CREATE INDEX facts_by_owner ON facts (scope, owner, invalid_at);
CREATE INDEX facts_by_supersedes ON facts (supersedes);
CREATE VIRTUAL TABLE facts_fts USING fts5 (
    text, key, content='facts', content_rowid='num',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER facts_added AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, text, key) VALUES (new.num, new.text, new.key);
END;
CREATE TRIGGER facts_deleted AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text, key)
    VALUES ('delete', old.num, old.text, old.key);
END;
CREATE TRIGGER facts_changed AFTER UPDATE OF text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text, key)
    VALUES ('delete', old.num, old.text, old.key);
    INSERT INTO facts_fts (rowid, text, key) VALUES (new.num, new.text, new.key);
END;
"""
    + VECTORS
)
"""`num` is the rowid the full-text index refers to (an INTEGER PRIMARY KEY, so VACUUM keeps
it); `id` the fact's public id. Times are ISO 8601 in UTC with microseconds, all one width, so
they compare as text. `key` names a fact's (scope, owner) as one token the full-text index
holds too, so a search matches only the facts it may read: ranking every match of a common
word across all owners cost tens of milliseconds at 10,000 facts."""

_COLUMNS = (
    "id, text, scope, owner, session_id, run_id, seq, created_at, valid_at, invalid_at, "
    "expired_at, supersedes, reason, closed_reason"
)
_VALID = "valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)"
_PREFIX = re.compile(r"[0-9a-f]{1,12}")
_WORD = re.compile(r"[^\W_]+")
_MAX_TERMS = 32
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me more
    most my near no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours""".split()  # noqa: SIM905 (words read as a paragraph)
)
"""Words too common to rank by (and FTS5's operators, lowercased: `and`, `or`, `not`, `near`)."""


class FactStore:
    """Facts in one SQLite file (WAL), made on the first write."""

    def __init__(self, path: str | Path, *, timeout: float = 5.0) -> None:
        """`timeout`: seconds a call waits for another process's write before it fails."""
        if timeout < 0:
            raise UsageError(f"memory timeout: give seconds >= 0, not {timeout}")
        self.path = Path(path)
        self.timeout = timeout
        self._db: sqlite3.Connection | None = None
        self._ready = False
        """The schema is there (else the file is new and empty: reads find nothing)."""
        self._lock = threading.Lock()

    # Writes

    def add(
        self,
        text: str,
        *,
        scope: Scope,
        owner: str,
        valid_at: datetime | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        seq: int | None = None,
        supersedes: str | None = None,
        reason: str = "",
        now: datetime | None = None,
    ) -> Fact:
        """Keep a new fact; `now` (default: the clock) is when it is stored, and when it
        became true unless `valid_at` says otherwise."""
        created = utc(now) if now is not None else datetime.now(UTC)
        fact = Fact(
            id=secrets.token_hex(6),
            text=fact_text(text),
            scope=scope,
            owner=owner,
            session_id=session_id,
            run_id=run_id,
            seq=seq,
            created_at=created,
            valid_at=utc(valid_at) if valid_at is not None else created,
            invalid_at=None,
            expired_at=None,
            supersedes=supersedes,
            reason=one_line(reason),
        )
        check(fact)
        with self._write("add a fact") as db:
            if _taken(db, fact.id):
                fact = replace(fact, id=_new_id(db))
            _insert(db, fact)
        return fact

    def close(
        self,
        fact_id: str,
        *,
        invalid_at: datetime,
        expired_at: datetime | None = None,
        reason: str = "",
    ) -> Fact:
        """Mark a fact no longer true from `invalid_at` on, learned at `expired_at` (default:
        now); returns it closed. A closed fact cannot be closed again; one closed before it
        became true was never true (it ends where it began)."""
        ended = utc(invalid_at)
        learned = utc(expired_at) if expired_at is not None else datetime.now(UTC)
        with self._write("close a fact") as db:
            fact = _open_fact(db, fact_id)
            fact = replace(
                fact,
                invalid_at=max(ended, fact.valid_at),
                expired_at=learned,
                closed_reason=one_line(reason),
            )
            _update_end(db, fact)
        return fact

    def replace(
        self,
        fact_id: str,
        text: str,
        *,
        valid_at: datetime | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        seq: int | None = None,
        reason: str = "",
        now: datetime | None = None,
    ) -> tuple[Fact, Fact]:
        """Update a fact: in one transaction the old version is closed (no longer true from the
        new one's `valid_at`, learned `now`) and the new one added, superseding it, with the
        same scope and owner. Returns (old, new).

        A new version true from before the old one began (a correction) leaves the old one
        never true: it ends where it began."""
        created = utc(now) if now is not None else datetime.now(UTC)
        began = utc(valid_at) if valid_at is not None else created
        new_text, why = fact_text(text), one_line(reason)
        with self._write("replace a fact") as db:
            old = _open_fact(db, fact_id)
            old = replace(
                old, invalid_at=max(began, old.valid_at), expired_at=created, closed_reason=why
            )
            _update_end(db, old)
            new = Fact(
                id=_new_id(db),
                text=new_text,
                scope=old.scope,
                owner=old.owner,
                session_id=session_id,
                run_id=run_id,
                seq=seq,
                created_at=created,
                valid_at=began,
                invalid_at=None,
                expired_at=None,
                supersedes=old.id,
                reason=why,
            )
            _insert(db, new)
        return old, new

    def put(self, fact: Fact) -> bool:
        """Store a whole fact as it is (an import); False if its id is taken already."""
        check(fact)
        with self._write("import a fact") as db:
            if _taken(db, fact.id):
                return False
            _insert(db, fact)
        return True

    def forget(
        self,
        ids: Sequence[str] = (),
        *,
        scope: Scope | None = None,
        owner: str | None = None,
        everything: bool = False,
    ) -> int:
        """Delete facts for good: those `ids` (whole ids), or all of a `scope` (of one `owner`,
        if given), or `everything`; one of the three (no ids: none). Returns how many went.

        Nothing of them stays in the file: the full-text index is merged (dropping their
        words), freed pages are zeroed, and the WAL is checkpointed and emptied."""
        if isinstance(ids, str):
            raise UsageError("forget: give a list of ids, not one string")
        if sum((bool(ids), scope is not None, everything)) > 1:
            raise UsageError("forget: give ids, or a scope (and owner), or everything=True")
        if owner is not None and scope is None:
            raise UsageError("forget: an owner goes with a scope")
        if scope is not None:
            check_scope(scope)
        if sum((bool(ids), scope is not None, everything)) == 0:
            return 0
        where, params = "1", list[str]()
        if scope is not None:
            where, params = "scope = ?", [scope]
            if owner is not None:
                where, params = "scope = ? AND owner = ?", [scope, owner]
        with self._guard("forget facts"), self._lock:
            if self._connect(create=False) is None:  # nothing kept: nothing to make
                return 0
        with self._write("forget facts") as db:
            if ids:
                gone, unique = 0, list(dict.fromkeys(ids))
                for start in range(0, len(unique), 500):
                    chunk = unique[start : start + 500]
                    marks = ", ".join("?" * len(chunk))
                    gone += db.execute(f"DELETE FROM facts WHERE id IN ({marks})", chunk).rowcount
            else:
                gone = db.execute(f"DELETE FROM facts WHERE {where}", params).rowcount
            if gone:
                db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')")
        if gone:  # the deleted pages' old copies out of the WAL (best effort: readers may hold it)
            with self._guard("forget facts"), self._lock:
                if self._db is not None:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        return gone

    # Reads

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> list[Fact]:
        """The facts of `scopes` (scope, owner) true at `as_of` (default: now) that match
        `query`'s words, best first (BM25). The query is free text: its words are OR-ed, each
        quoted, common ones dropped; none left, nothing found."""
        match = fts_query(query)
        pairs = _pairs(scopes)
        if not match or not pairs or limit <= 0:
            return []
        when = stamp(utc(as_of) if as_of is not None else datetime.now(UTC))
        owned, params = _owned(pairs)
        keys = " OR ".join(f'key : "{_key(*pair)}"' for pair in pairs)
        sql = (
            # CROSS JOIN: the index's matches drive, each looked up once; the planner, left to
            # itself, may scan an owner's facts and run the match again for each of them.
            f"SELECT {_prefixed('f.')} FROM facts_fts CROSS JOIN facts AS f "
            "ON f.num = facts_fts.rowid "
            f"WHERE facts_fts MATCH ? AND {owned} AND f.valid_at <= ? "
            "AND (f.invalid_at IS NULL OR f.invalid_at > ?) "
            "ORDER BY bm25(facts_fts, 1.0, 0.0) LIMIT ?"
        )
        match = f"({keys}) AND text : ({match})"
        return self._facts("search facts", sql, match, *params, when, when, limit)

    def current(
        self,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int | None = None,
    ) -> list[Fact]:
        """The facts of `scopes` true at `as_of` (default: now), the last stored first."""
        pairs = _pairs(scopes)
        if not pairs or (limit is not None and limit <= 0):
            return []
        when = stamp(utc(as_of) if as_of is not None else datetime.now(UTC))
        owned, params = _owned(pairs)
        sql = (
            f"SELECT {_COLUMNS} FROM facts WHERE {owned} AND {_VALID} "
            "ORDER BY created_at DESC, num DESC LIMIT ?"
        )
        return self._facts("list facts", sql, *params, when, when, -1 if limit is None else limit)

    def get(self, fact_id: str) -> Fact | None:
        """The fact with this id, or the one whose id starts with it; `FactError` if several
        do."""
        prefix = fact_id.strip().lower()
        if not _PREFIX.fullmatch(prefix):
            return None
        found = self._facts(
            "read a fact",
            f"SELECT {_COLUMNS} FROM facts WHERE id GLOB ? ORDER BY num LIMIT 11",
            prefix + "*",
        )
        exact = [fact for fact in found if fact.id == prefix]
        if exact or len(found) <= 1:
            return next(iter(exact or found), None)
        listed = ", ".join(fact.id for fact in found[:10])
        more = ", ..." if len(found) > 10 else ""
        raise FactError(
            f"{fact_id!r} is the start of several facts' ids ({listed}{more}): give more of it"
        )

    def history(self, fact_id: str) -> list[Fact]:
        """Every version in the chain the fact belongs to (its id, or a prefix as for `get`),
        the oldest first; [] if there is no such fact."""
        fact = self.get(fact_id)
        if fact is None:
            return []
        chain, seen = [fact], {fact.id}
        while chain[0].supersedes is not None and chain[0].supersedes not in seen:
            older = self._facts(
                "read a fact's history",
                f"SELECT {_COLUMNS} FROM facts WHERE id = ?",
                chain[0].supersedes,
            )
            if not older:  # forgotten
                break
            chain.insert(0, older[0])
            seen.add(older[0].id)
        while True:
            newer = self._facts(
                "read a fact's history",
                f"SELECT {_COLUMNS} FROM facts WHERE supersedes = ? ORDER BY num LIMIT 1",
                chain[-1].id,
            )
            if not newer or newer[0].id in seen:
                return chain
            chain.append(newer[0])
            seen.add(newer[0].id)

    def all(self, *, scopes: Sequence[tuple[Scope, str]] | None = None) -> list[Fact]:
        """Every fact, closed ones too, of `scopes` (default: all), the first stored first."""
        if scopes is None:
            return self._facts("list facts", f"SELECT {_COLUMNS} FROM facts ORDER BY num")
        pairs = _pairs(scopes)
        if not pairs:
            return []
        owned, params = _owned(pairs)
        sql = f"SELECT {_COLUMNS} FROM facts WHERE {owned} ORDER BY num"
        return self._facts("list facts", sql, *params)

    def unembedded(
        self, model: str, *, scopes: Sequence[tuple[Scope, str]], limit: int
    ) -> list[tuple[str, str]]:
        """(id, text) of facts of `scopes`, closed ones too, with no vector of `model`, the
        newest first."""
        pairs = _pairs(scopes)
        if not pairs or limit <= 0:
            return []
        owned, params = _owned(pairs)
        sql = (
            "SELECT f.id, f.text FROM facts AS f LEFT JOIN vectors AS v ON v.num = f.num "
            f"WHERE {owned} "
            "AND (v.model IS NULL OR v.model != ?) ORDER BY f.num DESC LIMIT ?"
        )
        with self._guard("list facts to embed"), self._lock:
            db = self._connect(create=False)
            return [] if db is None else db.execute(sql, (*params, model, limit)).fetchall()

    def put_vectors(self, model: str, rows: Sequence[tuple[str, bytes]]) -> None:
        """Keep each fact's (by id) vector of `model`, in place of any other; a fact forgotten
        meanwhile gets none."""
        if not rows:
            return
        with self._write("keep facts' vectors") as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (num, model, vector) "
                "SELECT num, ?, ? FROM facts WHERE id = ?",
                [(model, vector, fact_id) for fact_id, vector in rows],
            )

    def nearest(
        self,
        vector: bytes,
        model: str,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> list[tuple[float, Fact]]:
        """The facts of `scopes` true at `as_of` (default: now) whose vectors of `model` are
        nearest `vector` (unit length, float32), with their cosine similarity, nearest first."""
        import numpy as np

        pairs = _pairs(scopes)
        if not pairs or limit <= 0:
            return []
        when = stamp(utc(as_of) if as_of is not None else datetime.now(UTC))
        owned, params = _owned(pairs)
        sql = (
            "SELECT f.num, v.vector FROM facts AS f JOIN vectors AS v ON v.num = f.num "
            f"WHERE {owned} "
            "AND f.valid_at <= ? AND (f.invalid_at IS NULL OR f.invalid_at > ?) AND v.model = ?"
        )
        with self._guard("search facts by meaning"), self._lock:
            db = self._connect(create=False)
            if db is None:
                return []
            rows = [
                row
                for row in db.execute(sql, (*params, when, when, model))
                if len(row[1]) == len(vector)  # another size: a model renamed in place
            ]
            if not rows:
                return []
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
            scores = matrix.reshape(len(rows), -1) @ np.frombuffer(vector, dtype=np.float32)
            best = np.argsort(-scores, kind="stable")[:limit]
            nums = [rows[i][0] for i in best]
            marks = ", ".join("?" * len(nums))
            found = {
                row[0]: _fact(row[1:])
                for row in db.execute(
                    f"SELECT num, {_COLUMNS} FROM facts WHERE num IN ({marks})", nums
                )
            }
        return [(float(scores[i]), found[rows[i][0]]) for i in best]

    def count(self, *, scopes: Sequence[tuple[Scope, str]] | None = None) -> int:
        """How many facts there are, closed ones too, of `scopes` (default: all)."""
        sql, params = "SELECT count(*) FROM facts", list[str]()
        if scopes is not None:
            pairs = _pairs(scopes)
            if not pairs:
                return 0
            owned, params = _owned(pairs)
            sql += f" WHERE {owned}"
        with self._guard("count facts"), self._lock:
            db = self._connect(create=False)
            return 0 if db is None else int(db.execute(sql, params).fetchone()[0])

    def disconnect(self) -> None:
        """Close the connection (the next call opens it again)."""
        with self._lock:
            self._drop()

    def __enter__(self) -> FactStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    # The connection

    def _facts(self, doing: str, sql: str, *params: object) -> list[Fact]:
        with self._guard(doing), self._lock:
            db = self._connect(create=False)
            return [] if db is None else [_fact(row) for row in db.execute(sql, params)]

    @contextlib.contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The connection, in a write transaction (BEGIN IMMEDIATE), the file made if need be."""
        with self._guard(doing), self._lock:
            db = self._connect(create=True)
            assert db is not None
            with transaction(db):
                yield db

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._failure(exc, doing) from None
        except OSError as exc:
            raise MemoryStoreError(
                f"memory store {self.path} cannot be made ({exc.strerror or exc}): check that "
                f"{self.path.parent} is a folder you may write to"
            ) from None

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """The open connection with the schema in place; None when there is nothing to read
        (no file, or a file without the schema) and `create` is false."""
        if self._db is not None and self._ready:
            return self._db
        if self._db is None:
            if not create and not self.path.exists():
                return None
            if create:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self._db = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._db.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                self._db.execute("PRAGMA secure_delete = ON")
                self._db.execute("PRAGMA synchronous = FULL")  # a fact kept is kept
            except BaseException:
                self._drop()
                raise
        db = self._db
        try:
            version = self._version(db)
            if 0 < version < SCHEMA_VERSION:
                version = self._migrated(db)
            if version == 0 and create:
                db.execute("PRAGMA journal_mode = WAL")
                with transaction(db):  # another process may have made it meanwhile
                    if self._version(db) == 0:
                        for statement in _statements(SCHEMA):
                            db.execute(statement)
                        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                version = SCHEMA_VERSION
        except BaseException:
            self._drop()
            raise
        self._ready = version == SCHEMA_VERSION
        return db if self._ready else None

    def _migrated(self, db: sqlite3.Connection) -> int:
        """The file brought to this version, in one transaction (another process may be at it)."""
        with transaction(db):
            version = self._version(db)
            while version < SCHEMA_VERSION:
                for statement in _statements(MIGRATIONS[version]):
                    db.execute(statement)
                version += 1
            db.execute(f"PRAGMA user_version = {version}")
        return version

    def _version(self, db: sqlite3.Connection) -> int:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise MemoryStoreError(
                f"memory store {self.path} has schema version {version}, newer than this "
                f"reins reads ({SCHEMA_VERSION}): upgrade reins, or move the file aside to start "
                "a new one"
            )
        return version

    def _drop(self) -> None:
        """Close the connection (the lock held)."""
        if self._db is not None:
            db, self._db, self._ready = self._db, None, False
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def _failure(self, exc: sqlite3.Error, doing: str) -> MemoryStoreError:
        """What failed, on which file, and what to do, in one line."""
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        where = f"memory store {self.path}"
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            what = (
                f"is locked by another process past {self.timeout:g} s: try again, or raise "
                "memory.timeout"
            )
        elif primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            what = (
                f"is damaged ({exc}): move it aside (a new one is started) and import your "
                "last memory export, if you have one"
            )
        elif primary in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
            what = (
                f"cannot be opened ({exc}): check that it is a file, in a folder you may read "
                "and write"
            )
        elif primary == sqlite3.SQLITE_READONLY:
            what = f"is read-only ({exc}): make it and its folder writable to {doing}"
        elif primary == sqlite3.SQLITE_FULL:
            what = f"cannot grow: the disk is full; free some space to {doing}"
        elif primary == sqlite3.SQLITE_IOERR:
            what = f"could not be read or written ({exc}): check the disk, then try again"
        else:
            what = f"failed to {doing} ({exc})"
        return MemoryStoreError(f"{where} {what}")


def fts_query(text: str) -> str:
    """Free text as a safe FTS5 query: its words, each quoted, OR-ed, common ones dropped ("" if
    none is left). Quoting leaves no FTS5 syntax (`*`, `NEAR(`, `AND`, `col:`) to act."""
    words = dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)
    return " OR ".join(f'"{word}"' for word in list(words)[:_MAX_TERMS])


def _fact(row: tuple[Any, ...]) -> Fact:
    (fact_id, text, scope, owner, session_id, run_id, seq, created_at, valid_at, invalid_at,
     expired_at, supersedes, reason, closed_reason) = row  # fmt: skip
    return Fact(
        id=fact_id,
        text=text,
        scope=scope,
        owner=owner,
        session_id=session_id,
        run_id=run_id,
        seq=seq,
        created_at=datetime.fromisoformat(created_at),
        valid_at=datetime.fromisoformat(valid_at),
        invalid_at=None if invalid_at is None else datetime.fromisoformat(invalid_at),
        expired_at=None if expired_at is None else datetime.fromisoformat(expired_at),
        supersedes=supersedes,
        reason=reason,
        closed_reason=closed_reason,
    )


def _insert(db: sqlite3.Connection, fact: Fact) -> None:
    db.execute(
        f"INSERT INTO facts ({_COLUMNS}, key) VALUES ({', '.join('?' * 15)})",
        (
            fact.id,
            fact.text,
            fact.scope,
            fact.owner,
            fact.session_id,
            fact.run_id,
            fact.seq,
            stamp(fact.created_at),
            stamp(fact.valid_at),
            None if fact.invalid_at is None else stamp(fact.invalid_at),
            None if fact.expired_at is None else stamp(fact.expired_at),
            fact.supersedes,
            fact.reason,
            fact.closed_reason,
            _key(fact.scope, fact.owner),
        ),
    )


def _key(scope: str, owner: str) -> str:
    """A (scope, owner) as one word of the full-text index."""
    return "k" + hashlib.sha256(f"{scope}\0{owner}".encode()).hexdigest()[:20]


def _update_end(db: sqlite3.Connection, fact: Fact) -> None:
    assert fact.invalid_at is not None
    assert fact.expired_at is not None
    db.execute(
        "UPDATE facts SET invalid_at = ?, expired_at = ?, closed_reason = ? WHERE id = ?",
        (stamp(fact.invalid_at), stamp(fact.expired_at), fact.closed_reason, fact.id),
    )


def _open_fact(db: sqlite3.Connection, fact_id: str) -> Fact:
    """The fact with this whole id, still open (`FactError` if none, or closed)."""
    row = db.execute(f"SELECT {_COLUMNS} FROM facts WHERE id = ?", (fact_id,)).fetchone()
    if row is None:
        raise FactError(f"no fact has the id {fact_id!r}")
    fact = _fact(row)
    if fact.invalid_at is not None:
        raise FactError(
            f"fact {fact.id} is closed already (no longer true from "
            f"{stamp(fact.invalid_at)}): change its latest version instead"
        )
    return fact


def _new_id(db: sqlite3.Connection) -> str:
    while _taken(db, fact_id := secrets.token_hex(6)):
        pass
    return fact_id


def _taken(db: sqlite3.Connection, fact_id: str) -> bool:
    return db.execute("SELECT 1 FROM facts WHERE id = ?", (fact_id,)).fetchone() is not None


def _pairs(scopes: Sequence[tuple[Scope, str]]) -> list[tuple[Scope, str]]:
    for scope, _ in scopes:
        check_scope(scope)
    return list(dict.fromkeys(scopes))


def _owned(pairs: list[tuple[Scope, str]]) -> tuple[str, list[str]]:
    """The WHERE term for facts of these (scope, owner) pairs, and its parameters."""
    terms = " OR ".join("(scope = ? AND owner = ?)" for _ in pairs)  # each by the index
    return f"({terms})", [part for pair in pairs for part in pair]


def _prefixed(table: str) -> str:
    return ", ".join(table + column for column in _COLUMNS.split(", "))


def _statements(script: str) -> Iterator[str]:
    """The statements of a script, one by one (`executescript` would commit the transaction)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement
            statement = ""
