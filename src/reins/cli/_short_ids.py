"""The ids a command prints: each run's and session's shortest unique prefix in the log it
opened, as git shows hashes. Any unique prefix is taken back by every command."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core._ids import shortest_prefix

if TYPE_CHECKING:  # --help stays fast
    from ..store import RunInfo


class ShortIds:
    """Shortens ids against those of the log the command opened (`know`); an id made since
    (a new run's) is shortened against them too."""

    def __init__(self) -> None:
        self._ordered: list[str] = []

    def know(self, runs: Iterable[RunInfo]) -> None:
        ids = {i for r in runs for i in (r.run_id, r.session_id)}
        self._ordered = sorted(ids.union(self._ordered))

    def __call__(self, id_: str) -> str:
        return shortest_prefix(id_, self._ordered)

    def within(self, text: str) -> str:
        """`text` (an error, a warning) with each id of the log it names shortened; an id
        inside a path (`sessions/<id>.jsonl`) stays whole, as the file is named."""

        def shorten(found: re.Match[str]) -> str:
            id_ = found.group(0)
            i = bisect_left(self._ordered, id_)
            known = i < len(self._ordered) and self._ordered[i] == id_
            return self(id_) if known else id_

        return _AN_ID.sub(shorten, text)


_AN_ID = re.compile(r"(?<![\w/\\.-])(?:[rs][0-9a-f]{20}|[0-9a-f]{21})(?![\w/\\.-])")
"""A new id (`r`/`s` and 20 hex digits) or an old one (21), not part of a longer word or path."""


short = ShortIds()
"""This command's: `_execute` has it know the log's ids when it opens the log."""
