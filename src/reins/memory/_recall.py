"""Recall: the facts a run may read, as a prompt section at a session's start ("What you
remember", ranked for the goal within a token budget) and as the `memory_search` tool (with
`as_of`, what was true at a date). Each fact is shown with its age and where it came from.
Ranked by words (BM25) and, with embeddings, by meaning too (`_vectors.hybrid`).

A recall that fails is not an empty memory: the section says the memory could not be read (or
that recall by meaning failed, with the words' matches still listed), and the run is told so
as a notice."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
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
from ._vectors import Embeddings, hybrid

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


@dataclass
class RecallSection:
    """The "What you remember" part of the system prompt: the facts valid now in `scopes`,
    those that match the goal first, then the newest, within `budget` tokens. `prepare` reads
    them (off the event loop, and asks the embedder); `render` alone reads by words."""

    memories: Memories
    scopes: Sequence[tuple[Scope, str]]
    budget: int
    embeddings: Embeddings | None = None
    name: str = "memory"
    _read: tuple[list[Fact], str] | MemoryStoreError | None = field(default=None, repr=False)
    """What `prepare` found: the facts and why recall by meaning failed ("": it did not), or
    why the memory could not be read."""

    async def prepare(self, context: PromptContext) -> None:
        if not self.scopes:
            return
        try:
            matched, unmeant = await hybrid(
                self.memories, self.embeddings, context.goal, scopes=self.scopes, limit=MATCHED
            )
            current = await asyncio.to_thread(
                self.memories.current, scopes=self.scopes, limit=RECENT
            )
            self._read = (recalled(matched, current), unmeant)
        except MemoryStoreError as exc:
            self._read = exc

    def render(self, context: PromptContext) -> str:
        if not self.scopes:
            return ""
        try:
            if isinstance(self._read, MemoryStoreError):
                raise self._read
            facts, unmeant = self._read or (by_words(self.memories, context.goal, self.scopes), "")
        except MemoryStoreError as exc:
            context.notes.append(f"memory: recall failed: {exc}")
            return (
                f"{HEADER}\nYour memory of earlier sessions could not be read ({exc}): facts "
                "you were told before may be missing here."
            )
        now = datetime.now(UTC)
        lines: list[str] = []
        spent = text_tokens(HEADER + INTRO)
        if unmeant:
            context.notes.append(f"memory: recall by meaning failed: {unmeant}")
            lines.append(f"(Recall by meaning failed ({unmeant}): these match by words only.)")
            spent += text_tokens(lines[0])
        for fact in facts:
            line = f"- {fact.text} ({described(fact, now)})"
            spent += text_tokens(line)
            if spent > self.budget:
                break
            lines.append(line)
        if not facts:
            return ""
        return "\n".join([HEADER, INTRO, *lines])


def by_words(memories: Memories, goal: str, scopes: Sequence[tuple[Scope, str]]) -> list[Fact]:
    """The section's facts by words alone, read here (a section rendered unprepared)."""
    matched = memories.search(goal, scopes=scopes, limit=MATCHED)
    return recalled(matched, memories.current(scopes=scopes, limit=RECENT))


def recalled(matched: Sequence[Fact], current: Sequence[Fact]) -> list[Fact]:
    """The best matches of the goal, then the rest of the facts valid now, each part newest
    first (a small model takes the first of two that disagree)."""
    seen = {f.id for f in matched}
    recent = [f for f in current if f.id not in seen]
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


def memory_search_tool(
    memories: Memories, memory: Memory, embeddings: Embeddings | None = None
) -> Tool:
    """`memory_search`: the facts a run may read (`memory.readable`) that match a query (by
    words, and by meaning with `embeddings`), as they are now or were at a date."""

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
            facts, unmeant = await hybrid(
                memories, embeddings, query, scopes=scopes, as_of=when, limit=count
            )
        except MemoryStoreError as exc:
            raise ToolError(f"memory could not be read: {exc}") from None
        moment = f" as of {as_of}" if as_of else ""
        note = f"\n(Search by meaning failed ({unmeant}): matched by words only.)" * bool(unmeant)
        if not facts:
            return f"No remembered fact matches {query!r}{moment}.{note}"
        now = datetime.now(UTC)
        lines = [f"- {f.text} ({described(f, now, as_of=when)})" for f in facts]
        return f"Remembered{moment}:\n" + "\n".join(lines) + note

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
