"""The facts kept, as one: the user's (in the user's data folder, so they reach every project)
and the projects' and sessions' (in the store's folder, beside the log)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

from ..core._paths import data_home
from ._errors import FactError
from ._fact import Fact, Scope
from ._facts import FactStore

FILE = "memory.db"


def user_facts() -> Path:
    """Where the user's facts are kept: `memory.db` in the user's data folder."""
    return data_home() / FILE


class Memories:
    """The facts of every scope: the user's from `user`, the others from `local`."""

    def __init__(self, local: Path, user: Path | None = None, *, timeout: float = 5.0) -> None:
        user = user or user_facts()
        self.local = FactStore(local, timeout=timeout)
        same = os.path.realpath(local) == os.path.realpath(user)
        self.user = self.local if same else FactStore(user, timeout=timeout)

    def exist(self) -> bool:
        """Whether any fact was ever kept (its file is there): reading makes none."""
        return any(s.path.exists() for s in self._files())

    def store_of(self, scope: Scope) -> FactStore:
        return self.user if scope == "user" else self.local

    def _split(self, scopes: Sequence[tuple[Scope, str]]) -> list[tuple[FactStore, list[Any]]]:
        mine = [s for s in scopes if s[0] == "user"]
        rest = [s for s in scopes if s[0] != "user"]
        if self.user is self.local:
            return [(self.local, [*mine, *rest])] if scopes else []
        return [(store, part) for store, part in ((self.user, mine), (self.local, rest)) if part]

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> list[Fact]:
        """The facts of `scopes` valid at `as_of` that best match `query`, the best of each
        file taken in turn."""
        found = [
            s.search(query, scopes=part, as_of=as_of, limit=limit)
            for s, part in self._split(scopes)
        ]
        merged = [f for f in chain.from_iterable(zip_longest(*found)) if f is not None]
        return merged[:limit]

    def current(
        self,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int | None = None,
    ) -> list[Fact]:
        """The facts of `scopes` valid at `as_of` (None: now), newest first."""
        found = chain.from_iterable(
            s.current(scopes=part, as_of=as_of, limit=limit) for s, part in self._split(scopes)
        )
        return sorted(found, key=lambda f: f.valid_at, reverse=True)[:limit]

    def unembedded(
        self, model: str, *, scopes: Sequence[tuple[Scope, str]], limit: int
    ) -> list[tuple[str, str]]:
        """(id, text) of the facts of `scopes` with no vector of `model` yet."""
        found = chain.from_iterable(
            s.unembedded(model, scopes=part, limit=limit) for s, part in self._split(scopes)
        )
        return list(found)[:limit]

    def put_vectors(self, model: str, rows: Sequence[tuple[str, bytes]]) -> None:
        """Keep these facts' (by id) vectors of `model`, each in the file that has the fact."""
        for store in self._files():
            if store.path.exists():  # a fact is there: none is made
                store.put_vectors(model, rows)

    def nearest(
        self,
        vector: bytes,
        model: str,
        *,
        scopes: Sequence[tuple[Scope, str]],
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> list[Fact]:
        """The facts of `scopes` valid at `as_of` nearest `vector` in meaning, nearest first."""
        found = chain.from_iterable(
            s.nearest(vector, model, scopes=part, as_of=as_of, limit=limit)
            for s, part in self._split(scopes)
        )
        return [fact for _, fact in sorted(found, key=lambda pair: -pair[0])][:limit]

    def add(self, text: str, *, scope: Scope, owner: str, **source: Any) -> Fact:
        return self.store_of(scope).add(text, scope=scope, owner=owner, **source)

    def replace(self, old: Fact, text: str, **source: Any) -> tuple[Fact, Fact]:
        return self.store_of(old.scope).replace(old.id, text, **source)

    def close(self, old: Fact, *, invalid_at: datetime, reason: str = "") -> Fact:
        return self.store_of(old.scope).close(old.id, invalid_at=invalid_at, reason=reason)

    def get(self, fact_id: str) -> Fact | None:
        """The fact whose id is or begins with `fact_id`, in either file."""
        found = [f for f in (s.get(fact_id) for s in self._files()) if f is not None]
        if len(found) > 1:
            ids = ", ".join(f.id for f in found)
            raise FactError(f"{fact_id!r} begins several facts' ids ({ids}): give more of it")
        return found[0] if found else None

    def history(self, fact: Fact) -> list[Fact]:
        return self.store_of(fact.scope).history(fact.id)

    def all(self, *, scopes: Sequence[tuple[Scope, str]] | None = None) -> list[Fact]:
        """Every fact, closed ones too, oldest first (of `scopes`, if given)."""
        if scopes is None:
            found: Iterable[Fact] = chain.from_iterable(s.all() for s in self._files())
        else:
            found = chain.from_iterable(s.all(scopes=part) for s, part in self._split(scopes))
        return sorted(found, key=lambda f: f.created_at)

    def forget(self, facts: Sequence[Fact]) -> int:
        """Delete these facts for real (and from the search index)."""
        return sum(
            store.forget([f.id for f in facts if self.store_of(f.scope) is store])
            for store in self._files()
        )

    def put(self, fact: Fact) -> bool:
        return self.store_of(fact.scope).put(fact)

    def _files(self) -> list[FactStore]:
        return [self.local] if self.user is self.local else [self.user, self.local]
