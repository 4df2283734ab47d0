"""`GET /api/ws`: a WebSocket carrying the same events out and the same commands in as the
HTTP routes.

Authorized by `Authorization: Bearer TOKEN` on the upgrade, or (a browser cannot set that
header) by a first message `{"type": "auth", "token": "..."}`; else closed with 4401.
A command is a JSON object with a `type` and an optional `id`, echoed in its reply
(`{"type": "ok", "id": ...}` or `{"type": "error", "id": ..., "status": 404, "detail": "..."}`,
the status the HTTP route would give):

    subscribe {run_id, after?}     events: {"type": "event", "run_id", "id": seq|null, "event"},
                                   then {"type": "end", "run_id"} when its stream would end
    unsubscribe {run_id}
    start {goal, session_id?, ...} the run's id and session in the reply; subscribed at once
    steer {run_id, text}           stop {run_id}
    approve {run_id, call_id, approve, always?}
    answer {run_id, question_id, text?}
    resume {run_id, max_steps?, ...}
    compact {session_id}

What goes out passes one bounded queue: a client that does not read is dropped (closed with
1013), not kept in the server's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..core._approval import Approval
from ..core._errors import RunNotFound, SessionBusy, UsageError
from ._requests import TEXT, ResumeRequest, RunRequest
from ._runs import Conflict, Runs, event_json, journaled

QUEUE = 1000
"""Messages waiting for a slow client before it is dropped."""
AUTH_WAIT_S = 10.0
UNAUTHORIZED = 4401
STATUS = ((RunNotFound, 404), (SessionBusy, 409), (Conflict, 409), (UsageError, 422))


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | int | None = None


class _Subscribe(_Command):
    type: Literal["subscribe"]
    run_id: str
    after: int = Field(default=0, ge=0)


class _Unsubscribe(_Command):
    type: Literal["unsubscribe"]
    run_id: str


class _Start(RunRequest):
    type: Literal["start"]
    id: str | int | None = None


class _Steer(_Command):
    type: Literal["steer"]
    run_id: str
    text: str = Field(min_length=1, max_length=TEXT)


class _Stop(_Command):
    type: Literal["stop"]
    run_id: str


class _Approve(_Command):
    type: Literal["approve"]
    run_id: str
    call_id: str
    approve: bool
    always: bool = False


class _Answer(_Command):
    type: Literal["answer"]
    run_id: str
    question_id: str
    text: str | None = Field(default=None, max_length=TEXT)


class _Resume(ResumeRequest):
    type: Literal["resume"]
    id: str | int | None = None
    run_id: str


class _Compact(_Command):
    type: Literal["compact"]
    session_id: str


_COMMAND: TypeAdapter[Any] = TypeAdapter(
    Annotated[
        _Subscribe
        | _Unsubscribe
        | _Start
        | _Steer
        | _Stop
        | _Approve
        | _Answer
        | _Resume
        | _Compact,
        Field(discriminator="type"),
    ]
)


def websocket_route(runs: Runs, token: bytes) -> Callable[[WebSocket], Awaitable[None]]:
    async def route(websocket: WebSocket) -> None:
        await websocket.accept()
        if not await _authorized(websocket, token):
            await websocket.close(UNAUTHORIZED, "unauthorized")
            return
        await _Session(runs, websocket).serve()

    return route


async def _authorized(websocket: WebSocket, token: bytes) -> bool:
    header = websocket.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return hmac.compare_digest(header[7:].strip().encode(), token)
    try:
        async with asyncio.timeout(AUTH_WAIT_S):
            first = json.loads(await websocket.receive_text())
    except (TimeoutError, ValueError, WebSocketDisconnect):
        return False
    given = first.get("token") if isinstance(first, dict) and first.get("type") == "auth" else None
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token)


class _Session:
    """One client's socket: its commands carried out, its subscriptions' events sent."""

    def __init__(self, runs: Runs, websocket: WebSocket) -> None:
        self.runs = runs
        self.websocket = websocket
        self.out: asyncio.Queue[str] = asyncio.Queue(QUEUE)
        self.following: dict[str, asyncio.Task[None]] = {}
        self.dropped = False

    async def serve(self) -> None:
        sender = asyncio.create_task(self._send())
        try:
            while not self.dropped:
                try:
                    text = await self.websocket.receive_text()
                except (WebSocketDisconnect, RuntimeError):
                    return
                await self._carry_out(text)
        finally:
            for task in self.following.values():
                task.cancel()
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender

    def _put(self, message: dict[str, Any] | str) -> None:
        if self.dropped:
            return
        text = message if isinstance(message, str) else json.dumps(message)
        try:
            self.out.put_nowait(text)
        except asyncio.QueueFull:
            self.dropped = True
            task = asyncio.create_task(self.websocket.close(1013, "too slow: dropped"))
            task.add_done_callback(lambda _: None)

    async def _send(self) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            while True:
                await self.websocket.send_text(await self.out.get())

    async def _carry_out(self, text: str) -> None:
        ident: Any = None
        try:
            raw = json.loads(text)
            ident = raw.get("id") if isinstance(raw, dict) else None
            command = _COMMAND.validate_python(raw)
            reply = await self._do(command)
        except ValueError as exc:  # not JSON, or a ValidationError
            self._put({"type": "error", "id": ident, "status": 422, "detail": _said(exc)})
            return
        except tuple(error for error, _ in STATUS) as exc:
            status = next(code for error, code in STATUS if isinstance(exc, error))
            self._put({"type": "error", "id": ident, "status": status, "detail": str(exc)})
            return
        self._put({"type": "ok", "id": ident, **reply})

    async def _do(self, command: Any) -> dict[str, Any]:
        runs = self.runs
        if (run_id := getattr(command, "run_id", None)) is not None:
            await runs.state(run_id)  # an unknown run: 404, as over HTTP
        match command:
            case _Subscribe(run_id=run_id, after=after):
                self._follow(run_id, after)
            case _Unsubscribe(run_id=run_id):
                if (task := self.following.pop(run_id, None)) is not None:
                    task.cancel()
            case _Start():
                request = RunRequest.model_validate(command.model_dump(exclude={"type", "id"}))
                first = await runs.start(request)
                self._follow(first.run_id, 0)
                return {"run_id": first.run_id, "session_id": first.session_id}
            case _Steer(run_id=run_id, text=text):
                await runs.steer(run_id, text)
            case _Stop(run_id=run_id):
                await runs.stop(run_id)
            case _Approve(run_id=run_id, call_id=call_id, approve=approve, always=always):
                await runs.approve(run_id, call_id, Approval(approve, always=always))
            case _Answer(run_id=run_id, question_id=question_id, text=text):
                await runs.reply(run_id, question_id, text)
            case _Resume(run_id=run_id):
                fields = command.model_dump(exclude={"type", "id", "run_id"})
                before = (await runs.state(run_id)).next_seq - 1
                await runs.resume(run_id, ResumeRequest.model_validate(fields))
                if run_id not in self.following:
                    self._follow(run_id, before)
            case _Compact(session_id=session_id):
                done = await runs.compact(session_id)
                return {"tokens_before": done.tokens_before, "tokens_after": done.tokens_after}
        return {}

    def _follow(self, run_id: str, after: int) -> None:
        if (old := self.following.pop(run_id, None)) is not None:
            old.cancel()
        self.following[run_id] = asyncio.create_task(self._events(run_id, after))

    async def _events(self, run_id: str, after: int) -> None:
        quoted = json.dumps(run_id)
        async for batch in self.runs.follow(run_id, after):
            for event in batch:  # none: a heartbeat, which a socket has its own of
                seq = event.seq if journaled(event) else "null"
                self._put(
                    f'{{"type": "event", "run_id": {quoted}, "id": {seq}, '
                    f'"event": {event_json(event)}}}'
                )
            if self.dropped:
                return
        self._put({"type": "end", "run_id": run_id})
        if self.following.get(run_id) is asyncio.current_task():
            del self.following[run_id]


def _said(exc: ValueError) -> str:
    """A validation error's first complaint as one line: `field: what is wrong`."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return f"not a JSON command: {exc}"
