"""What the API shows of runs and sessions: a run's view and status, a page of sessions."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from ..core._log import RunInfo
from ..core._messages import Message, Usage
from ..core._state import RunState
from ..core._stop import StopReason

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
    max_steps: int
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


def run_status(
    stop_reason: StopReason | None, *, live: RunState | None, written: bool
) -> RunStatus:
    """A run's status from how it stopped (none yet), its live state if it goes on in this
    server, and whether another process writes its session now."""
    if stop_reason is not None:
        return "waiting" if stop_reason is StopReason.WAITING else "finished"
    if live is not None:
        return "waiting" if live.awaiting() or live.unanswered() else "running"
    return "running" if written else "interrupted"


def run_view(state: RunState, status: RunStatus) -> RunView:
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
        max_steps=state.config.max_steps,
        usage=state.usage,
        cost=state.cost,
        awaiting=[r.call.id for r in state.awaiting()] + [q.call_id for q in state.unanswered()],
    )


def session_row(runs: list[RunInfo], status: RunStatus) -> SessionRow:
    return SessionRow(
        session_id=runs[0].session_id,
        goal=runs[0].goal,
        runs=len(runs),
        last_run_id=runs[-1].run_id,
        last_status=status,
        started_at=runs[-1].started_at,
    )
