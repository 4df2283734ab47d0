"""The `reins` command line. Only this package prints."""

from ._app import app, main
from ._chat import chat
from ._mcp import mcp_app

app.command()(chat)
app.add_typer(mcp_app, name="mcp")

__all__ = ["app", "main"]
