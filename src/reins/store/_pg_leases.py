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

from collections.abc import Awaitable, Callable
from typing import Any

from ._pg_locks import COUNT, lock_key

Query = Callable[..., Awaitable[list[tuple[Any, ...]]]]
"""The log's query: (sql, *params, doing=what it is for) -> rows."""

UNLOCKED = COUNT.replace("count(*)", "1").replace("= ANY(%s)", "= l.lock_key")
"""Rows (one) if someone holds the lock of lease `l`'s session."""

CLAIM = f"""
UPDATE reins_leases SET owner = %s, expires = now() + make_interval(secs => %s)
WHERE run_id IN (
    SELECT l.run_id FROM reins_leases l
    WHERE l.expires < now() AND NOT EXISTS ({UNLOCKED})
    FOR UPDATE OF l SKIP LOCKED
) AND expires < now()
RETURNING run_id
"""
"""Take over the expired leases of sessions nobody writes: the runs claimed."""


class Leases:
    """The leases one server (`owner`) holds, each good for `seconds` past its last renewal."""

    def __init__(self, query: Query, owner: str, seconds: float) -> None:
        self._query = query
        self.owner = owner
        self.seconds = seconds

    async def take(self, run_id: str, session_id: str) -> None:
        """Hold the run's lease from now (taken from whoever held it: this server runs it)."""
        await self._query(
            "INSERT INTO reins_leases (run_id, session_id, lock_key, owner, expires) "
            "VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s)) "
            "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
            run_id,
            session_id,
            lock_key(session_id),
            self.owner,
            self.seconds,
            doing=f"taking the lease of run {run_id}",
        )

    async def drop(self, run_id: str) -> None:
        """Give up the run's lease (if this server holds it): nobody is to go on with it."""
        await self._query(
            "DELETE FROM reins_leases WHERE run_id = %s AND owner = %s",
            run_id,
            self.owner,
            doing=f"giving up the lease of run {run_id}",
        )

    async def hand_over(self, run_id: str) -> None:
        """Let the run's lease expire now (if this server holds it): the next server to look
        takes the run over."""
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
