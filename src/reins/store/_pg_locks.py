"""Which process writes a session of a PostgreSQL store: the one holding its advisory lock.

A process takes a session's lock (`pg_try_advisory_lock`, session-level: held for the life of
the connection, not of a transaction) on a connection of its own, kept open while the log is.
A process that dies, `kill -9` included, loses its connection and with it its locks: the
session is free at once, with no lease to wait out. Each write checks, inside its own
transaction, that the lock connection still holds the sessions it writes (`check_held`): a
process whose lock connection dropped (and whose sessions another process may have taken) writes
nothing more.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.rows import TupleRow

from ..core._errors import SessionBusy, StoreError
from ._pg_connect import Address, connect, failed

log = logging.getLogger("reins.store")

KEY_OF = "((classid::bigint << 32) | objid::bigint)"
"""A bigint advisory lock's key, as `pg_locks` shows it (high half, low half; objsubid 1)."""
COUNT = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    f"AND {KEY_OF} = ANY(%s)"
)
"""How many of the locks `%s` someone holds."""
KEEPALIVES = (
    "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3"
)
"""The server probes a lock connection after 10 s of silence, and gives up after 3 misses."""


def lock_key(session_id: str) -> int:
    """The session's advisory lock: 64 bits of a hash of its id (PostgreSQL's bigint key)."""
    digest = hashlib.blake2b(b"reins session\x00" + session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class SessionLocks:
    """The sessions one log holds, on the connection that holds them (made now: an address
    that cannot be reached is a StoreError naming it)."""

    def __init__(self, place: Address) -> None:
        self.place = place
        self.connection: psycopg.Connection[TupleRow] = connect(place)
        try:  # so the server drops the locks of a machine gone silent in ~25 s, not ~2 h
            self.connection.execute(KEEPALIVES)
        except psycopg.Error as exc:
            self.connection.close()
            raise failed(place, "setting up its lock connection", exc) from None
        self.held: set[str] = set()

    def hold(self, sessions: Iterable[str]) -> None:
        """Take the lock of each session not held yet; SessionBusy if another process has it."""
        for session_id in sessions:
            if session_id in self.held:
                continue
            (got,) = self._one("SELECT pg_try_advisory_lock(%s)", lock_key(session_id))
            if not got:
                raise SessionBusy(
                    f"session {session_id} is being written by another process; wait for it "
                    "to finish, or start a new session"
                )
            self.held.add(session_id)

    def let_go(self, sessions: Iterable[str]) -> None:
        """Release the locks of `sessions` (those held)."""
        for session_id in set(sessions) & self.held:
            self.held.discard(session_id)
            try:
                self._one("SELECT pg_advisory_unlock(%s)", lock_key(session_id))
            except StoreError as exc:  # the connection is gone, and its locks with it
                log.debug("%s", exc)

    def writing(self, session_id: str) -> bool:
        """True if some process (this one included) holds the session's lock."""
        (count,) = self._one(COUNT, [lock_key(session_id)])
        return bool(count)

    async def check_held(self, cur: psycopg.AsyncCursor[TupleRow], sessions: list[str]) -> None:
        """In a write's transaction (`cur`): refuse it unless the lock connection still holds
        each of `sessions`."""
        keys = [lock_key(s) for s in sessions]
        await cur.execute(f"{COUNT} AND pid = %s", (keys, self.connection.info.backend_pid))
        row = await cur.fetchone()
        if row is None or row[0] != len(sessions):
            raise StoreError(
                f"this process no longer holds session {sessions[0]} in the PostgreSQL store "
                f"at {self.place.where} (its connection to the store was lost); nothing of "
                "the batch was written: resume the run"
            )

    def close(self) -> None:
        """Close the connection: every lock goes with it."""
        self.held.clear()
        self.connection.close()

    def _one(self, sql: str, *params: object) -> tuple[Any, ...]:
        try:
            row = self.connection.execute(sql, params).fetchone()
        except psycopg.Error as exc:
            raise failed(self.place, "taking or giving up a session's lock", exc) from None
        assert row is not None  # each query here returns one row
        return row
