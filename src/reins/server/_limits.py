"""A cap on request bodies: a client cannot make the server read (and pydantic parse) an
endless one. A body is read here first, counted as it arrives (so a chunked one without a
length is capped too), and handed on whole."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY = 1024 * 1024
"""Bytes: a goal or a steer at its longest (100,000 characters) is at most 400 KB of JSON."""


def limit_bodies(app: FastAPI, limit: int) -> None:
    app.add_middleware(_Limit, limit=limit)


class _Limit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"]) if scope["type"] == "http" else {}
        declared = headers.get(b"content-length")
        if declared is None and b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body: a stream's disconnect passes
            return
        too_large = JSONResponse(
            {"detail": f"the request's body is over the limit of {self.limit} bytes"},
            status_code=413,
        )
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)  # said before a byte of it is read
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                await too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        whole: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            return whole.pop() if whole else await receive()

        await self.app(scope, replay, send)
