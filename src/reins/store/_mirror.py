"""The JSONL mirror: one append-only file of events per session, for humans and `jq`.

SQLite is the source of truth; a line is written only after its event is committed there. So a
crash can leave the mirror behind the database (caught up on the next open) or end it in a
partial line (the file is moved aside, kept, and rebuilt from the database).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from .._errors import LogCorrupted

log = logging.getLogger("reins.store")

TAIL_BYTES = 1 << 16


class Mirror:
    """Appends serialized events to `<dir>/<session_id>.jsonl`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._files: dict[str, IO[bytes]] = {}

    def path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.jsonl"

    def write(
        self,
        session_id: str,
        lines: list[bytes],
        committed: Callable[[tuple[str, int] | None], list[bytes]],
    ) -> None:
        """Append the lines of a just-committed batch. On the session's first write in this
        process the file's tail is checked first, and `committed(last)` (every event committed
        after the file's last (run_id, seq), this batch included) is written instead."""
        out = self._files.get(session_id)
        if out is None:
            out, last = self._open(session_id)
            caught_up = committed(last)
            if len(caught_up) > len(lines):
                behind = len(caught_up) - len(lines)
                log.warning("%s was %d events behind the database; caught up", out.name, behind)
            lines = caught_up
        out.write(b"".join(lines))
        out.flush()

    def _open(self, session_id: str) -> tuple[IO[bytes], tuple[str, int] | None]:
        path = self.path(session_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            last = last_event_key(path)
        except LogCorrupted as exc:
            aside = path.with_name(f"{path.name}.corrupt-{datetime.now(UTC):%Y%m%dT%H%M%S%f}")
            os.replace(path, aside)
            log.warning("%s; kept it as %s and rebuilt the mirror from the database", exc, aside)
            last = None
        out = path.open("ab")
        self._files[session_id] = out
        return out, last

    def close(self) -> None:
        for out in self._files.values():
            out.close()
        self._files.clear()


def last_event_key(path: Path) -> tuple[str, int] | None:
    """(run_id, seq) of the file's last event, None for a missing or empty file, or
    LogCorrupted if the tail is a partial or unreadable line."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with path.open("rb") as f:
        f.seek(max(0, size - TAIL_BYTES))
        tail = f.read()
    if not tail.endswith(b"\n"):
        raise LogCorrupted(f"{path} ends in a partial line (a write was cut off)")
    line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        record = json.loads(line)
        return str(record["run_id"]), int(record["seq"])
    except (ValueError, KeyError, TypeError):
        raise LogCorrupted(f"{path}: its last line is not a reins event") from None
