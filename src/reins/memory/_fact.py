"""A fact an agent keeps, as one version: its text, whose it is, where it came from, and its
two spans of time (when it was true in the world, when the system held it to be), with the
checks a fact must pass to be stored, and its JSON for `reins memory export` and `import`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from ..core._errors import UsageError
from ._errors import FactError

Scope = Literal["user", "project", "session"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
"""Whose a fact is: the user's everywhere (owner ""), a project's (owner: its root path), a
session's (owner: the session id)."""
ID = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True, kw_only=True)
class Fact:
    """One version of something an agent keeps; a change makes a new version (`supersedes`)."""

    id: str
    """12 hex digits, random."""
    text: str
    scope: Scope
    owner: str
    """Whose: "" for the user, the project's root path, or the session id."""
    session_id: str | None
    run_id: str | None
    seq: int | None
    """The event that recorded it."""
    created_at: datetime
    """When the store got it (UTC)."""
    valid_at: datetime
    """When it became true in the world."""
    invalid_at: datetime | None
    """When it stopped being true in the world."""
    expired_at: datetime | None
    """When the store learned that it stopped."""
    supersedes: str | None
    """The id of the version this one replaced."""
    reason: str = ""
    """Why it was added, one short line."""
    closed_reason: str = ""
    """Why it was closed."""

    def valid(self, at: datetime | None = None) -> bool:
        """True in the world at `at` (default: now)."""
        when = utc(at) if at is not None else datetime.now(UTC)
        return self.valid_at <= when and (self.invalid_at is None or self.invalid_at > when)

    def to_json(self) -> dict[str, Any]:
        """The fact as JSON values (times in ISO 8601), for export."""
        return {
            "id": self.id,
            "text": self.text,
            "scope": self.scope,
            "owner": self.owner,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "seq": self.seq,
            "created_at": stamp(self.created_at),
            "valid_at": stamp(self.valid_at),
            "invalid_at": stamp(self.invalid_at) if self.invalid_at is not None else None,
            "expired_at": stamp(self.expired_at) if self.expired_at is not None else None,
            "supersedes": self.supersedes,
            "reason": self.reason,
            "closed_reason": self.closed_reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fact:
        """The fact `to_json` gave (an import); `FactError` says what is wrong with one that
        is not."""
        if not isinstance(data, Mapping):
            raise FactError(f"a fact is a JSON object, not {type(data).__name__}")
        name = data.get("id", "?")

        def get(key: str, kind: type, *, optional: bool = False) -> Any:
            value = data.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, kind) or isinstance(value, bool):
                raise FactError(f"fact {name}: {key!r} must be a {kind.__name__}, not {value!r}")
            return value

        def time(key: str) -> datetime:
            value = get(key, str)
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                raise FactError(
                    f"fact {name}: {key!r} is not an ISO 8601 time: {value!r}"
                ) from None
            if parsed.tzinfo is None:
                raise FactError(f"fact {name}: {key!r} has no time zone: {value!r}")
            return parsed.astimezone(UTC)

        fact = cls(
            id=get("id", str),
            text=get("text", str),
            scope=get("scope", str),
            owner=get("owner", str),
            session_id=get("session_id", str, optional=True),
            run_id=get("run_id", str, optional=True),
            seq=get("seq", int, optional=True),
            created_at=time("created_at"),
            valid_at=time("valid_at"),
            invalid_at=None if data.get("invalid_at") is None else time("invalid_at"),
            expired_at=None if data.get("expired_at") is None else time("expired_at"),
            supersedes=get("supersedes", str, optional=True),
            reason=get("reason", str, optional=True) or "",
            closed_reason=get("closed_reason", str, optional=True) or "",
        )
        check(fact)
        return fact


def check(fact: Fact) -> None:
    """A fact well formed enough to store (FactError, or UsageError for a bad scope)."""
    check_scope(fact.scope)
    if not ID.fullmatch(fact.id):
        raise FactError(f"a fact's id is 12 hex digits, not {fact.id!r}")
    if fact.scope == "user" and fact.owner:
        raise UsageError(f"a user fact has no owner (''), not {fact.owner!r}")
    if fact.scope != "user" and not fact.owner:
        raise UsageError(f"a {fact.scope} fact needs its owner (the {_OWNERS[fact.scope]})")
    if not fact.text.strip():
        raise FactError(f"fact {fact.id} has no text")
    for name in ("created_at", "valid_at", "invalid_at", "expired_at"):
        value = getattr(fact, name)
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise FactError(f"fact {fact.id}: {name} must be a time with a time zone")
    if fact.invalid_at is not None and fact.invalid_at < fact.valid_at:
        raise FactError(f"fact {fact.id} stops being true (invalid_at) before it starts")


_OWNERS = {"project": "project's root path", "session": "session id"}


def check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise UsageError(f"scope {scope!r}: use one of {', '.join(SCOPES)}")


def fact_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise FactError("a fact needs some text")
    return text


def one_line(reason: str) -> str:
    return " ".join(reason.split())


def utc(when: datetime) -> datetime:
    if when.tzinfo is None:
        raise UsageError(f"{when.isoformat()} has no time zone: give an aware datetime (UTC)")
    return when.astimezone(UTC)


def stamp(when: datetime) -> str:
    return utc(when).isoformat(timespec="microseconds")
