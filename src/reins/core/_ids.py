"""Session and run ids: two forms that cannot be confused, and their shortest unique prefixes.

A session id is `s` and 20 random hex digits, a run id `r` and 20: the letter says which it is,
and no prefix of one is a prefix of the other. Random digits first (not a time stamp, as before)
keep the prefix that tells two ids apart short, as git's hashes do. Logs written before hold
ids of 21 hex digits (11 of milliseconds, then 10 random); those still resolve by prefix.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Iterable, Sequence

SESSION, RUN = "s", "r"
MIN_SHOWN = 7
"""The fewest characters of an id shown (git's default): unique among a few thousand ids."""


def new_session_id() -> str:
    return _new(SESSION)


def new_run_id() -> str:
    return _new(RUN)


def _new(kind: str) -> str:
    # `random`, not `secrets`: ids need not be secret, and it is reseeded in a forked child.
    # 80 bits: a billion ids in one log collide with a chance of one in two million.
    return f"{kind}{random.getrandbits(80):020x}"


def shortest_prefixes(ids: Iterable[str], *, least: int = MIN_SHOWN) -> dict[str, str]:
    """Each id's shortest prefix (at least `least` characters) that no other id starts with,
    as git abbreviates hashes. Give every id a user could type (sessions and runs together),
    so that a prefix shown names one thing whatever command it is given to."""
    ordered = sorted(set(ids))
    return {id_: shortest_prefix(id_, ordered, least=least) for id_ in ordered}


def shortest_prefix(id_: str, ordered: Sequence[str], *, least: int = MIN_SHOWN) -> str:
    """The shortest prefix of `id_` (at least `least` characters) that no other id of the
    sorted `ordered` starts with (`id_` need not be among them)."""
    # In sorted order the ids sharing most of a prefix with this one are its neighbours.
    i = bisect_left(ordered, id_)
    near = (ordered[j] for j in (i - 1, i, i + 1) if 0 <= j < len(ordered))
    common = max((_common(id_, other) for other in near if other != id_), default=0)
    return id_[: max(least, common + 1)]


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
