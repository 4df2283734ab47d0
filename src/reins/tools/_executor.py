"""The one place tools are executed: validate -> lock paths -> run with timeout -> shape
(a result over `max_output_chars` is spilled to a file, or cut)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence, Set
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..core._errors import ToolError, UsageError
from ..core._media import Document, Image
from ..core._messages import ToolCall, ToolResultMessage, ToolSpec
from ..core._ports import ToolChange
from ._builtin import BUILTIN_TOOLS
from ._disclosure import LOAD, SEARCH, Disclosure
from ._escapes import read_back
from ._places import CodeWrite, any_approved, approved_writes
from ._scope import ReadOnlyScope
from ._source import ToolSource
from ._spill import spill
from ._stop import Stop, given_up
from ._tool import Tool, ToolContext, WithDiff, WithMedia

if TYPE_CHECKING:
    from ..permissions import Permissions, Ruling

MAX_OUTPUT_CHARS = 30_000
META_TOOLS = (SEARCH, LOAD)
CORE_TOOLS = frozenset(t.name for t in BUILTIN_TOOLS) | {
    "verify",
    "load_skill",
    "ask_user",
    "spawn_agent",
    "plan",
    "todo",
}
"""Never deferred by disclosure: the built-in tools, those the agent adds (skills, asking,
subagents, planning), and a `verify` of yours."""


class ToolExecutor:
    """Runs tool calls; every failure the model can act on comes back as an error observation."""

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        context: ToolContext,
        max_parallel: int = 4,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        permissions: Permissions | None = None,
        notes_for: Callable[[Sequence[Path]], str] | None = None,
        scope: ReadOnlyScope | None = None,
        sources: Sequence[ToolSource] = (),
        defer_above: int | None = None,
        loaded: Iterable[str] = (),
        read_back_escapes: bool = True,
    ) -> None:
        self.context = context
        self.read_back_escapes = read_back_escapes
        """A control character in a regex, glob or path argument is read back as the JSON
        escape the model meant (`reins.tools._escapes`)."""
        self.permissions = permissions
        self._own = list(tools)
        self.sources = tuple(sources)
        """Where more tools come from while the run runs (`refresh` before each round)."""
        self.specs: list[ToolSpec] = []
        """What the model is offered: updated in place, so whoever holds it sees a change."""
        self.disclosure = (
            None
            if defer_above is None
            else Disclosure(defer_above, core=CORE_TOOLS, loaded=loaded, changed=self._reoffer)
        )
        """Past `defer_above` tools: the built-ins and the loaded ones, and a search."""
        self._set_tools(self._own)  # unique names, or a UsageError
        self._clashes: set[tuple[str, str]] = set()
        self._untold: list[str] = []
        if self.sources:
            tools, self._untold = self._gathered()
            self._set_tools(tools)
        self.max_output_chars = max_output_chars
        self.notes_for = notes_for
        """What to attach to a successful result of a tool that touched these paths (the
        instruction file of a folder seen for the first time)."""
        self.scope = scope
        """A read-only mode's limits (None: the permissions alone decide)."""
        self.max_parallel = max(1, max_parallel)
        """How many calls of one response may run at once (the loop schedules them)."""
        self._path_locks: dict[Path, asyncio.Lock] = {}
        self._deadlines = _Deadlines()
        self._approved: dict[str, tuple[str, ...]] = {}
        """By call id: the places that run code which a call was put to a person to write."""
        self._diffs: dict[str, str] = {}
        """By call id: the change a file tool's call made, until the loop records it."""

    @property
    def refresh_due(self) -> bool:
        """Whether `refresh` may have something to say: there are sources (MCP servers), or
        the model loaded deferred tools since the last refresh."""
        return bool(self.sources) or (self.disclosure is not None and bool(self.disclosure.new))

    def _set_tools(self, tools: Sequence[Tool]) -> None:
        by_name = {t.name: t for t in tools}
        if len(by_name) != len(tools):
            names = [t.name for t in tools]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise UsageError(f"two tools share the name(s) {twice}; tool names must be unique")
        self._current = list(tools)
        offered, callable_ = (
            (self._current, self._current)
            if self.disclosure is None
            else self.disclosure.split(self._current)
        )
        self.tools = {t.name: t for t in callable_}
        permissions = self.permissions
        self._judged = frozenset(
            t.name for t in callable_ if permissions is not None and not permissions.allows(t)
        )
        """The tools whose calls the rules must look at: for the others a default allows."""
        self.specs[:] = [t.spec for t in offered]
        self.offered = [t.name for t in offered]

    def _reoffer(self) -> None:
        """The model loaded tools: from its next request on, their schemas are offered."""
        self._set_tools(self._current)

    async def refresh(self) -> ToolChange | None:
        """Ask the sources what their tools are now; None when nothing changed. A source's
        tool named like one already offered is left out, with a note."""
        notes, self._untold = self._untold, []
        added: tuple[str, ...] = ()
        removed: tuple[str, ...] = ()
        changed: tuple[str, ...] = ()
        if self.sources:
            for source in self.sources:
                notes += await source.refresh()
            tools, clashes = self._gathered()
            notes += clashes
            before = {t.name: t for t in self._current}
            changed = tuple(t.name for t in tools if t.name in before and before[t.name] != t)
            if changed or [t.name for t in tools] != list(before):
                self._set_tools(tools)
            added = tuple(n for n in self.tools if n not in before and n not in META_TOOLS)
            removed = tuple(n for n in before if n not in self.tools)
        loaded = self.disclosure.take_new() if self.disclosure is not None else ()
        if not (added or removed or changed or notes or loaded):
            return None
        return ToolChange(
            added=added, removed=removed, changed=changed, loaded=loaded, notes=tuple(notes)
        )

    def _gathered(self) -> tuple[list[Tool], list[str]]:
        """Our own tools and the sources', less those whose name is taken (a note, once)."""
        tools = list(self._own)
        taken = {t.name for t in tools}
        notes: list[str] = []
        for source in self.sources:
            for tool in source.tools():
                if tool.name in taken:
                    if (source.name, tool.name) not in self._clashes:
                        self._clashes.add((source.name, tool.name))
                        notes.append(f"{source.name}: tool {tool.name} left out: the name is taken")
                    continue
                taken.add(tool.name)
                tools.append(tool)
        return tools, notes

    def close(self) -> None:
        """Stop the timeout timer (the calls are over)."""
        self._deadlines.close()

    def take_diff(self, call_id: str) -> str | None:
        """The change call `call_id` made to a file, as a short unified diff (once: it is
        forgotten); None for a call that changed no file, or a tool that does not say."""
        return self._diffs.pop(call_id, None)

    def needs_scope(self, name: str) -> bool:
        tool = self.tools.get(name)
        return tool is not None and tool.needs_scope

    def is_read_only(self, name: str) -> bool:
        tool = self.tools.get(name)
        return tool is not None and tool.read_only

    def changes_workspace(self, name: str) -> bool:
        """Whether a call of `name` may change the workspace's files: a tool that writes the
        paths it is given, or runs commands. A checkpoint is taken before the first in a step."""
        tool = self.tools.get(name)
        return tool is not None and not tool.read_only and bool(tool.path_args or tool.command_arg)

    def refused_by_mode(self, call: ToolCall) -> bool:
        """Whether the run's mode refuses `call` (it fails on that, it does not run)."""
        tool = self.tools.get(call.name)
        if self.scope is None or tool is None:
            return False
        try:
            self.scope.check(tool, tool.validate(call.arguments), self.context.workspace)
        except ToolError:
            return True
        return False

    def judge(self, call: ToolCall, grants: Set[str]) -> Ruling | None:
        """The permission ruling on a call before it runs; None when a default allows it.
        A call whose arguments are invalid is not judged: it fails on them, harmlessly.
        A write to a place that runs code later is put to a person, whatever the rules say
        (with no permissions to ask through, the write is refused when it comes)."""
        tool = self.tools.get(call.name)
        if tool is None or call.raw_arguments is not None:
            return None
        call = self._read_back(tool, call)[0]  # judged as it will run
        code = self._code_writes(tool, call)
        if call.name not in self._judged and not code:
            return None
        if self.refused_by_mode(call):  # it is not put to anyone
            return None
        if self.permissions is None:
            return None
        ruling = self.permissions.judge(
            tool, call.arguments, grants, runs_code=tuple(w.why for w in code)
        )
        if ruling is not None and ruling.each_time and ruling.decision == "ask":
            self._approved[call.id] = tuple(w.path for w in code)
        if ruling is not None and ruling.decision != "allow":
            try:
                tool.validate(call.arguments)
            except ToolError:
                return None
        return ruling

    def _code_writes(self, tool: Tool, call: ToolCall) -> list[CodeWrite]:
        """The places that run code later this call would write."""
        if not tool.path_args or tool.read_only:
            return []
        try:
            args = tool.validate(call.arguments)
        except ToolError:
            return []
        workspace = self.context.workspace
        found = (workspace.runs_code(str(getattr(args, name))) for name in tool.path_args)
        return [w for w in found if w is not None]

    async def execute(self, call: ToolCall, scope: object = None) -> ToolResultMessage:
        """Run one call; `scope` goes to a tool that starts runs of its own."""
        media: tuple[Image | Document, ...] = ()
        try:
            approved = self._approved.pop(call.id, ())
            if approved or any_approved():
                with approved_writes(approved):
                    content = await self._execute(call, scope)
            else:  # the usual call: nothing to set or to clear (a context manager costs)
                content = await self._execute(call, scope)
            if isinstance(content, WithMedia):
                content, media = content
            is_error = False
        except ToolError as exc:
            content, is_error = str(exc), True
        except _TimedOut as exc:
            content, is_error = exc.message(call.name), True
        except Exception as exc:  # a tool's own bug is an observation, never a crashed run
            content, is_error = f"{call.name} failed: {type(exc).__name__}: {exc}", True
        if len(content) > self.max_output_chars:
            content = self._shaped(call, content)
        return ToolResultMessage(
            call_id=call.id, name=call.name, content=content, is_error=is_error, media=media
        )

    def _shaped(self, call: ToolCall, content: str) -> str:
        """An over-long result: spilled to a file the model can page through, or cut."""
        folder = self.context.spill
        if folder is not None:
            try:
                shown_as = self.context.workspace.shown(folder)
                return spill(content, folder=folder, name=call.id, shown_as=shown_as)
            except (OSError, ValueError):  # a full disk, a moved folder: cut, as with none
                pass
        return shorten(content, self.max_output_chars)

    async def _execute(self, call: ToolCall, scope: object = None) -> str | WithMedia:
        tool = self.tools.get(call.name)
        if tool is None:
            raise ToolError(
                f"unknown tool {call.name!r}; available tools: {', '.join(sorted(self.tools))}"
            )
        if call.raw_arguments is not None:
            raw = call.raw_arguments[:300]
            raise ToolError(
                f"the arguments of {call.name} are not a JSON object: {raw!r}; "
                "send them as one JSON object"
            )
        call, note = self._read_back(tool, call)
        if not note:
            return await self._validated(tool, call, scope)
        try:
            result = await self._validated(tool, call, scope)
        except ToolError as exc:
            raise ToolError(f"{exc}\n{note}") from None
        if isinstance(result, WithMedia):
            return result._replace(text=f"{result.text}\n{note}")
        return f"{result}\n{note}"

    def _read_back(self, tool: Tool, call: ToolCall) -> tuple[ToolCall, str]:
        """The call with the JSON escapes the model meant in its patterns and paths read back
        (a backspace as `\\b`), and the note saying so ("": none were)."""
        if not (tool.pattern_args or tool.path_args) or not self.read_back_escapes:
            return call, ""
        arguments, note = read_back(
            call.arguments,
            patterns=tool.pattern_args,
            paths=tool.path_args,
            exists=self._exists,
        )
        return (call.model_copy(update={"arguments": arguments}), note) if note else (call, "")

    def _exists(self, path: str) -> bool:
        try:
            return os.path.lexists(self.context.workspace.resolve(path))
        except ToolError:
            return False

    async def _validated(self, tool: Tool, call: ToolCall, scope: object = None) -> str | WithMedia:
        args = tool.validate(call.arguments)
        if self.scope is not None:
            self.scope.check(tool, args, self.context.workspace)
        paths = self._written_paths(tool, args) if tool.path_args and not tool.read_only else ()
        context = self.context
        if scope is not None and tool.needs_scope:
            context = dataclasses.replace(context, scope=scope)
        if not paths:
            result = await self._run(tool, args, context)
        else:
            async with AsyncExitStack() as locks:
                for path in paths:
                    lock = self._path_locks.setdefault(path, asyncio.Lock())
                    await locks.enter_async_context(lock)
                result = await self._run(tool, args, context)
        if isinstance(result, WithDiff):  # for people: the model gets the text alone
            self._diffs[call.id] = result.diff
            result = result.text
        if self.notes_for is not None and tool.path_args:
            touched = []
            for name in tool.path_args:
                try:
                    touched.append(self.context.workspace.resolve(str(getattr(args, name))))
                except ToolError:
                    continue
            if notes := self.notes_for(touched):
                if isinstance(result, WithMedia):
                    result = result._replace(text=f"{result.text}\n\n{notes}")
                else:
                    result = f"{result}\n\n{notes}"
        return result

    async def _run(
        self, tool: Tool, args: BaseModel, context: ToolContext
    ) -> str | WithMedia | WithDiff:
        """`tool.run`, abandoned with a TimeoutError after `tool.timeout` seconds."""
        if tool.timeout is None:
            return await tool.run(context, args)
        task = asyncio.current_task()
        assert task is not None
        self._deadlines.watch(task, tool.timeout)
        try:
            return await tool.run(context, args)
        except asyncio.CancelledError:
            if self._deadlines.expired(task) and task.uncancel() == 0:
                raise _TimedOut(tool, given_up() if tool.stoppable else None) from None
            raise
        finally:
            self._deadlines.unwatch(task)

    def _written_paths(self, tool: Tool, args: object) -> list[Path]:
        """Canonical paths this call writes, sorted so that two calls never lock in reverse."""
        workspace = self.context.workspace
        paths = {workspace.resolve(str(getattr(args, name)), write=True) for name in tool.path_args}
        return sorted(paths)


class _TimedOut(Exception):
    """A call outlived its tool's timeout and was abandoned."""

    def __init__(self, tool: Tool, stop: Stop | None) -> None:
        self.tool, self.stop = tool, stop

    def message(self, name: str) -> str:
        if self.stop is not None and self.stop.committed:
            return f"{name} timed out just after making its change, which stands; it was stopped"
        if self.tool.stops:
            return f"{name} timed out and was stopped"
        return (
            f"{name} timed out after {self.tool.timeout:g} s and may still be running: it runs "
            "in a thread that cannot be stopped, so what it does from now on is unknown"
        )


class _Deadlines:
    """Cancels the tasks of calls that outlive their timeout, with one loop timer for all of
    them: arming and cancelling a timer per call costs more than a fast tool."""

    def __init__(self) -> None:
        self._due: dict[asyncio.Task[Any], float] = {}
        self._late: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._wakes = 0.0
        """When the timer fires (`_timer.when()`, kept: it is asked at every call)."""

    def watch(self, task: asyncio.Task[Any], seconds: float) -> None:
        loop = task.get_loop()
        due = self._due[task] = loop.time() + seconds
        if self._timer is None or due < self._wakes:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._wakes = loop.call_at(due, self._check, loop), due

    def unwatch(self, task: asyncio.Task[Any]) -> None:
        self._due.pop(task, None)
        self._late.discard(task)

    def expired(self, task: asyncio.Task[Any]) -> bool:
        return task in self._late

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel what is late, then sleep until the next deadline (none: until a call)."""
        self._timer = None
        now = loop.time()
        for task, due in list(self._due.items()):
            if due <= now:
                del self._due[task]
                self._late.add(task)
                task.cancel()
        if self._due:
            self._wakes = min(self._due.values())
            self._timer = loop.call_at(self._wakes, self._check, loop)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def shorten(text: str, limit: int) -> str:
    """Keep the head and the tail of an over-long text, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"
