"""What an agent does with its servers as a group: start them at once, stop them, and ask
their `_Stop` hooks whether a final answer may end the run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core._errors import ToolError
from ..core._state import RunState

if TYPE_CHECKING:
    from ..policies import StopHookFunction
    from ._server import MCPServer

STOP_HOOK = "_Stop"
"""A server tool by this name is asked, with the final answer, whether the run may end:
empty text accepts; any other text (or an error result) rejects, as the reason."""


async def start_all(servers: Sequence[MCPServer]) -> list[MCPServer]:
    """Start those not running, side by side; the ones this started (to stop after)."""
    idle = [s for s in servers if not s.running and s.state != "disabled"]
    await asyncio.gather(*(s.start() for s in idle))
    return idle


async def stop_all(servers: Sequence[MCPServer]) -> None:
    await asyncio.gather(*(s.stop() for s in servers))


def server_stop_hook(servers: Sequence[MCPServer]) -> StopHookFunction:
    """A stop hook that asks each running server's `_Stop` tool, in order."""

    async def hook(state: RunState, answer: str) -> str | None:
        facts = {
            "final_answer": answer,
            "goal": state.goal,
            "run_id": state.run_id,
            "session_id": state.session_id,
        }
        for server in servers:
            spec = next((t for t in server.listed() if t.name == STOP_HOOK), None)
            if spec is None or server.state != "ready":
                continue
            wanted = spec.input_schema.get("properties", {})
            arguments = {k: v for k, v in facts.items() if k in wanted}
            try:
                said = await server.call(STOP_HOOK, arguments)
                reason = (said if isinstance(said, str) else str(said[0])).strip()
            except ToolError as exc:
                reason = str(exc)
            if reason:
                return f"{reason} (MCP server {server.name!r})"
        return None

    hook.__name__ = STOP_HOOK  # what the rejection names
    return hook
