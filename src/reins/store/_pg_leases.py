"""Which server runs a run of a PostgreSQL store: the one holding its lease, renewed by a
heartbeat. A server that dies stops renewing; once its leases expire, another server claims
them and resumes the runs (`reins.server`).

The lease says who should go on with a run; the session's advisory lock (`_pg_locks`) still
says who may write it. So a lease is claimed only once it has expired *and* no process holds its
session's lock: a server that is alive but slow to renew (its event loop blocked) keeps its run,
as a `reins resume` in a terminal that took the session first keeps it. A process killed loses
its lock at once; a machine cut off loses it when PostgreSQL gives up on its connection (the lock
connection asks for TCP keepalives: `_pg_locks`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..core._errors import StoreError
from ._pg_locks import COUNT, lock_key

log = logging.getLogger("reins.store")

Query = Callable[..., Awaitable[list[tuple[Any, ...]]]]
"""The log's query: (sql, *params, doing=what it is for) -> rows."""

HELD = COUNT.replace("count(*)", "1").replace("= ANY(%s)", "= l.lock_key")
"""Rows (one) if someone holds the lock of lease `l`'s session."""

CLAIM = f"""
UPDATE reins_leases SET owner = %s, expires = now() + make_interval(secs => %s)
WHERE run_id IN (
    SELECT l.run_id FROM reins_leases l
    WHERE l.expires < now() AND NOT EXISTS ({HELD})
    FOR UPDATE OF l SKIP LOCKED
) AND expires < now()
RETURNING run_id
"""
"""Take over the expired leases of sessions nobody writes: the runs claimed."""
TAKE = """
INSERT INTO reins_leases (run_id, session_id, lock_key, owner, expires)
SELECT run_id, session_id, lock_key, %s, now() + make_interval(secs => %s)
FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS taken (run_id, session_id, lock_key)
ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
"""


class Leases:
    """The leases one server (`owner`) holds, each good for `seconds` past its last renewal.

    Leases taken and given up are written by one task, all those of a moment in one statement:
    a server starting a thousand runs at once writes a few statements, not a thousand, and no
    run waits for its lease to start."""

    def __init__(self, query: Query, owner: str, seconds: float) -> None:
        self._query = query
        self.owner = owner
        self.seconds = seconds
        self._taking: dict[str, str] = {}
        """Runs (and their sessions) whose lease is to be written."""
        self._dropping: set[str] = set()
        """Runs whose lease is to be given up."""
        self._writing: asyncio.Task[None] | None = None

    def take(self, run_id: str, session_id: str) -> None:
        """Hold the run's lease from now (taken from whoever held it: this server runs it)."""
        self._dropping.discard(run_id)
        self._taking[run_id] = session_id
        self._write_soon()

    def drop(self, run_id: str) -> None:
        """Give up the run's lease (if this server holds it): nobody is to go on with it."""
        self._taking.pop(run_id, None)
        self._dropping.add(run_id)
        self._write_soon()

    def _write_soon(self) -> None:
        if self._writing is None or self._writing.done():
            self._writing = asyncio.get_running_loop().create_task(self._write())

    async def flush(self) -> None:
        """Wait until the leases taken and given up so far are written (a failure is logged:
        only those runs' takeover by another server is lost)."""
        if self._taking or self._dropping:
            self._write_soon()
        if self._writing is not None:
            await self._writing

    async def _write(self) -> None:
        try:
            while self._taking or self._dropping:
                taking, self._taking = self._taking, {}
                dropping, self._dropping = self._dropping, set()
                if taking:
                    sessions = list(taking.values())
                    keys = [lock_key(s) for s in sessions]
                    await self._query(
                        TAKE,
                        self.owner,
                        self.seconds,
                        list(taking),
                        sessions,
                        keys,
                        doing="taking the leases of the runs it runs",
                    )
                if dropping:
                    await self._query(
                        "DELETE FROM reins_leases WHERE run_id = ANY(%s) AND owner = %s",
                        list(dropping),
                        self.owner,
                        doing="giving up the leases of runs ended",
                    )
        except StoreError as exc:  # the runs go on; only their takeover by another is lost
            log.warning("%s", exc)

    async def hand_over(self, run_id: str) -> None:
        """Let the run's lease expire now (if this server holds it): the next server to look
        takes the run over."""
        await self.flush()
        await self._query(
            "UPDATE reins_leases SET expires = now() WHERE run_id = %s AND owner = %s",
            run_id,
            self.owner,
            doing=f"handing over run {run_id}",
        )

    async def renew(self) -> None:
        """The heartbeat: every lease this server holds is good for `seconds` more."""
        await self._query(
            "UPDATE reins_leases SET expires = now() + make_interval(secs => %s) WHERE owner = %s",
            self.seconds,
            self.owner,
            doing="renewing its leases",
        )

    async def claim_orphans(self) -> list[str]:
        """Take the leases whose server stopped renewing them and whose session nobody writes:
        the runs this server is now to resume."""
        rows = await self._query(
            CLAIM, self.owner, self.seconds, doing="taking over the runs of a server gone"
        )
        return sorted(str(run_id) for (run_id,) in rows)

    async def leased(self, run_id: str) -> bool:
        """Whether some server holds (or held, and nobody has claimed yet) the run's lease."""
        rows = await self._query(
            "SELECT 1 FROM reins_leases WHERE run_id = %s", run_id, doing="reading a lease"
        )
        return bool(rows)
