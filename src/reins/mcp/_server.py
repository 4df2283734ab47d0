"""One MCP server, on the official `mcp` SDK: started once, held open by a task of its own
(the SDK's connections must be entered and left by one task), its tools offered while it runs.

Nothing here raises for a server's failure: a server that does not start, dies or times out
is a state, an `error`, and a note the next `refresh` returns; the run goes on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Literal

import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..core._errors import ToolError, UsageError
from ..core._media import Document, Image
from ..tools import Tool, ToolContext
from ..tools._schema import inline_refs
from ..tools._tool import AnyArguments
from ._config import MCPServerConfig
from ._results import observation

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream

State = Literal["stopped", "starting", "ready", "failed", "exited", "disabled"]
SEPARATOR = "__"
MAX_NAME = 64
"""What OpenAI and Anthropic accept as a tool name: 64 of [A-Za-z0-9_-]."""
STDERR_TAIL = 300


class MCPServer:
    """A configured server and its connection. `async with server:` holds it open; an
    `Agent` given it (`mcp_servers=`) starts it for a run if it is not running yet."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.name = config.name
        self.state: State = "stopped" if config.enabled else "disabled"
        self.error = ""
        """Why it failed or exited."""
        self.server_info = ""
        """The server's name and version, as it says."""
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._tools: dict[str, Tool] = {}
        self._listed: dict[str, types.Tool] = {}
        self._stale = False
        self._untold: list[str] = []
        self._stderr: Any = None
        self._calls = 0
        """Calls of its tools under way."""

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self.state})"

    async def __aenter__(self) -> MCPServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> bool:
        """Start it (unless it runs) and list its tools; True if it is ready."""
        if self.state == "disabled":
            return False
        if self.running:
            await self._ready.wait()
            return self.state == "ready"
        self._ready, self._closing = asyncio.Event(), asyncio.Event()
        self.state, self.error, self._stale = "starting", "", False
        self._tools, self._listed = {}, {}
        try:
            config = self.config.expanded()
        except UsageError as exc:
            self._failed(str(exc).removeprefix(f"MCP server {self.name!r}: "))
            return False
        self._task = asyncio.create_task(self._hold(config), name=f"MCP server {self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), config.startup_timeout)
        except TimeoutError:
            await self.stop()
            self._failed(f"did not start within {config.startup_timeout:g} s")
        return self.ready

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    async def stop(self) -> None:
        """Close the connection (a stdio server's process is ended, its whole tree)."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        if not self._ready.is_set():  # still starting: nothing to close gracefully
            task.cancel()
        # `wait`, not `await task`: the task's own end (an error, a cancel) is not ours.
        _, late = await asyncio.wait({task}, timeout=10)
        if late:
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: `_hold` keeps what it means in `error`
        self._task = None
        if self.state in ("ready", "starting"):
            self.state = "stopped"

    # The tool source the executor asks before each round
    async def refresh(self) -> Sequence[str]:
        if self._stale and self._client is not None and self.state == "ready":
            self._stale = False
            try:
                await asyncio.wait_for(self._list_tools(self._client), self.config.tool_timeout)
            except Exception as exc:
                self._untold.append(f"MCP server {self.name!r}: its new tool list: {_why(exc)}")
        told, self._untold = self._untold, []
        return told

    def tools(self) -> Sequence[Tool]:
        return list(self._tools.values()) if self.state == "ready" else []

    def listed(self) -> list[types.Tool]:
        """The tools as the server describes them (hidden ones too)."""
        return list(self._listed.values())

    async def call(
        self, tool: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> str | list[str | Image | Document]:
        """Call one of its tools by the server's own name; an error result is a `ToolError`.
        Text, or a list of it and the images and documents the result holds."""
        client = self._client
        if self.state == "exited":
            raise ToolError(
                f"MCP server {self.name!r} had stopped before this call: {self.error}; "
                "its tools are no longer available"
            )
        if client is None or self.state != "ready":
            raise ToolError(f"MCP server {self.name!r} is not running: {self.error or self.state}")
        self._calls += 1
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise ToolError(f"{self.name}{SEPARATOR}{tool}: {exc.message}") from None
            self._exited(f"the connection closed during a call of {tool}")
            raise ToolError(
                f"MCP server {self.name!r} stopped without answering this call: {self.error}; "
                "its tools are no longer available"
            ) from None
        finally:
            self._calls -= 1
        folder = ctx.spill if ctx is not None else None
        shown = ctx.workspace.shown(folder) if ctx is not None and folder is not None else ""
        seen = observation(result, save_to=folder, shown_as=shown)
        if result.is_error:
            text = seen if isinstance(seen, str) else seen[0]
            raise ToolError(text or f"{tool} failed (the server gave no reason)")
        return seen

    # The task that holds the connection
    async def _hold(self, config: MCPServerConfig) -> None:
        was_ready = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client_for(config, stack))
                info = client.server_info
                self.server_info = f"{info.name} {info.version}".strip() if info else ""
                await self._list_tools(client)
                self._client, self.state, was_ready = client, "ready", True
                self._ready.set()
                listener = None
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS and _lists_change(client):
                    listener = asyncio.create_task(self._listen(client))
                await self._closing.wait()
                if listener is not None:
                    listener.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await listener
        except asyncio.CancelledError:
            if not self._closing.is_set():
                raise
        except BaseException as exc:  # the SDK's task groups raise ExceptionGroups
            if not isinstance(exc, Exception):
                raise
            if self._closing.is_set():
                pass
            elif was_ready:
                self._exited(_why(exc))
            else:
                self._failed(_why(exc))
        finally:
            self._client = None
            self._ready.set()
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    def _client_for(self, config: MCPServerConfig, stack: contextlib.AsyncExitStack) -> Client:
        async def stale(message: object) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                self._stale = True

        info = types.Implementation(name="reins", version=version("reins"))
        if config.command is not None:
            # The server's stderr (its logs) goes to a file: the tail says why it failed.
            # Closed by `_hold` after the failure (if any) has read its tail.
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env={"PATH": _path(), **config.env},
                cwd=config.cwd,
            )
            from mcp.client.stdio import stdio_client

            transport: Any = stdio_client(params, errlog=self._stderr)
        else:
            assert config.url is not None
            http = httpx2.AsyncClient(
                headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0)
            )
            stack.push_async_callback(http.aclose)
            transport = streamable_http_client(config.url, http_client=http)
        return Client(
            _watched(transport, self._connection_ended), message_handler=stale, client_info=info
        )

    def _connection_ended(self) -> None:
        """The server's end of the connection closed: between calls (it exited while idle),
        it is said now; during a call, that call says it."""
        if not self._closing.is_set() and not self._calls:
            self._exited("its connection closed between calls")

    async def _listen(self, client: Client) -> None:
        """A 2026-07-28 server tells of a changed list on a subscription stream."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._stale = True
        except (ListenNotSupportedError, SubscriptionLost, MCPError):
            pass  # its list is read as it was; a call that fails says why

    async def _list_tools(self, client: Client) -> None:
        listed: dict[str, types.Tool] = {}
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            listed.update((t.name, t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools: dict[str, Tool] = {}
        for spec in listed.values():
            if spec.name.startswith("_"):
                continue  # a hook the harness calls (`_Stop`), never offered to the model
            old = self._listed.get(spec.name)
            made = self._tools.get(self.tool_name(spec.name))
            tool = made if made is not None and old == spec else self._tool(spec)
            tools[tool.name] = tool
        self._listed, self._tools = listed, tools

    def tool_name(self, tool: str) -> str:
        """`server__tool` in the characters model APIs accept, at most 64 of them."""
        name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{self.name}{SEPARATOR}{tool}")
        if len(name) > MAX_NAME:
            digest = hashlib.sha1(name.encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{digest}"
        return name

    def _tool(self, spec: types.Tool) -> Tool:
        server, name = self, spec.name

        async def call(ctx: ToolContext, /, **arguments: Any) -> str | list[str | Image | Document]:
            return await server.call(name, arguments, ctx)

        hints = spec.annotations
        read_only = bool(hints and hints.read_only_hint)
        schema = inline_refs({k: v for k, v in spec.input_schema.items() if k != "$schema"})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return Tool(
            name=self.tool_name(name),
            description=spec.description or spec.title or name,
            fn=call,
            args_model=AnyArguments,
            takes_context=True,
            read_only=read_only,
            cached=False,  # readOnlyHint promises no effects, not the same answer twice
            needs_approval=not read_only,
            timeout=self.config.tool_timeout,
            schema=schema,
        )

    def _failed(self, why: str) -> None:
        self.state, self.error = "failed", self._with_stderr(why)
        self._untold.append(f"MCP server {self.name!r} did not start: {self.error}")

    def _exited(self, why: str) -> None:
        if self.state != "ready":
            return
        self.state, self.error = "exited", self._with_stderr(why)
        self._untold.append(
            f"MCP server {self.name!r} stopped: {self.error}; its tools are no longer offered"
        )

    def _with_stderr(self, why: str) -> str:
        stderr = self._stderr
        if stderr is None or stderr.closed:
            return why
        try:
            stderr.flush()
            stderr.seek(0)
            lines = [" ".join(line.split()) for line in stderr.read()[-4000:].splitlines()]
        except (OSError, ValueError):
            return why
        tail = " / ".join([line for line in lines if line][-3:])[-STDERR_TAIL:]
        return f"{why}; its stderr ends: {tail}" if tail else why


@contextlib.asynccontextmanager
async def _watched(transport: Any, ended: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport, with `ended` called when the server's messages end."""
    async with transport as (read, write):
        yield _Reader(read, ended), write


class _Reader:
    """The server's messages, read through (a `ReadStream`): their end, as the SDK reads them,
    is told to `ended` when it comes, not only at the next call."""

    def __init__(
        self, stream: ReadStream[SessionMessage | Exception], ended: Callable[[], None]
    ) -> None:
        self._stream, self._ended = stream, ended

    @property
    def last_context(self) -> Any:
        """The sender's context, where the SDK's own stream keeps one."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        return await self._stream.receive()

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._ended()
            raise

    async def __aenter__(self) -> _Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _lists_change(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return bool(tools and tools.list_changed)


def _why(exc: BaseException) -> str:
    """The innermost first error of an exception (group): what a person can act on."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot run {exc.filename or 'the command'}: {exc.strerror}"
    if isinstance(exc, httpx2.HTTPError):
        return f"{type(exc).__name__}: {text}"
    return text


def _path() -> str:
    return os.environ.get("PATH", "/usr/bin:/bin")
