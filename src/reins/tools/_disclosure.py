"""Progressive tool disclosure: past a threshold of tools (many MCP servers), the model is
offered the built-in tools, what it loaded, and two meta-tools — `tool_search` (keywords ->
names and one-line descriptions) and `tool_load` (names -> their schemas join the offer for
the rest of the run) — instead of every schema on every request."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import cached_property

from ..core._errors import ToolError
from ._tool import Tool, tool

SEARCH, LOAD = "tool_search", "tool_load"
SHOWN = 30
"""Names listed where the model is told what it can load."""


class Disclosure:
    """Which tools are offered when there are more than `above` of them. A deferred tool can
    still be called by name; loading it puts its schema in the offer."""

    def __init__(
        self,
        above: int,
        *,
        core: Collection[str],
        loaded: Iterable[str] = (),
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.above = above
        self.core = frozenset(core)
        """Never deferred: the built-in tools."""
        self.loaded: set[str] = set(loaded)
        self.new: list[str] = []
        """Loaded since the last `take_new` (for the log)."""
        self.deferred: dict[str, Tool] = {}
        self._changed = changed

    def split(self, tools: Sequence[Tool]) -> tuple[list[Tool], list[Tool]]:
        """(what the model is offered, what may be called) of these tools."""
        deferrable = [t for t in tools if t.name not in self.core]
        if len(tools) <= self.above or not deferrable:
            self.deferred = {}
            return list(tools), list(tools)
        self.deferred = {t.name: t for t in deferrable}
        offered = [t for t in tools if t.name in self.core or t.name in self.loaded]
        return [*offered, *self.meta], [*tools, *self.meta]

    def take_new(self) -> tuple[str, ...]:
        new, self.new = tuple(self.new), []
        return new

    def search(self, query: str, limit: int = 10) -> str:
        waiting = {n: t for n, t in self.deferred.items() if n not in self.loaded}
        if not waiting:
            return "Every tool is already in your tool list: call it directly."
        words = _words(query)
        scores = {n: _score(words, t) for n, t in waiting.items()}
        matching = sorted(
            (n for n in waiting if scores[n] > 0), key=lambda n: (-scores[n], _natural(n))
        )
        scored = matching[: max(1, limit)]
        if not scored:
            return (
                f"No tool matches {query!r}. The {len(waiting)} tools you can load include: "
                f"{_names(waiting)}. Search with other words, or load one by name."
            )
        lines = [f"- {name}: {_summary(waiting[name])}" for name in scored]
        more = len(matching) - len(scored)
        tail = f"\n({more} more match; raise `limit` to see them)" if more > 0 else ""
        return (
            "\n".join(lines)
            + tail
            + f"\nLoad the ones you need with {LOAD}(names=[...]), then call them directly."
        )

    def load(self, names: Sequence[str]) -> str:
        known = [n for n in dict.fromkeys(names) if n in self.deferred]
        unknown = [n for n in dict.fromkeys(names) if n not in self.deferred]
        fresh = [n for n in known if n not in self.loaded]
        self.loaded.update(fresh)
        self.new += fresh
        if fresh:
            self._changed()
        waiting = [n for n in self.deferred if n not in self.loaded]
        if not known:
            raise ToolError(
                f"no tool named {', '.join(map(repr, unknown)) or '(none given)'} can be "
                f"loaded; these can: {_names(waiting)} (or find one with {SEARCH})"
            )
        said = f"Loaded {', '.join(known)}: they are in your tool list now; call them directly."
        if unknown:
            said += f" Not found: {', '.join(unknown)}; tools you can load: {_names(waiting)}."
        return said

    @cached_property
    def meta(self) -> tuple[Tool, Tool]:
        """`tool_search` and `tool_load`, bound to this disclosure (made when first needed:
        most runs never defer a tool)."""

        async def search(query: str, limit: int = 10) -> str:  # in the loop: no thread
            return self.search(query, limit)

        async def load(names: list[str]) -> str:
            return self.load(names)

        return (
            dataclasses.replace(_SEARCH, fn=search),
            dataclasses.replace(_LOAD, fn=load),
        )


async def _tool_search(query: str, limit: int = 10) -> str:
    """Search the tools not in your tool list yet (from MCP servers and others) by keywords;
    returns their names and one-line descriptions. Load the ones you need with tool_load.

    Args:
        query: Words describing what the tool should do.
        limit: How many tools at most.
    """
    raise NotImplementedError  # a disclosure binds its own


async def _tool_load(names: list[str]) -> str:
    """Add tools found with tool_search to your tool list for the rest of the run, by their
    exact names; then call them directly.

    Args:
        names: The tools' exact names.
    """
    raise NotImplementedError


# Described once: a tool's argument model takes milliseconds to build, and each run's
# executor has a disclosure.
_SEARCH = tool(name=SEARCH, read_only=True, timeout=None)(_tool_search)
_LOAD = tool(name=LOAD, read_only=True, timeout=None)(_tool_load)


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 1}


def _score(words: set[str], tool: Tool) -> int:
    name = _words(tool.name)
    about = _words(tool.description)
    return sum(3 if w in name else 1 if w in about else 0 for w in words)


def _natural(name: str) -> list[str | int]:
    """`tool_5` before `tool_10`."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _summary(tool: Tool) -> str:
    line = tool.description.strip().split("\n", 1)[0]
    return line if len(line) <= 160 else line[:157] + "..."


def _names(tools: Collection[str]) -> str:
    names = sorted(tools, key=_natural)
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
