"""Recall: the facts a run may read, as a prompt section at a session's start ("What you
remember", ranked for the goal within a token budget) and as the `memory_search` tool (with
`as_of`, what was true at a date). Each fact is shown with its age and where it came from.

A recall that fails is not an empty memory: the section says the memory could not be read,
and the run is told so as a notice."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ..context._instructions import project_root
from ..context._sections import PromptContext
from ..context._tokens import text_tokens
from ..core._errors import ToolError
from ..tools import Tool, ToolContext, tool
from ._errors import MemoryStoreError
from ._fact import Fact, Scope
from ._memories import Memories
from ._settings import Memory

HEADER = "## What you remember"
INTRO = (
    "Facts kept from earlier sessions, newest first, each with its age and where it came "
    "from. They were true when noted: where two disagree, the newer holds, and what the user "
    "or the files say now comes first. memory_search finds more."
)
MATCHED, RECENT = 12, 24
"""The facts read for the section: those that best match the goal, then the newest (its
budget, 400 tokens, holds about 20)."""
MEMORY_SEARCH = "memory_search"


@dataclass(frozen=True)
class RecallSection:
    """The "What you remember" part of the system prompt: the facts valid now in `scopes`,
    those that match the goal first, then the newest, within `budget` tokens."""

    memories: Memories
    scopes: Sequence[tuple[Scope, str]]
    budget: int
    name: str = "memory"

    def render(self, context: PromptContext) -> str:
        if not self.scopes:
            return ""
        try:
            facts = recalled(self.memories, context.goal, self.scopes)
        except MemoryStoreError as exc:
            context.notes.append(f"memory: recall failed: {exc}")
            return (
                f"{HEADER}\nYour memory of earlier sessions could not be read ({exc}): facts "
                "you were told before may be missing here."
            )
        now = datetime.now(UTC)
        lines: list[str] = []
        spent = text_tokens(HEADER + INTRO)
        for fact in facts:
            line = f"- {fact.text} ({described(fact, now)})"
            spent += text_tokens(line)
            if spent > self.budget:
                break
            lines.append(line)
        if not lines:
            return ""
        return "\n".join([HEADER, INTRO, *lines])


def recalled(memories: Memories, goal: str, scopes: Sequence[tuple[Scope, str]]) -> list[Fact]:
    """The facts valid now in `scopes`: the best matches of `goal`, then the rest, each part
    newest first (a small model takes the first of two that disagree)."""
    matched = memories.search(goal, scopes=scopes, limit=MATCHED)
    seen = {f.id for f in matched}
    recent = [f for f in memories.current(scopes=scopes, limit=RECENT) if f.id not in seen]
    return [*sorted(matched, key=lambda f: f.valid_at, reverse=True), *recent]


def described(fact: Fact, now: datetime, *, as_of: datetime | None = None) -> str:
    """Where a fact came from and how old it is: `project, 3 days ago, session 1a2b3c4d`."""
    parts = [fact.scope, _age(now - fact.valid_at)]
    if fact.session_id:
        parts.append(f"session {fact.session_id[-8:]}")
    else:
        parts.append("added by the user")
    if as_of is not None and fact.invalid_at is not None:
        parts.append(f"true until {fact.invalid_at:%Y-%m-%d %H:%M}")
    return ", ".join(parts)


UNITS = (
    ("year", 31_536_000),
    ("month", 2_592_000),
    ("day", 86_400),
    ("hour", 3600),
    ("minute", 60),
)


def _age(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in UNITS:
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"


def memory_search_tool(memories: Memories, memory: Memory) -> Tool:
    """`memory_search`: the facts a run may read (`memory.readable`) that match a query, as
    they are now or were at a date."""

    @tool(name=MEMORY_SEARCH, read_only=True, timeout=30.0)
    async def memory_search(
        ctx: ToolContext, query: str, as_of: str | None = None, limit: int = 10
    ) -> str:
        """Search the facts remembered from earlier sessions.

        Args:
            query: Words the facts should contain, such as `test command` or `editor`.
            as_of: A date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM) to get what was true then;
                omit it for what is true now.
            limit: How many facts at most (1 to 50).
        """
        when = _moment(as_of) if as_of else None
        count = min(max(limit, 1), 50)
        scopes = memory.readable(str(project_root(ctx.workspace.root)), ctx.session_id)
        try:
            facts = await asyncio.to_thread(
                memories.search, query, scopes=scopes, as_of=when, limit=count
            )
        except MemoryStoreError as exc:
            raise ToolError(f"memory could not be read: {exc}") from None
        moment = f" as of {as_of}" if as_of else ""
        if not facts:
            return f"No remembered fact matches {query!r}{moment}."
        now = datetime.now(UTC)
        lines = [f"- {f.text} ({described(f, now, as_of=when)})" for f in facts]
        return f"Remembered{moment}:\n" + "\n".join(lines)

    return memory_search


def _moment(text: str) -> datetime:
    """A date or time the model gave, in UTC (a date: its end, so what was true that day)."""
    value = text.strip()
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), time.max, tzinfo=UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"as_of={text!r} is not a date: write it as YYYY-MM-DD or YYYY-MM-DDTHH:MM"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
