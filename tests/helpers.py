"""Small builders shared by the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reins import AssistantMessage, ToolCall
from reins.core._paths import log_key_path
from reins.events import EVENT, Event
from reins.store import IndexedLog, open_log
from reins.store._chain import load_key, opened


def call(tool_name: str, call_id: str | None = None, /, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id or f"id_{tool_name}", name=tool_name, arguments=arguments)


def reply(text: str = "", *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(text=text, tool_calls=calls)


def journal_events(data: bytes) -> list[Event]:
    """The events on a journal's lines (each line's MAC taken off)."""
    return [EVENT.validate_json(opened(line)[0]) for line in data.splitlines()]


def sign_again(journal: Path) -> None:
    """Sign a journal edited by a test with the user's key, as a reins that wrote it so
    would have (a test of what the fold makes of such a log, not of the chain)."""
    chain = load_key(log_key_path())
    assert chain is not None
    bodies = [opened(line)[0] for line in journal.read_bytes().splitlines()]
    journal.write_bytes(chain.seal(chain.genesis(journal.stem), bodies)[0])


@dataclass(frozen=True)
class Backend:
    """A store of one kind (`address`: its folder, or its PostgreSQL URL), and the logs opened
    on it, each as another process would open it."""

    kind: Literal["sqlite", "postgres"]
    address: str

    def open(self) -> IndexedLog:
        return open_log(self.address if self.kind == "postgres" else Path(self.address))
