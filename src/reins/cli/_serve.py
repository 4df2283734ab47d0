"""reins as an MCP server (`reins mcp serve`): other agents start runs and read sessions.

Tools: `run` (an agent run on a goal: its final answer, stop reason and ids), `sessions`
(the sessions and their runs) and `read_run` (a run's transcript, folded from its log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ..agent._agent import Agent
from ..core._errors import ReinsError
from ..core._messages import MESSAGES
from ..core._state import RunState
from ..store import EventLog, find_run, find_session

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def reins_server(make_agent: Callable[[int | None], Agent], log: EventLog) -> SDKServer:
    """An MCP server whose `run` tool runs the agent `make_agent(max_steps)` makes, recorded
    in `log`, which `sessions` and `read_run` read."""
    server = SDKServer(
        "reins",
        instructions="Runs reins agents on goals; every run is recorded and can be read back.",
    )

    @server.tool()
    async def run(
        goal: str,
        session_id: str | None = None,
        max_steps: Annotated[int, Field(ge=1)] | None = None,
    ) -> dict[str, Any]:
        """Run an agent on `goal` (a new session, or a new turn of `session_id`) until it
        answers or stops; return its final answer, stop reason and the run's id.

        Args:
            goal: What the agent should do.
            session_id: A session to continue with this goal as its next turn (its id, a
                unique prefix of one, or `last`).
            max_steps: Cap on the agent's model calls (default: the configured one).
        """
        try:
            agent = make_agent(max_steps)  # one that cannot be made: the client is told why
            if session_id is not None:
                session_id = find_session(await log.runs(), session_id)
            result = await agent.run(goal, session_id=session_id)
        except ReinsError as exc:  # the client is told it failed (is_error), and why
            raise ToolError(str(exc)) from None
        return {
            "run_id": result.run_id,
            "session_id": result.session_id,
            "stop_reason": result.stop_reason.value,
            "completed": result.stop_reason.value == "end_turn",
            "final_answer": result.final_answer,
            "detail": result.detail,
            "steps": result.steps,
        }

    @server.tool(annotations=READ_ONLY)
    async def sessions(limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first: run and session ids, goal, model, start and stop.

        Args:
            limit: How many runs at most.
        """
        runs = sorted(await log.runs(), key=lambda r: r.started_at, reverse=True)[:limit]
        return [
            {
                "run_id": r.run_id,
                "session_id": r.session_id,
                "goal": r.goal,
                "model": r.model,
                "started_at": r.started_at.isoformat(),
                "stop_reason": r.stop_reason.value if r.stop_reason else None,
            }
            for r in runs
        ]

    @server.tool(annotations=READ_ONLY)
    async def read_run(run_id: str) -> dict[str, Any]:
        """A run's transcript (every message) and how it ended, folded from its log.

        Args:
            run_id: A run id, a unique prefix of one, or `last`.
        """
        try:
            info = find_run(await log.runs(), run_id)
        except ReinsError as exc:
            raise ToolError(str(exc)) from None
        state = RunState.fold(await log.events(info.run_id))
        finished = state.finished
        return {
            "run_id": state.run_id,
            "session_id": state.session_id,
            "goal": state.goal,
            "messages": MESSAGES.dump_python(state.transcript(whole=True), mode="json"),
            "stop_reason": finished.stop_reason.value if finished else None,
            "final_answer": finished.final_answer if finished else None,
        }

    return server
