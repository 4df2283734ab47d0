"""The bytes an event is recorded as, by every log on disk or in a database: its JSON, as its
typed model serializes it (a SQLite journal line is these bytes and a MAC field; a PostgreSQL
row holds them as they are)."""

from __future__ import annotations

import logging

from pydantic_core import PydanticSerializationError

from ..core._errors import StoreError
from ..core._events import Event
from ..core._unicode import NOTE, escape_model

log = logging.getLogger("reins.store")


def serialized(events: list[Event]) -> tuple[list[Event], list[bytes]]:
    """The events as recorded (text that JSON cannot carry escaped, said so) and their JSON.
    Raises what the serializer raises for an event that cannot be recorded at all (see
    `unrecordable`)."""
    try:
        return events, [e.__pydantic_serializer__.to_json(e) for e in events]
    except PydanticSerializationError:  # text JSON cannot hold: the rare path
        events = [escaped(e) for e in events]
        return events, [e.__pydantic_serializer__.to_json(e) for e in events]


def escaped(event: Event) -> Event:
    """The event with the text that JSON cannot carry (a lone surrogate) escaped, said so."""
    done = escape_model(event)
    if done is not event:
        log.warning("run %s, event %d: %s", event.run_id, event.seq, NOTE)
    return done


def culprit(events: list[Event], exc: Exception) -> Event:
    """The event that could not be serialized (for a failed write: the first)."""
    if isinstance(exc, OSError):
        return events[0]
    for event in events:
        try:
            done = escaped(event)
            done.__pydantic_serializer__.to_json(done)
        except (ValueError, RecursionError):
            return event
    return events[0]


def unrecordable(exc: ValueError | RecursionError, events: list[Event]) -> StoreError:
    """Why the batch `events` was not recorded: one of them cannot be serialized."""
    event = culprit(events, exc)
    return StoreError(
        f"run {event.run_id}: event {event.seq} ({event.kind}) cannot be recorded "
        f"({str(exc).removeprefix('Error serializing to JSON: ')}); nothing of it was written"
    )
