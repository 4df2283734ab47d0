"""The event log on PostgreSQL: one store that processes on many machines share.

Each event is a row holding the JSON bytes the SQLite log journals for it (`_serialize`), byte
for byte, keyed by its run and seq. The run index and the images and documents the events
refer to are tables beside it (`_pg_schema`), written in the same transaction as the events:
the index never lags. The database keeps each run gapless: (run_id, seq) is the primary key,
and each write checks, in its transaction, that a run's first new event is one past its last.

A session is written by one process at a time: the one holding its advisory lock (`_pg_locks`),
taken at `claim` or at its first write and held while a run of the session goes on there; each
write checks, in its transaction, that the lock is still held. A process that dies loses its
connection, and so its locks: the session is free at once.

The rows are not MAC-chained as the journals are: a journal is a file that commands can reach,
and the key that signs it is the user's, on one machine; here the database's own accounts and
grants say who may write. A session copied to a SQLite store is signed there as it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool
from pydantic import ValidationError

from ..core._errors import LogCorrupted, RunNotFound, SessionBusy, StoreError
from ..core._events import EVENT, Event, RunFinished, RunResumed, RunStarted
from ..core._log import RunInfo
from ..core._stop import StopReason
from ._blobs import CARRIERS, media_in, referred
from ._log import busy_here
from ._pg_connect import Address, address, connect_options, failed
from ._pg_leases import Leases
from ._pg_locks import COUNT, SessionLocks, lock_key
from ._pg_schema import SCHEMA_VERSION, prepare
from ._serialize import serialized, unrecordable

log = logging.getLogger("reins.store")

Pool = AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]]

LINE = "run_id, session_id, goal, model, started_at, stop_reason"
"""A line of the run index (`RunInfo`), as `reins_runs` holds it."""
INSERT_EVENT = "INSERT INTO reins_events (run_id, seq, session_id, body) VALUES (%s, %s, %s, %s)"
START_RUN = (
    f"INSERT INTO reins_runs ({LINE}) VALUES (%s, %s, %s, %s, %s, NULL) "
    "ON CONFLICT (run_id) DO UPDATE "
    "SET session_id = excluded.session_id, goal = excluded.goal, model = excluded.model, "
    "started_at = excluded.started_at, stop_reason = NULL"
)
RUNS = f"SELECT {LINE} FROM reins_runs"
IN_ORDER = "ORDER BY started_at, indexed"
"""As they started; runs started at the same instant (a fork's copy of its run_started) in
the order they were indexed, as SQLite lists them."""


@dataclass
class _Batch:
    """Events appended since the last commit; `error` once a commit of them failed."""

    events: list[Event] = field(default_factory=list[Event])
    error: StoreError | None = None


@dataclass(frozen=True)
class _Connections:
    """The pool of one event loop, and the lock that keeps its commits in order."""

    loop: asyncio.AbstractEventLoop
    pool: Pool
    writing: asyncio.Lock


class PostgresLog:
    """Event log in the PostgreSQL database `dsn` (`postgresql://USER@HOST:PORT/DATABASE`, or
    libpq's `key=value` form): the same contract as `SQLiteLog`, for many processes on many
    machines. Needs `reins[postgres]`."""

    def __init__(self, dsn: str, *, create: bool = True, pool_size: int = 4) -> None:
        """Connects now: an unreachable server or a bad address is a StoreError naming it.
        The tables are made (`create`) or migrated to this reins' version; a store made by a
        newer reins is refused."""
        self.address: Address = address(dsn)
        self.where = f"the PostgreSQL store at {self.address.where}"
        self.schema_version = SCHEMA_VERSION
        self._locks = SessionLocks(self.address)
        try:
            prepare(self._locks.connection, self.address, create=create)
        except BaseException:
            self._locks.close()
            raise
        self._pool_size = pool_size
        self._connections: _Connections | None = None
        self._batch = _Batch()
        self._next_seq: dict[str, int] = {}
        self._live: dict[str, set[str]] = {}
        """Runs going on here, by session: its lock is held while it has one."""
        self._claimed: set[str] = set()
        """Sessions reserved for a turn about to start here (see `claim`)."""
        self._writing: set[str] = set()
        """Sessions of the write in flight."""
        self._flushes: set[asyncio.Task[None]] = set()

    async def _pool(self) -> _Connections:
        """The connections of the running event loop (opened at its first use: a pool
        belongs to one loop)."""
        loop = asyncio.get_running_loop()
        held = self._connections
        if held is not None and held.loop is loop:
            return held
        pool: Pool = AsyncConnectionPool(
            self.address.dsn,
            kwargs=connect_options(self.address),
            min_size=1,
            max_size=self._pool_size,
            open=False,
            name="reins",
        )
        try:
            await pool.open(wait=True, timeout=30)
        except psycopg.Error as exc:
            await pool.close()
            raise failed(self.address, "opening connections", exc) from None
        self._connections = _Connections(loop, pool, asyncio.Lock())
        return self._connections

    async def append(self, event: Event, *, commit: bool = True) -> None:
        run_id, seq = event.run_id, event.seq
        expected = self._next_seq.get(run_id)
        if expected is None:
            if type(event) is RunStarted:
                expected = 1
            else:  # a run this process has not written since: where the store says it ends
                await self.commit()
                expected = self._next_seq.get(run_id) or await self._last_seq(run_id) + 1
        if seq != expected:
            raise StoreError(
                f"run {run_id}: event {seq} arrived where {expected} was due; "
                "is another process driving this run?"
            )
        self._next_seq[run_id] = seq + 1
        self._batch.events.append(event)
        if commit:
            await self.commit()

    async def _last_seq(self, run_id: str) -> int:
        rows = await self._query("SELECT max(seq) FROM reins_events WHERE run_id = %s", run_id)
        return int(rows[0][0] or 0)

    async def commit(self) -> None:
        """Write the batch in one transaction; commits wait for one another, in order (a
        commit whose events another one wrote returns when that one has, with its outcome)."""
        batch = self._batch
        held = self._connections
        if not batch.events and (held is None or held.loop is not asyncio.get_running_loop()):
            return  # nothing to write, nor a write of this loop to wait for
        connections = await self._pool()
        async with connections.writing:
            if batch is self._batch and batch.events:
                self._batch = _Batch()
                try:
                    await self._write(connections.pool, batch.events)
                except (StoreError, asyncio.CancelledError) as exc:
                    batch.error = (
                        exc
                        if isinstance(exc, StoreError)
                        else StoreError("the write was cancelled; it may not have been made")
                    )
                    for event in reversed(batch.events):  # as if none of it was appended
                        self._next_seq[event.run_id] = event.seq
                    self._let_go_of_idle()
                    raise
                self._note_written(batch.events)
        if batch.error is not None:
            raise batch.error

    async def _write(self, pool: Pool, appended: list[Event]) -> None:
        """One transaction: the lock of each session checked, each run checked to follow on,
        the blobs, the events and the index."""
        try:
            events, bodies = serialized(appended)
        except (ValueError, RecursionError) as exc:
            raise unrecordable(exc, appended) from None
        media = _media_of(events)
        sessions = sorted({e.session_id for e in events})
        self._locks.hold(sessions)
        self._writing.update(sessions)  # held until the write ends, whatever happens
        rows = [(e.run_id, e.seq, e.session_id, b) for e, b in zip(events, bodies, strict=True)]
        try:
            async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                await self._locks.check_held(cur, sessions)
                await self._check_follow_on(cur, events)
                if media:
                    await self._put_blobs(cur, media)
                await cur.executemany(INSERT_EVENT, rows)
                for event in events:
                    await _index(cur, event)
        except psycopg.errors.UniqueViolation:
            raise StoreError(
                f"run {events[0].run_id}: events of this batch are in {self.where} already; is "
                "another process driving this run? nothing of the batch was written"
            ) from None
        except psycopg.Error as exc:
            raise failed(self.address, "recording events", exc) from None
        finally:
            self._writing.difference_update(sessions)

    async def _check_follow_on(
        self, cur: psycopg.AsyncCursor[TupleRow], events: list[Event]
    ) -> None:
        """Refuse the write unless each run's first new event is one past its last (the
        rest follow on: `append` checks that)."""
        firsts: dict[str, int] = {}
        for event in events:
            firsts.setdefault(event.run_id, event.seq)
        await cur.execute(
            "SELECT run_id, max(seq) FROM reins_events WHERE run_id = ANY(%s) GROUP BY run_id",
            (list(firsts),),
        )
        last = {str(run_id): int(seq) for run_id, seq in await cur.fetchall()}
        for run_id, first in firsts.items():
            due = last.get(run_id, 0) + 1
            if first != due:
                raise StoreError(
                    f"run {run_id}: event {first} arrived where {due} was due in {self.where}; "
                    "is another process driving this run?"
                )

    async def _put_blobs(
        self, cur: psycopg.AsyncCursor[TupleRow], media: dict[tuple[str, str], bytes]
    ) -> None:
        """The blobs the events refer to (those the store lacks), and which session refers to
        which. Those it has are locked against a removal until the transaction ends."""
        shas = sorted({sha for _, sha in media})
        await cur.execute(
            "SELECT sha256 FROM reins_blobs WHERE sha256 = ANY(%s) FOR KEY SHARE", (shas,)
        )
        have = {str(sha) for (sha,) in await cur.fetchall()}
        new = {sha: data for (_, sha), data in media.items() if sha not in have}
        if new:
            await cur.executemany(
                "INSERT INTO reins_blobs VALUES (%s, %s) ON CONFLICT DO NOTHING", list(new.items())
            )
        await cur.executemany(
            "INSERT INTO reins_media VALUES (%s, %s) ON CONFLICT DO NOTHING", list(media)
        )

    def _note_written(self, events: list[Event]) -> None:
        """Which runs go on here, after a write: a session's lock is kept while one does."""
        for event in events:
            kind = type(event)
            if kind is RunStarted or kind is RunResumed:
                self._live.setdefault(event.session_id, set()).add(event.run_id)
                self._claimed.discard(event.session_id)
            elif kind is RunFinished:
                live = self._live.get(event.session_id, set())
                live.discard(event.run_id)
                self._next_seq.pop(event.run_id, None)  # a resume asks the store where it ended
                if not live:
                    self._live.pop(event.session_id, None)
        self._let_go_of_idle()

    def claim(self, session_id: str, run_id: str | None = None) -> None:
        """Reserve the session for a new turn (or for resuming its run `run_id`) before its
        history is read: another run of it going on, in this process or another (which holds
        its lock), raises SessionBusy. The reservation passes to the run its first event
        starts, and ends with that run or with `release`."""
        others = self._live.get(session_id, set()) - {run_id}
        if session_id in self._claimed or others:
            raise busy_here(session_id, others)
        self._locks.hold([session_id])
        self._claimed.add(session_id)

    def release(self, session_id: str, run_id: str | None = None) -> None:
        """Give up a reservation whose run did not start; with `run_id`, the run stopped here
        without finishing: what it appended is written (now, in the background) and the
        session is let go, here and for other processes."""
        self._claimed.discard(session_id)
        live = self._live.get(session_id, set())
        if run_id is not None:
            live.discard(run_id)
            self._next_seq.pop(run_id, None)  # a resume asks the store where the run ended
        if not live:
            self._live.pop(session_id, None)
        if any(e.session_id == session_id for e in self._batch.events):
            self._flush_soon()  # the lock goes once they are written
        else:
            self._let_go_of_idle()

    def _flush_soon(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: the next commit, or close, writes them
            return
        task = loop.create_task(self._flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        try:
            await self.commit()
        except StoreError as exc:
            log.warning("%s", exc)

    def _let_go_of_idle(self) -> None:
        """Release the lock of each session held with no run going on, no claim and nothing
        waiting to be written."""
        pending = {e.session_id for e in self._batch.events} | self._writing
        self._locks.let_go(self._locks.held - self._live.keys() - self._claimed - pending)

    def writing(self, session_id: str) -> bool:
        """True if some process (this one included) holds the session's lock."""
        return self._locks.writing(session_id)

    async def writing_now(self, session_id: str) -> bool:
        """`writing`, asked through the pool: a server watching many runs does not hold up
        its event loop for a round trip to the database at each look."""
        rows = await self._query(COUNT, [lock_key(session_id)], doing="reading a session's lock")
        return bool(rows[0][0])

    def unverified(self, session_id: str) -> str | None:
        """None: the rows are not signed (the database's grants guard them); see the module."""
        return None

    async def events(self, run_id: str) -> list[Event]:
        events = await self.events_after(run_id, 0)
        if not events:
            raise RunNotFound(f"no run {run_id!r} in {self.where}")
        return events

    async def events_after(self, run_id: str, after: int) -> list[Event]:
        """The run's events past seq `after` (none yet: empty), as `events` reads them: what
        a server watching a run another one writes reads at each look."""
        rows = await self._query(
            "SELECT seq, body FROM reins_events WHERE run_id = %s AND seq > %s ORDER BY seq",
            run_id,
            after,
        )
        blobs = await self._blobs(set[str]().union(*(referred(body) for _, body in rows)))
        events: list[Event] = []
        for number, (seq, body) in enumerate(rows, start=after + 1):
            try:
                event = EVENT.validate_json(body, context={"blobs": blobs})
            except ValidationError as exc:
                raise LogCorrupted(
                    f"run {run_id}, event {seq} in {self.where} is not a reins event: "
                    f"{exc.errors()[0]['msg']}"
                ) from None
            if seq != number or event.run_id != run_id or event.seq != seq:
                raise LogCorrupted(
                    f"run {run_id} in {self.where}: its row {number} holds run {event.run_id}'s "
                    f"event {event.seq}; the rows were changed after they were written"
                )
            events.append(event)
        return events

    async def _blobs(self, shas: set[str]) -> _Fetched:
        """The blobs of `shas` (a run's events refer to them), fetched in one query."""
        sql = "SELECT sha256, data FROM reins_blobs WHERE sha256 = ANY(%s)"
        found = dict(await self._query(sql, list(shas))) if shas else {}
        return _Fetched(found, self.where)

    async def runs(self, session_id: str | None = None) -> list[RunInfo]:
        if session_id is None:
            rows = await self._query(f"{RUNS} {IN_ORDER}")
        else:
            rows = await self._query(f"{RUNS} WHERE session_id = %s {IN_ORDER}", session_id)
        return [_info(row) for row in rows]

    async def remove(self, session_id: str) -> list[str]:
        """Delete a session for good: its events, its runs, the blobs no other session refers
        to. `SessionBusy` if it is being written (here or by another process); returns the
        ids of its runs."""
        await self.commit()
        if session_id in self._live or session_id in self._claimed:
            raise SessionBusy(f"session {session_id} has a run going on in this process")
        self._locks.hold([session_id])  # no turn starts meanwhile
        try:
            pool = (await self._pool()).pool
            async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                await cur.execute(f"{RUNS} WHERE session_id = %s {IN_ORDER}", (session_id,))
                runs = [str(row[0]) for row in await cur.fetchall()]
                await cur.execute(
                    "DELETE FROM reins_media WHERE session_id = %s RETURNING sha256", (session_id,)
                )
                shas = [str(sha) for (sha,) in await cur.fetchall()]
                for table in ("reins_events", "reins_runs", "reins_leases"):
                    await cur.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))
                if shas:  # unless another session refers to them
                    await cur.execute(
                        "DELETE FROM reins_blobs b WHERE sha256 = ANY(%s) AND NOT EXISTS "
                        "(SELECT 1 FROM reins_media m WHERE m.sha256 = b.sha256)",
                        (shas,),
                    )
        except psycopg.Error as exc:
            raise failed(self.address, f"removing session {session_id}", exc) from None
        finally:
            self._let_go_of_idle()
        for run_id in runs:
            self._next_seq.pop(run_id, None)
        return runs

    async def recorded_runs(self) -> dict[str, str]:
        """Every run with events in the store, and its session (`reins doctor` compares them
        with the run index)."""
        rows = await self._query("SELECT DISTINCT run_id, session_id FROM reins_events")
        return {str(run_id): str(session_id) for run_id, session_id in rows}

    async def reindex(self, run_id: str, info: RunInfo | None) -> None:
        """Write the run's line of the index again (None: drop it), as its events say."""
        pool = (await self._pool()).pool
        try:
            async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                await cur.execute("DELETE FROM reins_runs WHERE run_id = %s", (run_id,))
                if info is not None:
                    stop = None if info.stop_reason is None else info.stop_reason.value
                    line = (run_id, info.session_id, info.goal, info.model, info.started_at, stop)
                    await cur.execute(
                        f"INSERT INTO reins_runs ({LINE}) VALUES (%s, %s, %s, %s, %s, %s)", line
                    )
        except psycopg.Error as exc:
            raise failed(self.address, f"indexing run {run_id} again", exc) from None

    async def _query(
        self, sql: str, *params: object, doing: str = "reading"
    ) -> list[tuple[Any, ...]]:
        pool = (await self._pool()).pool
        try:
            async with pool.connection() as conn:
                cursor = await conn.execute(sql, params or None)
                return await cursor.fetchall() if cursor.description else []
        except psycopg.Error as exc:
            raise failed(self.address, doing, exc) from None

    def leases(self, owner: str, seconds: float) -> Leases:
        """The leases `owner` (a server) holds on runs of this store (`_pg_leases`)."""
        return Leases(self._query, owner, seconds)

    async def close(self) -> None:
        """Write what is pending, and close the connections (the locks go with them)."""
        try:
            if self._flushes:
                await asyncio.gather(*self._flushes, return_exceptions=True)
            await self.commit()
        finally:
            connections, self._connections = self._connections, None
            if connections is not None and connections.loop is asyncio.get_running_loop():
                with contextlib.suppress(psycopg.Error):
                    await connections.pool.close()
            self._locks.close()


class _Fetched:
    """The blobs a run's events refer to, fetched with them, checked against their name."""

    def __init__(self, found: dict[str, bytes], where: str) -> None:
        self._found = found
        self._where = where

    def get(self, sha256: str) -> bytes:
        data = self._found.get(sha256)
        if data is None:
            raise StoreError(
                f"the log refers to an image or document {sha256}, which {self._where} lacks"
            )
        if hashlib.sha256(data).hexdigest() != sha256:
            raise StoreError(
                f"the blob {sha256} in {self._where} was changed after it was written: the "
                "log's image or document cannot be trusted"
            )
        return data


def _media_of(events: list[Event]) -> dict[tuple[str, str], bytes]:
    """The images and documents the events refer to, by (session, sha256)."""
    media: dict[tuple[str, str], bytes] = {}
    for event in events:
        if type(event) in CARRIERS:
            for item in media_in(event):
                if hashlib.sha256(item.data).hexdigest() != item.sha256:
                    raise StoreError(
                        f"the bytes given for blob {item.sha256} do not have that sha256"
                    )
                media[event.session_id, item.sha256] = item.data
    return media


async def _index(cur: psycopg.AsyncCursor[TupleRow], event: Event) -> None:
    """The run index after `event` (what `index_update` says, as SQL), told apart by exact
    type as the SQLite log does."""
    kind = type(event)
    if kind is RunStarted:
        assert isinstance(event, RunStarted)
        started = (event.run_id, event.session_id, event.goal, event.config.model, event.ts)
        await cur.execute(START_RUN, started)
    elif kind is RunFinished:
        assert isinstance(event, RunFinished)
        await cur.execute(
            "UPDATE reins_runs SET stop_reason = %s WHERE run_id = %s",
            (event.stop_reason.value, event.run_id),
        )
    elif kind is RunResumed:
        await cur.execute(
            "UPDATE reins_runs SET stop_reason = NULL WHERE run_id = %s", (event.run_id,)
        )


def _info(row: tuple[Any, ...]) -> RunInfo:
    run_id, session_id, goal, model, started_at, stop_reason = row
    assert isinstance(started_at, datetime)
    return RunInfo(
        run_id=str(run_id),
        session_id=str(session_id),
        goal=str(goal),
        model=str(model),
        started_at=started_at.astimezone(UTC),
        stop_reason=None if stop_reason is None else StopReason(str(stop_reason)),
    )
