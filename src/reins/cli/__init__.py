"""The `reins` command line. Only this package prints."""

from ._app import app, main

__all__ = ["app", "main"]
