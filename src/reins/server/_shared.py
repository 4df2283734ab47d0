"""Commands to runs that another server on the same PostgreSQL store runs, and the leases
by which each server holds the runs it runs.

Servers on one PostgreSQL store see the same runs: one runs each (it holds the session's lock
in the store, and the run's lease, which it renews), and any can be asked to stop or steer it.
A server asked about a run it does not run, which another process writes now, sends the
command over the store's channel (`NOTIFY`); the server that runs it listens, and hands the
command to its run. A command to a run that ends meanwhile is dropped, as a steer or a stop
after a run's end is here. A server watching such a run reads only its rows past the last it
passed on, at each look.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..store import IndexedLog

Do = Literal["stop", "steer"]


@dataclass(frozen=True)
class Command:
    """What a server asks the one that runs `run_id` to do."""

    run_id: str
    do: Do
    text: str = ""


class Shared:
    """The command channel of a PostgreSQL store, and its reads of a run's new rows, as a
    server uses them."""

    def __init__(self, log: IndexedLog, lease: float) -> None:
        from ..store._pg_notify import Channel
        from ..store._postgres import PostgresLog

        assert isinstance(log, PostgresLog)
        self._channel = Channel(log.address)
        self.events_after = log.events_after
        """A run's events past a seq: what a server reads of a run another one writes."""
        self.writing = log.writing_now
        """Whether a process writes a session now (the log's `writing`, not blocking)."""
        self.leases = log.leases(server_name(), lease)
        """The runs this server runs, held for `lease` seconds past each heartbeat."""

    async def listen(self, apply: Callable[[Command], object]) -> None:
        """Hand each command sent from now on to `apply` (listening already, this does
        nothing; a listener whose connection was lost connects again)."""

        def receive(message: dict[str, Any]) -> None:
            run_id, do, text = message.get("run_id"), message.get("do"), message.get("text", "")
            if isinstance(run_id, str) and do in ("stop", "steer") and isinstance(text, str):
                apply(Command(run_id, do, text))

        await self._channel.listen(receive)

    async def send(self, command: Command) -> None:
        await self._channel.send({"run_id": command.run_id, "do": command.do, "text": command.text})

    async def close(self) -> None:
        await self._channel.close()


def shared(log: IndexedLog, lease: float) -> Shared | None:
    """The channel and leases of `log`'s store if other servers may share it (PostgreSQL),
    else none."""
    try:
        from ..store._postgres import PostgresLog
    except ImportError:  # no reins[postgres]: no such store either
        return None
    return Shared(log, lease) if isinstance(log, PostgresLog) else None


def server_name() -> str:
    """This server among those of a store: its host and process, and a nonce (a pid is
    reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
