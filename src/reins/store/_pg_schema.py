"""The tables of a PostgreSQL store, their version, and the migrations that bring an older
store up to it (one process at a time); a store from a newer reins is refused, never changed.

`reins_events`: one row per event, the JSON bytes it is recorded as (`_serialize`), keyed by
its run and seq. `reins_runs`: the run index (what `RunInfo` says, and the order its lines
were made in), written in the transaction that writes the events. `reins_blobs`: the images
and documents the events refer to, by sha256; `reins_media`: which session refers to which (a
removed session's blobs go when no other session refers to them). Every name starts with
`reins_`: the database may hold other tables. `reins_leases`: which server runs which run,
until when (`_pg_leases`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..core._errors import StoreError
from ._pg_connect import Address, failed

SCHEMA_VERSION = 2
MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: the first tables.
    """
    CREATE TABLE reins_runs (
        run_id text PRIMARY KEY,
        session_id text NOT NULL,
        goal text NOT NULL,
        model text NOT NULL,
        started_at timestamptz NOT NULL,
        stop_reason text,
        indexed bigint GENERATED ALWAYS AS IDENTITY
    );
    CREATE INDEX reins_runs_by_session ON reins_runs (session_id, started_at);
    CREATE TABLE reins_events (
        run_id text NOT NULL,
        seq integer NOT NULL CHECK (seq > 0),
        session_id text NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX reins_events_by_session ON reins_events (session_id);
    CREATE TABLE reins_blobs (
        sha256 text PRIMARY KEY,
        data bytea NOT NULL
    );
    CREATE TABLE reins_media (
        session_id text NOT NULL,
        sha256 text NOT NULL REFERENCES reins_blobs,
        PRIMARY KEY (session_id, sha256)
    );
    CREATE INDEX reins_media_by_blob ON reins_media (sha256);
    """,
    # 1 -> 2: servers' leases on the runs they run.
    """
    CREATE TABLE reins_leases (
        run_id text PRIMARY KEY,
        session_id text NOT NULL,
        lock_key bigint NOT NULL,
        owner text NOT NULL,
        expires timestamptz NOT NULL
    );
    CREATE INDEX reins_leases_by_owner ON reins_leases (owner);
    """,
)
"""`MIGRATIONS[n]` takes a store from version n to n + 1 (in one transaction with the rest)."""
assert len(MIGRATIONS) == SCHEMA_VERSION
MIGRATING = 0x7265696E73_000001
"""The advisory lock held while a store's schema is made or migrated."""


def prepare(connection: psycopg.Connection[Any], place: Address, *, create: bool) -> None:
    """Bring the store's tables to `SCHEMA_VERSION` (made if there are none and `create`);
    a StoreError if it is newer, or has none and may not be made."""
    try:
        version = _version(connection)
        if version == SCHEMA_VERSION:
            return
        _refuse_newer(version, place)
        if version is None and not create:
            raise StoreError(
                f"no reins event log in the PostgreSQL database {place.where} yet; run "
                "`reins run GOAL --store ...` first (it makes the tables)"
            )
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATING,))
            connection.execute("CREATE TABLE IF NOT EXISTS reins_schema (version integer NOT NULL)")
            version = _version(connection)  # another process may have done it meanwhile
            _refuse_newer(version, place)
            for step in range(version or 0, SCHEMA_VERSION):
                connection.execute(MIGRATIONS[step].encode())
            connection.execute("DELETE FROM reins_schema")
            connection.execute("INSERT INTO reins_schema VALUES (%s)", (SCHEMA_VERSION,))
    except psycopg.Error as exc:
        raise failed(place, "reading or making its tables", exc) from None


def _version(connection: psycopg.Connection[Any]) -> int | None:
    """The store's schema version; None if it has no reins tables."""
    if connection.execute("SELECT to_regclass('reins_schema')").fetchone() == (None,):
        return None
    row = connection.execute("SELECT max(version) FROM reins_schema").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _refuse_newer(version: int | None, place: Address) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the PostgreSQL store at {place.where} has schema version {version}, made by a "
            f"newer reins; this one knows versions up to {SCHEMA_VERSION}: upgrade reins "
            "(pip install -U 'reins[postgres]') to use it"
        )
