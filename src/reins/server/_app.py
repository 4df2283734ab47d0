"""The HTTP API: runs started, watched as server-sent events, steered and stopped.

Every route under `/api` but `/api/health` needs `Authorization: Bearer TOKEN`; a wrong or
missing token is a 401 that says nothing more, after a constant-time compare. Errors carry one
line in `detail`: an unknown run is 404, one that is not going on here (a steer or a stop after
its end) or a session that has a turn going on is 409, an unusable request is 422.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from ..agent import Agent
from ..core._errors import RunNotFound, SessionBusy, UsageError
from ..core._events import EVENT, StreamEvent, SubagentEvent
from ..core._log import RunInfo
from ..core._messages import Message, Usage
from ..core._state import RunState
from ..core._stop import StopReason
from ._runs import Runs, journaled


class RunRequest(BaseModel):
    """A run to start: its goal, and the session it continues (else a new one)."""

    goal: str = Field(min_length=1, max_length=100_000)
    session_id: str | None = None
    max_steps: int | None = Field(default=None, ge=1, le=10_000)


class Started(BaseModel):
    run_id: str
    session_id: str


class SteerRequest(BaseModel):
    text: str = Field(min_length=1, max_length=100_000)


class ApprovalAnswer(BaseModel):
    approve: bool
    always: bool = False
    """Allow what the request names for the rest of the session (not for a write to a file
    that runs code later: only this call)."""


class QuestionAnswer(BaseModel):
    text: str | None = Field(default=None, max_length=100_000)
    """The answer; none (or blank): dismissed, the model goes on with its default."""


RunStatus = Literal["running", "waiting", "finished", "interrupted"]


class RunView(BaseModel):
    """A run as `GET /api/runs/{run_id}` shows it."""

    run_id: str
    session_id: str
    goal: str
    status: RunStatus
    """`running` here or in another process; `waiting` for a person's answer; `finished`;
    `interrupted`: its process ended before it did (resume continues it)."""
    stop_reason: StopReason | None
    detail: str
    answer: str | None
    steps: int
    usage: Usage
    cost: float
    """US dollars, for the model calls whose price is known."""
    awaiting: list[str]
    """The call ids waiting for an approval or an answer."""


class SessionRow(BaseModel):
    """A session in `GET /api/sessions`: its first goal and its latest run."""

    session_id: str
    goal: str
    runs: int
    last_run_id: str
    last_status: RunStatus
    started_at: datetime
    """When its latest run started."""


class SessionPage(BaseModel):
    sessions: list[SessionRow]
    total: int


class SessionView(BaseModel):
    """A session in `GET /api/sessions/{id}`: its runs, oldest first, and its transcript
    (the messages its latest run holds, earlier turns included)."""

    session_id: str
    runs: list[RunView]
    messages: list[Message]


AgentFactory = Callable[[RunRequest], Agent]
"""Builds the agent of a run the server starts (its model, tools, permissions, log): the
front end that serves decides."""

_bearer = HTTPBearer(auto_error=False)


def create_app(runs: Runs, make_agent: AgentFactory, token: str) -> FastAPI:
    """The API over `runs` (their log is the store it serves), starting runs with the agents
    `make_agent` builds, open to whoever holds `token`."""
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
        yield
        await runs.close()  # the runs going on end as cancelled, in their logs

    app = FastAPI(title="reins", version=_version(), lifespan=lifespan)
    app.add_exception_handler(_Unauthorized, _unauthorized)
    for error, status in ((RunNotFound, 404), (SessionBusy, 409), (UsageError, 422)):
        app.add_exception_handler(error, _answer_with(status))

    @app.get("/api/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": _version()}

    api = APIRouter(prefix="/api", dependencies=[Depends(authorized)])

    @api.post("/runs", status_code=201)
    async def start(request: RunRequest) -> Started:
        first = await runs.start(make_agent(request), request.goal, request.session_id)
        return Started(run_id=first.run_id, session_id=first.session_id)

    @api.get("/runs/{run_id}")
    async def show(run_id: str) -> RunView:
        state = await runs.state(run_id)
        return _view(state, _status(runs, state))

    async def known(run_id: str) -> None:
        """A dependency, so that an unknown run is a 404 before a stream's headers go out."""
        await runs.state(run_id)

    @api.get(
        "/runs/{run_id}/events",
        response_class=EventSourceResponse,
        dependencies=[Depends(known)],
    )
    async def events(
        run_id: str,
        after: int | None = None,
        last_event_id: Annotated[int | None, Header()] = None,
    ) -> AsyncIterator[ServerSentEvent]:
        """The run's events as server-sent events, each its journal JSON with its `seq` as
        the `id`; text deltas and subagents' events come with no id. `Last-Event-ID` (or
        `?after=SEQ`) resumes after that event."""
        since = last_event_id if last_event_id is not None else after or 0
        async for event in runs.follow(run_id, since):
            yield _sse(event)

    @api.post("/runs/{run_id}/steer", status_code=202, dependencies=[Depends(known)])
    async def steer(run_id: str, request: SteerRequest) -> dict[str, str]:
        runs.steer(run_id, request.text)
        return {"status": "queued"}

    @api.post("/runs/{run_id}/approvals/{call_id}", status_code=202, dependencies=[Depends(known)])
    async def approve(run_id: str, call_id: str, answer: ApprovalAnswer) -> dict[str, str]:
        runs.answer_approval(run_id, call_id, answer.approve, answer.always)
        return {"status": "answered"}

    @api.post(
        "/runs/{run_id}/answers/{question_id}", status_code=202, dependencies=[Depends(known)]
    )
    async def reply(run_id: str, question_id: str, answer: QuestionAnswer) -> dict[str, str]:
        runs.answer_question(run_id, question_id, answer.text)
        return {"status": "answered"}

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
            SessionRow(
                session_id=rs[0].session_id,
                goal=rs[0].goal,
                runs=len(rs),
                last_run_id=rs[-1].run_id,
                last_status=_indexed_status(runs, rs[-1]),
                started_at=rs[-1].started_at,
            )
            for rs in ordered[offset : offset + limit]
        ]
        return SessionPage(sessions=rows, total=len(ordered))

    @api.get("/sessions/{session_id}")
    async def session(session_id: str) -> SessionView:
        infos = await runs.log.runs(session_id)
        if not infos:
            raise RunNotFound(f"no session {session_id} in this store")
        states = [await runs.state(info.run_id) for info in infos]
        return SessionView(
            session_id=session_id,
            runs=[_view(state, _status(runs, state)) for state in states],
            messages=states[-1].transcript(whole=True),
        )

    @api.delete("/sessions/{session_id}", status_code=204)
    async def remove(session_id: str) -> None:
        """Deletes the session for good (its log and saved outputs); 409 while a run of it
        goes on, here or in another process."""
        if not await runs.log.runs(session_id):
            raise RunNotFound(f"no session {session_id} in this store")
        if any(live.first.session_id == session_id for live in runs.live.values()):
            raise SessionBusy(f"session {session_id} has a run going on; stop it first")
        await runs.log.remove(session_id)

    @api.post("/runs/{run_id}/stop", status_code=202, dependencies=[Depends(known)])
    async def stop(run_id: str) -> dict[str, str]:
        runs.stop(run_id)
        return {"status": "stopping"}

    app.include_router(api)
    return app


def _status(runs: Runs, state: RunState) -> RunStatus:
    reason = state.finished.stop_reason if state.finished else None
    return _run_status(runs, state.run_id, state.session_id, reason)


def _indexed_status(runs: Runs, info: RunInfo) -> RunStatus:
    """A run's status from the index alone (a list does not fold every run's log)."""
    return _run_status(runs, info.run_id, info.session_id, info.stop_reason)


def _run_status(
    runs: Runs, run_id: str, session_id: str, stop_reason: StopReason | None
) -> RunStatus:
    if stop_reason is not None:
        return "waiting" if stop_reason is StopReason.WAITING else "finished"
    if (live := runs.live.get(run_id)) is not None:
        waits = live.state.awaiting() or live.state.unanswered()
        return "waiting" if waits else "running"
    return "running" if runs.log.journals.writing(session_id) else "interrupted"


def _view(state: RunState, status: RunStatus) -> RunView:
    finished = state.finished
    return RunView(
        run_id=state.run_id,
        session_id=state.session_id,
        goal=state.goal,
        status=status,
        stop_reason=finished.stop_reason if finished else None,
        detail=finished.detail if finished else "",
        answer=finished.final_answer if finished else None,
        steps=state.step,
        usage=state.usage,
        cost=state.cost,
        awaiting=[r.call.id for r in state.awaiting()] + [q.call_id for q in state.unanswered()],
    )


def _sse(event: StreamEvent) -> ServerSentEvent:
    if isinstance(event, SubagentEvent):  # {"subagent": [call ids], "event": {...}}
        inner = EVENT.dump_json(event.event).decode()
        return ServerSentEvent(
            raw_data=f'{{"subagent": {json.dumps(list(event.path))}, "event": {inner}}}'
        )
    data = EVENT.dump_json(event).decode()
    return ServerSentEvent(raw_data=data, id=str(event.seq) if journaled(event) else None)


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
