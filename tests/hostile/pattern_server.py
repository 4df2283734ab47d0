"""An MCP server whose tool's schema holds a regex written to backtrack for ever (`pattern`:
`(a*)*b`), for test_runaway: checked against forty `a`s, Python's `re` never ends."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("patterns")


@server.tool()
def echo(text: Annotated[str, Field(pattern="(a*)*b")]) -> str:
    """Say the text back."""
    return text


if __name__ == "__main__":
    server.run("stdio")
