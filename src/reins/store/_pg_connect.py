"""Connecting to a PostgreSQL store: its address read (and said without its password), and a
connection that fails with one line naming the host and port, never a traceback."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from ..core._errors import StoreError

CONNECT_TIMEOUT = 10
"""Seconds to wait for a server that does not answer (libpq's default is to wait forever)."""


@dataclass(frozen=True)
class Address:
    """A PostgreSQL store's connection string, and how it is named in messages."""

    dsn: str
    host: str
    port: str
    database: str

    @property
    def where(self) -> str:
        """`host:port/database`: what a message names (never the user or password)."""
        return f"{self.host}:{self.port}/{self.database}"


def address(dsn: str) -> Address:
    """The address `dsn` gives (a `postgresql://` URL or libpq's key=value form), with libpq's
    defaults for what it leaves out; a StoreError saying what is wrong with it otherwise."""
    try:
        params: dict[str, Any] = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StoreError(
            f"not a PostgreSQL address ({_reason(exc)}): give one as "
            "postgresql://USER@HOST:PORT/DATABASE"
        ) from None
    port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
    if not all(p.isdigit() for p in port.split(",")):
        raise StoreError(
            f"not a PostgreSQL address (its port {port!r} is not a number): give one as "
            "postgresql://USER@HOST:PORT/DATABASE"
        )
    host = str(params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or "")
    user = str(params.get("user") or os.environ.get("PGUSER") or "")
    database = str(params.get("dbname") or os.environ.get("PGDATABASE") or user or "postgres")
    return Address(dsn, host or "localhost", port, database)


def connect(place: Address, **options: Any) -> psycopg.Connection[TupleRow]:
    """A connection to the store (autocommit); a StoreError naming its host and port if none
    can be made."""
    try:
        return psycopg.connect(place.dsn, **connect_options(place), **options)
    except psycopg.Error as exc:
        raise unreachable(place, exc) from None


def connect_options(place: Address) -> dict[str, Any]:
    """What every connection of a store is opened with."""
    timeout = {} if "connect_timeout" in place.dsn else {"connect_timeout": CONNECT_TIMEOUT}
    return {"autocommit": True, "application_name": "reins", **timeout}


def unreachable(place: Address, exc: psycopg.Error) -> StoreError:
    """No connection could be made: where, why, and what to do."""
    return StoreError(
        f"cannot connect to the PostgreSQL store at {place.host}:{place.port} (database "
        f"{place.database}): {_reason(exc)}; check that the server runs there and takes "
        "connections, or give --store (REINS_STORE) another address"
    )


def failed(place: Address, doing: str, exc: psycopg.Error) -> StoreError:
    """A query or write failed on a connection that was made."""
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(
            f"lost the connection to the PostgreSQL store at {place.where} while {doing} "
            f"({_reason(exc)}); what was committed before is kept: run the command again"
        )
    return StoreError(f"the PostgreSQL store at {place.where}, {doing}: {_reason(exc)}")


def _reason(exc: psycopg.Error) -> str:
    """libpq's message in one line, without the address it repeats."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.rsplit(" failed: ", 1)[-1]  # 'connection to server at "h", port 1 failed: ...'
    text = re.sub(r"^(FATAL|ERROR):\s+", "", text)
    return re.sub(r"\s+", " ", text).rstrip(".")
