"""The one place tools are executed: validate -> lock paths -> run with timeout -> shape."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path

from pydantic import BaseModel

from .._errors import ToolError, UsageError
from .._messages import ToolCall, ToolResultMessage, ToolSpec
from ._tool import Tool, ToolContext

MAX_OUTPUT_CHARS = 30_000


class ToolExecutor:
    """Runs tool calls; every failure the model can act on comes back as an error observation."""

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        context: ToolContext,
        max_parallel: int = 4,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        self.tools = {t.name: t for t in tools}
        if len(self.tools) != len(tools):
            names = [t.name for t in tools]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise UsageError(f"two tools share the name(s) {twice}; tool names must be unique")
        self.context = context
        self.max_output_chars = max_output_chars
        self.max_parallel = max(1, max_parallel)
        """How many calls of one response may run at once (the loop schedules them)."""
        self._path_locks: dict[Path, asyncio.Lock] = {}
        self.specs: list[ToolSpec] = [t.spec for t in tools]

    def is_read_only(self, name: str) -> bool:
        tool = self.tools.get(name)
        return tool is not None and tool.read_only

    async def execute(self, call: ToolCall) -> ToolResultMessage:
        try:
            content = await self._execute(call)
        except ToolError as exc:
            return self._result(call, str(exc), is_error=True)
        except TimeoutError:
            return self._result(call, f"{call.name} timed out and was stopped", is_error=True)
        except Exception as exc:  # a tool's own bug is an observation, never a crashed run
            return self._result(call, f"{call.name} failed: {type(exc).__name__}: {exc}", True)
        return self._result(call, content, is_error=False)

    async def _execute(self, call: ToolCall) -> str:
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
        args = tool.validate(call.arguments)
        paths = self._written_paths(tool, args)
        if not paths:
            return await self._run(tool, args)
        async with AsyncExitStack() as locks:
            for path in paths:
                await locks.enter_async_context(self._path_locks.setdefault(path, asyncio.Lock()))
            return await self._run(tool, args)

    async def _run(self, tool: Tool, args: BaseModel) -> str:
        """`tool.run` under its timeout. What `asyncio.timeout` does, at half the cost: this
        runs once per tool call."""
        if tool.timeout is None:
            return await tool.run(self.context, args)
        task = asyncio.current_task()
        assert task is not None
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = task.get_loop().call_later(tool.timeout, expire)
        try:
            return await tool.run(self.context, args)
        except asyncio.CancelledError:
            if expired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            timer.cancel()

    def _written_paths(self, tool: Tool, args: object) -> list[Path]:
        """Canonical paths this call writes, sorted so that two calls never lock in reverse."""
        if tool.read_only or not tool.path_args:
            return []
        workspace = self.context.workspace
        paths = {workspace.resolve(str(getattr(args, name)), write=True) for name in tool.path_args}
        return sorted(paths)

    def _result(self, call: ToolCall, content: str, is_error: bool) -> ToolResultMessage:
        return ToolResultMessage(
            call_id=call.id,
            name=call.name,
            content=shorten(content, self.max_output_chars),
            is_error=is_error,
        )


def shorten(text: str, limit: int) -> str:
    """Keep the head and the tail of an over-long text, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"
