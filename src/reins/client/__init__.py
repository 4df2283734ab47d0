"""A client of reins' HTTP API (`reins serve`), on httpx: `Client(url, token)`.

    async with Client("http://127.0.0.1:8765", token) as client:
        async for event in client.run("fix the failing test"):
            ...  # the same typed events as a run in process

Inside: `_client` (the calls), `_sse` (reading server-sent events).
"""

from ._client import TOKEN_VARIABLE, Client, RemoteRun, ServerUnreachable

__all__ = ["TOKEN_VARIABLE", "Client", "RemoteRun", "ServerUnreachable"]
