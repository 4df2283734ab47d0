"""Messages between the processes that share a PostgreSQL store: a JSON object sent with
`NOTIFY` on one channel, handed to each process that `LISTEN`s on it.

A message is not kept: a process that listens later, or whose connection dropped, never gets
it. So it suits what is only worth doing now (stop a run, tell it a steer) and is said to the
sender as queued, not done; what must outlive a process goes in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.rows import TupleRow

from ..core._errors import UsageError
from ._pg_connect import Address, connect_options, failed

log = logging.getLogger("reins.store")

CHANNEL = "reins_commands"
MAX_PAYLOAD = 7_900
"""Bytes of JSON a message may hold: PostgreSQL refuses a payload of 8,000 or more."""

Receiver = Callable[[dict[str, Any]], None]


class Channel:
    """The command channel of the store at `place`: `send` a message to every listener, or
    `listen` for them (on a connection of its own, kept open until `close`)."""

    def __init__(self, place: Address) -> None:
        self.place = place
        self._listener: psycopg.AsyncConnection[TupleRow] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    async def listen(self, receive: Receiver) -> None:
        """Hand each message to `receive`, in this event loop, from now on (returns once the
        database listens: a message sent after it is not missed). Listening already, this
        does nothing; a listener whose connection was lost connects again."""
        async with self._starting:  # two listeners would hand each message over twice
            if self._reading is not None and not self._reading.done():
                return
            await self.close()
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.place.dsn, **connect_options(self.place)
                )
            except psycopg.Error as exc:
                raise failed(self.place, "listening for commands", exc) from None
            try:
                await conn.execute(f"LISTEN {CHANNEL}")
            except psycopg.Error as exc:
                await conn.close()
                raise failed(self.place, "listening for commands", exc) from None
            self._listener = conn
            self._reading = asyncio.create_task(self._read(conn, receive), name="reins-listen")

    async def _read(self, conn: psycopg.AsyncConnection[TupleRow], receive: Receiver) -> None:
        try:
            async for notice in conn.notifies():
                try:
                    message = json.loads(notice.payload)
                except ValueError:
                    log.warning("a command on %s is not JSON; ignored", CHANNEL)
                    continue
                if isinstance(message, dict):
                    try:
                        receive(message)
                    except Exception:  # one bad command stops no other
                        log.exception("a command on %s failed", CHANNEL)
        except psycopg.Error as exc:  # the connection went: commands no longer reach here
            log.warning("%s", failed(self.place, "listening for commands", exc))

    async def send(self, message: dict[str, Any]) -> None:
        """Send `message` to every process listening now (none: it is lost)."""
        payload = json.dumps(message)
        if len(payload.encode()) > MAX_PAYLOAD:
            raise UsageError(
                f"a command to a run of another server is at most {MAX_PAYLOAD} bytes of "
                f"JSON; this one is {len(payload.encode())}"
            )
        try:
            async with await psycopg.AsyncConnection.connect(
                self.place.dsn, **connect_options(self.place)
            ) as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        except psycopg.Error as exc:
            raise failed(self.place, "sending a command", exc) from None

    async def close(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        if self._listener is not None:
            with contextlib.suppress(psycopg.Error):
                await self._listener.close()
        self._listener = self._reading = None
