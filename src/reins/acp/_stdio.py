"""ACP's wire: JSON-RPC messages, one a line, over a pair of streams (an editor's pipes to the
process: `serve_stdio`). Stdout carries the protocol and nothing else."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any, cast

from acp import Agent
from acp.agent.connection import AgentSideConnection

from ..core._errors import UsageError
from ._agent import ACPAgent

LINE_LIMIT = 50 * 1024 * 1024
"""The longest message read (an image in a prompt is long): the SDK's own."""


class JsonLines:
    """The SDK's message transport over two streams, newline-delimited JSON. A line that is
    not JSON, or not a JSON-RPC message, is answered with its JSON-RPC error (the SDK would
    log it and drop it, or stop reading)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._sending = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"  # ASCII: any text goes
        async with self._sending:
            self._writer.write(line.encode())
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                await self._error(None, -32700, "Parse error: a message is one line of JSON")
                continue
            if isinstance(message, dict) and isinstance(message.get("method", ""), str):
                return message
            ident = message.get("id") if isinstance(message, dict) else None
            await self._error(ident, -32600, "Invalid request: not a JSON-RPC 2.0 message")

    async def close(self) -> None:
        self._writer.close()

    async def _line(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                chunks.append(await self._reader.readuntil(b"\n"))
            except asyncio.LimitOverrunError as exc:  # a line past the buffer: read on
                chunks.append(await self._reader.readexactly(exc.consumed))
                continue
            except asyncio.IncompleteReadError as exc:  # the last line, without its newline
                chunks.append(exc.partial)
            return b"".join(chunks)

    async def _error(self, ident: Any, code: int, text: str) -> None:
        ident = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None
        await self.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}})


async def serve(
    agent: ACPAgent, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Speak ACP as `agent` over the streams until the client closes them; then the runs
    going on end cancelled."""
    # The SDK routes the methods `agent` has; the others (session/list, set_mode, ...) are
    # answered "method not found".
    served = cast(Agent, agent)
    connection = AgentSideConnection(served, JsonLines(reader, writer), listening=False)
    try:
        await connection.listen()
        await agent.close()
    finally:
        await connection.close()


async def serve_stdio(agent: ACPAgent) -> None:
    """`serve` over this process's stdin and stdout, as an editor starts an agent, until stdin
    closes or a SIGTERM (or Ctrl-C) comes. Whatever else would write to stdout (a library, a
    stray print, a child process that inherits it) writes to stderr: the protocol's stream
    stays clean."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, protocol_out
        )
    except ValueError as exc:  # a regular file: not how an editor starts an agent
        raise UsageError(f"reins acp talks over pipes (an editor starts it): {exc}") from None
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    for stop in (signal.SIGTERM, signal.SIGINT):  # as the editor closing the pipe: the runs
        loop.add_signal_handler(stop, reader.feed_eof)  # going on end cancelled, recorded
    await serve(agent, reader, writer)
