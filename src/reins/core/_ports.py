"""What the loop is handed and calls, as protocols: the context it fits each request into, the
tools it runs, and a trace of its events. The implementations live in the layers above
(`reins.context.ContextBuilder`, `reins.tools.ToolExecutor`, `reins.tracing.RunSpans`); the
core knows only these, so nothing it imports points up.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from ._approval import Ruling
from ._events import Event
from ._messages import Message, ToolCall, ToolResultMessage, ToolSpec
from ._state import RunState


class ContextKeeper(Protocol):
    """Fits the run's history into the model's window, and compacts it when due."""

    def tokens(self, state: RunState) -> int: ...
    def measure(self, state: RunState) -> tuple[list[Message], int]: ...
    def estimated(self, state: RunState) -> int | None: ...
    def due(self, tokens: int, max_output: int | None) -> bool: ...
    def check(self, tokens: int, max_output: int | None) -> None: ...
    def output_cap(self, tokens: int, max_output: int | None) -> int | None: ...
    async def compact(self, state: RunState, *, forced: bool = False) -> dict[str, Any] | None: ...


class OfferedTool(Protocol):
    """Of a tool, what the loop itself reads (it answers `ask_user` and shows commands)."""

    @property
    def command_arg(self) -> str | None: ...
    def validate(self, arguments: dict[str, Any]) -> BaseModel: ...


@dataclass(frozen=True)
class ToolChange:
    """What a refresh changed: tools gained and lost, and what the sources had to say."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    """Offered before and now, described anew."""
    loaded: tuple[str, ...] = ()
    """Deferred tools the model loaded (`tool_load`) since the last refresh."""
    notes: tuple[str, ...] = ()
    """What the sources had to say."""


class ToolRunner(Protocol):
    """Judges and runs the model's tool calls; offers the tools' specs."""

    @property
    def specs(self) -> list[ToolSpec]: ...
    @property
    def tools(self) -> Mapping[str, OfferedTool]: ...
    @property
    def max_parallel(self) -> int: ...
    @property
    def refresh_due(self) -> bool: ...
    async def refresh(self) -> ToolChange | None: ...
    def is_read_only(self, name: str) -> bool: ...
    def changes_workspace(self, name: str) -> bool: ...
    def needs_scope(self, name: str) -> bool: ...
    def judge(self, call: ToolCall, grants: Set[str]) -> Ruling | None: ...
    async def execute(self, call: ToolCall, scope: object = None) -> ToolResultMessage: ...
    def take_diff(self, call_id: str) -> str | None: ...
    def close(self) -> None: ...


class Snapshots(Protocol):
    """Keeps the workspace's files as they are now, as a commit that can be put back
    (`reins.checkpoints.Shadow`); `ref` chains a run's commits."""

    async def snapshot(self, ref: str, message: str = "") -> str: ...


class Remembers(Protocol):
    """Reads a run's messages from `state.remembered` on for facts worth keeping across
    sessions, and changes the facts kept (`reins.memory`): the fields of the
    `memory_updated` to record, or None when there is nothing new to read. Raises if it
    failed: the messages stay unread, for the next capture."""

    async def capture(self, state: RunState, *, trigger: str) -> dict[str, Any] | None: ...


class Trace(Protocol):
    """Sees every event the run records (OpenTelemetry spans, when traced)."""

    def on(self, event: Event) -> None: ...
    def close(self) -> None: ...
