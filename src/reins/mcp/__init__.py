"""MCP: servers' tools offered to the model through the one `ToolExecutor` (validation,
permissions, timeouts and output shaping as for any tool), on the official `mcp` SDK.

The SDK takes half a second to import: `MCPServer` loads it on first use, not `import reins`."""

from typing import TYPE_CHECKING, Any

from ._config import MCPServerConfig, servers_from_json, servers_from_table
from ._group import server_stop_hook, start_all, stop_all

if TYPE_CHECKING:
    from ._server import MCPServer


def __getattr__(name: str) -> Any:
    if name == "MCPServer":
        from ._server import MCPServer

        return MCPServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MCPServer",
    "MCPServerConfig",
    "server_stop_hook",
    "servers_from_json",
    "servers_from_table",
    "start_all",
    "stop_all",
]
