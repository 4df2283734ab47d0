"""Tools that come and go while a run runs (an MCP server's): a source the executor asks,
before each round, what its tools are now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._tool import Tool


@runtime_checkable
class ToolSource(Protocol):
    """A live set of tools."""

    name: str

    async def refresh(self) -> Sequence[str]:
        """Bring `tools()` up to date (a list the server said changed is fetched again);
        return what the user should hear of since the last refresh, each text saying whose
        (a server that died)."""
        ...

    def tools(self) -> Sequence[Tool]:
        """The tools the model may call now."""
        ...
