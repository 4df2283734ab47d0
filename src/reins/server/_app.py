"""The HTTP API: runs started, watched as server-sent events (or over a WebSocket), steered,
stopped, answered and resumed; sessions listed, shown, compacted and removed.

Every route under `/api` but `/api/health` needs `Authorization: Bearer TOKEN`; a wrong or
missing token is a 401 that says nothing more, after a constant-time compare. Errors carry one
line in `detail`: an unknown run is 404; one that is not going on (a steer or a stop after its
end; on a PostgreSQL store, a run another server runs is steered and stopped through it), a
session that has a turn going on, or a request that does not fit the run's state is 409; a
body over `MAX_BODY` bytes is 413; an unusable request is 422.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..core._approval import Approval
from ..core._errors import RunNotFound, SessionBusy, UsageError
from ..core._events import StreamEvent
from ..core._log import RunInfo
from ._requests import (
    ApprovalAnswer,
    QuestionAnswer,
    ResumeRequest,
    RunRequest,
    Started,
    SteerRequest,
)
from ._runs import Conflict, Runs, event_json, journaled
from ._views import RunView, SessionPage, SessionView, session_row
from ._web import mount_web
from ._ws import websocket_route

_bearer = HTTPBearer(auto_error=False)

MAX_BODY = 1024 * 1024
"""Bytes a request's body may hold (counted as it arrives, so a chunked one is capped too): a
goal or a steer at its longest (100,000 characters) is at most 400 KB of JSON."""


def create_app(runs: Runs, token: str) -> FastAPI:
    """The API over `runs` (their log is the store it serves), open to whoever holds `token`."""
    if not token:
        raise UsageError("the server needs a token: an empty one would let anyone in")
    expected = token.encode()

    def authorized(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        given = credentials.credentials.encode() if credentials is not None else b""
        if not hmac.compare_digest(given, expected):
            raise _Unauthorized

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runs.open()  # on a shared store, runs of servers gone are taken over from now
        yield
        await runs.close()  # the runs going on end as cancelled (shared store: handed over)

    app = FastAPI(title="reins", version=_version(), lifespan=lifespan, max_body_size=MAX_BODY)
    app.add_exception_handler(_Unauthorized, _unauthorized)
    errors = (
        (RunNotFound, 404),
        (SessionBusy, 409),
        (Conflict, 409),
        (UsageError, 422),
    )
    for error, status in errors:
        app.add_exception_handler(error, _answer_with(status))

    @app.get("/api/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": _version()}

    api = APIRouter(prefix="/api", dependencies=[Depends(authorized)])

    @api.post("/runs", status_code=201)
    async def start(request: RunRequest) -> Started:
        first = await runs.start(request)
        return Started(run_id=first.run_id, session_id=first.session_id)

    @api.get("/runs/{run_id}")
    async def show(run_id: str) -> RunView:
        return await runs.view(run_id)

    async def known(run_id: str) -> None:
        """A dependency, so that an unknown run is a 404 before a stream's headers go out."""
        await runs.state(run_id)

    @api.get(
        "/runs/{run_id}/events",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
        dependencies=[Depends(known)],
    )
    async def events(
        run_id: str,
        after: int | None = None,
        last_event_id: Annotated[int | None, Header()] = None,
    ) -> StreamingResponse:
        """The run's events as server-sent events, each its journal JSON with its `seq` as
        the `id`; text deltas and subagents' events come with no id. `Last-Event-ID` (or
        `?after=SEQ`) resumes after that event. A waiting run's stream stays open and goes on
        when an answer resumes it."""
        since = last_event_id if last_event_id is not None else after or 0
        batches = (_sse(batch) async for batch in runs.follow(run_id, since))
        return StreamingResponse(batches, media_type="text/event-stream", headers=SSE_HEADERS)

    @api.post("/runs/{run_id}/steer", status_code=202, dependencies=[Depends(known)])
    async def steer(run_id: str, request: SteerRequest) -> dict[str, str]:
        await runs.steer(run_id, request.text)
        return {"status": "queued"}

    @api.post("/runs/{run_id}/stop", status_code=202, dependencies=[Depends(known)])
    async def stop(run_id: str) -> dict[str, str]:
        await runs.stop(run_id)
        return {"status": "stopping"}

    @api.post("/runs/{run_id}/approvals/{call_id}", status_code=202, dependencies=[Depends(known)])
    async def approve(run_id: str, call_id: str, answer: ApprovalAnswer) -> dict[str, str]:
        await runs.approve(run_id, call_id, Approval(answer.approve, always=answer.always))
        return {"status": "answered"}

    @api.post(
        "/runs/{run_id}/answers/{question_id}", status_code=202, dependencies=[Depends(known)]
    )
    async def reply(run_id: str, question_id: str, answer: QuestionAnswer) -> dict[str, str]:
        await runs.reply(run_id, question_id, answer.text)
        return {"status": "answered"}

    @api.post("/runs/{run_id}/resume", status_code=202, dependencies=[Depends(known)])
    async def resume(run_id: str, request: ResumeRequest | None = None) -> dict[str, str]:
        """Go on with a run that stopped: at a cap (which grows by as much again unless the
        body says new totals), cancelled, interrupted, or waiting (`approvals`, `answers`)."""
        await runs.resume(run_id, request)
        return {"status": "resumed"}

    @api.get("/sessions")
    async def sessions(
        offset: Annotated[int, Query(ge=0)] = 0, limit: Annotated[int, Query(ge=1, le=500)] = 50
    ) -> SessionPage:
        """The store's sessions, the latest active first."""
        by_session: dict[str, list[RunInfo]] = {}
        for info in await runs.log.runs():
            by_session.setdefault(info.session_id, []).append(info)
        ordered = sorted(by_session.values(), key=lambda rs: rs[-1].started_at, reverse=True)
        rows = [
            session_row(rs, runs.status_of(rs[-1].run_id, rs[-1].session_id, rs[-1].stop_reason))
            for rs in ordered[offset : offset + limit]
        ]
        return SessionPage(sessions=rows, total=len(ordered))

    @api.get("/sessions/{session_id}")
    async def session(session_id: str) -> SessionView:
        infos = await runs.log.runs(session_id)
        if not infos:
            raise RunNotFound(f"no session {session_id} in this store")
        views = [await runs.view(info.run_id) for info in infos]
        last = await runs.state(infos[-1].run_id)
        return SessionView(session_id=session_id, runs=views, messages=last.transcript(whole=True))

    @api.post("/sessions/{session_id}/compact")
    async def compact(session_id: str) -> dict[str, Any]:
        """Compacts the session's context now: its next turn starts from the summary."""
        done = await runs.compact(session_id)
        return {
            "method": done.method,
            "tokens_before": done.tokens_before,
            "tokens_after": done.tokens_after,
            "messages_before": done.messages_before,
            "messages_after": done.messages_after,
        }

    @api.delete("/sessions/{session_id}", status_code=204)
    async def remove(session_id: str) -> None:
        """Deletes the session for good (its log and saved outputs); 409 while a run of it
        goes on, here or in another process."""
        if not await runs.log.runs(session_id):
            raise RunNotFound(f"no session {session_id} in this store")
        if any(live.session_id == session_id for live in runs.live.values()):
            raise SessionBusy(f"session {session_id} has a run going on; stop it first")
        await runs.log.remove(session_id)

    app.include_router(api)
    app.add_api_websocket_route("/api/ws", websocket_route(runs, expected))
    mount_web(app)
    return app


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""No proxy keeps a stream's events back to send them together."""


def _sse(batch: list[StreamEvent]) -> bytes:
    """Events read together, framed as server-sent events in one write (a burst of events
    is one send, not one each); none: a comment, that says the stream is alive."""
    if not batch:
        return b": ping\n\n"
    frames = []
    for event in batch:
        if journaled(event):
            frames.append(f"id: {event.seq}\ndata: {event_json(event)}\n\n")
        else:
            frames.append(f"data: {event_json(event)}\n\n")
    return "".join(frames).encode()


class _Unauthorized(Exception):
    pass


async def _unauthorized(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(
        {"detail": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
    )


def _answer_with(status: int) -> Callable[[Request, Exception], Any]:
    async def answer(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status)

    return answer


def _version() -> str:
    try:
        return version("reins")
    except PackageNotFoundError:  # run from a source tree
        return "unknown"
