"""`ACPAgent`: reins behind the Agent Client Protocol's agent side. An editor's session is a
reins session (the same id), in the folder the editor gives, recorded in the store
`log_of(folder)` opens, with the agent `make_agent` builds for it; a prompt is a run (a turn of
the session), told to the editor as `session/update`s; an approval is the editor's
`session/request_permission`.

`ask_user` is not offered: ACP has no stable way to ask the person a question (elicitation is
an unstable draft)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ToolCallUpdate,
)
from pydantic import ValidationError

from ..agent import Agent
from ..core._approval import Approval, ApprovalHandler, ApprovalRequest
from ..core._cancel import Cancel
from ..core._errors import ReinsError, UsageError
from ..core._events import RunStarted
from ..core._ids import new_session_id
from ..core._log import EventLog
from ..core._state import RunState
from ..mcp import MCPServerConfig
from ._prompt import Block, EditorServer, goal_of, servers_of
from ._replay import replay
from ._tools import kind_of, text_content, title_of
from ._turn import Send, Turn, Update, call_id

_logger = logging.getLogger(__name__)

INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603

ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow", "allow_always", "reject"
ANSWERS = {ALLOW_ONCE: Approval(True), ALLOW_ALWAYS: Approval(True, always=True)}
"""The editor's choice (an option's id) as the run's answer; any other is a denial."""

SHUTDOWN_S = 10.0
"""How long the runs going on may take to end, cancelled, when the editor goes away."""


@dataclass(frozen=True, kw_only=True)
class SessionSetup:
    """What an editor's session needs of the agent that runs its prompts."""

    workspace: Path
    """The editor's folder: the tools work there."""
    log: EventLog
    """The store its runs are recorded in (`log_of(workspace)`)."""
    approval: ApprovalHandler
    """Asks the editor (`session/request_permission`)."""
    mcp_servers: tuple[MCPServerConfig, ...] = ()
    """The MCP servers the editor passed for the session."""


AgentFactory = Callable[[SessionSetup], Agent]
LogOpener = Callable[[Path], EventLog]

P = ParamSpec("P")
T = TypeVar("T")


def _answered(method: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """A request the editor gets an answer to: reins' errors become JSON-RPC errors (one
    line: what was wrong), never a traceback."""

    @functools.wraps(method)
    async def answer(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(*args, **kwargs)
        except UsageError as exc:
            raise RequestError(INVALID_PARAMS, str(exc)) from None
        except ReinsError as exc:
            raise RequestError(INTERNAL_ERROR, str(exc)) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RequestError(INVALID_PARAMS, f"{where}: {first['msg']}") from None

    return answer


@dataclass(eq=False)
class _Session:
    id: str
    workspace: Path
    agent: Agent
    begun: bool
    """It has a run in the log (else its first prompt begins it, with this id)."""
    cancel: Cancel | None = None
    """The prompt going on (None: none)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the prompt going on."""


class ACPAgent:
    """The agent side of ACP over reins (`acp.Agent`): give it to the SDK's
    `AgentSideConnection` (or `reins.acp.serve`)."""

    def __init__(self, make_agent: AgentFactory, log_of: LogOpener) -> None:
        self._make_agent = make_agent
        self._log_of = log_of
        self._client: Client | None = None
        self._sessions: dict[str, _Session] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @_answered
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        try:
            reins = version("reins")
        except PackageNotFoundError:  # pragma: no cover - a source tree not installed
            reins = "0"
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="reins", title="reins", version=reins),
            auth_methods=[],
        )

    @_answered
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Sequence[EditorServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session = self._open(new_session_id(), _folder(cwd), mcp_servers or (), begun=False)
        return NewSessionResponse(session_id=session.id)

    @_answered
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[EditorServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        workspace = _folder(cwd)
        log = self._log_of(workspace)
        runs = await log.runs(session_id)
        if not runs:
            raise UsageError(f"no session {session_id} in the store of {workspace}")
        if (held := self._sessions.get(session_id)) is not None and held.lock.locked():
            raise UsageError(f"session {session_id} has a prompt going on")
        session = self._open(session_id, workspace, mcp_servers or (), begun=True)
        state = RunState.fold(await log.events(runs[-1].run_id))
        await replay(state, [r.goal for r in runs], self._sender(session.id), workspace)
        return LoadSessionResponse()

    @_answered
    async def prompt(
        self, prompt: Sequence[Block], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        session = self._session(session_id)
        if session.lock.locked() and not (session.cancel and session.cancel.is_set):
            raise UsageError(f"session {session_id} has a prompt going on: cancel it first")
        async with session.lock:  # a prompt after a cancel waits for the cancelled run's end
            goal = goal_of(prompt, session.workspace)
            cancel = session.cancel = Cancel()
            turn = Turn(self._sender(session.id), session.workspace)
            run = session.agent.iter(
                goal, session_id=session.id, cancel=cancel, new_session=not session.begun
            )
            try:
                async with contextlib.aclosing(run):
                    async for event in run:
                        if isinstance(event, RunStarted):
                            session.begun = True
                        await turn.show(event)
            finally:
                session.cancel = None
        return PromptResponse(stop_reason=turn.stop_reason)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            _logger.warning("session/cancel of %s: no such session here", session_id)
        elif session.cancel is not None:
            session.cancel.cancel()  # the run ends cancelled; its prompt answers so

    async def approval(self, request: ApprovalRequest) -> Approval:
        """The agents' approval handler: the editor's person chooses (allow once, allow
        always when the rule lets an answer hold for the session, reject)."""
        options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once")]
        if request.grant and not request.each_time:
            options.append(
                PermissionOption(
                    option_id=ALLOW_ALWAYS,
                    name=f"Always allow {request.grant}",
                    kind="allow_always",
                )
            )
        options.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
        call = request.call
        asked = ToolCallUpdate(
            tool_call_id=call_id(request.run_id, call.id),
            title=title_of(call),
            kind=kind_of(call.name),
            status="pending",
            raw_input=dict(call.arguments),
            content=text_content(f"{request.describe()}\n\n({request.rule})"),
        )
        if self._client is None:
            return Approval(False, by="headless")
        try:
            answer = await self._client.request_permission(
                session_id=request.session_id, tool_call=asked, options=options
            )
        except (RequestError, ConnectionError) as exc:  # nobody could be asked: denied
            _logger.warning("the editor did not answer the approval of %s: %s", call.name, exc)
            return Approval(False, by="headless")
        chosen = answer.outcome
        if isinstance(chosen, AllowedOutcome):
            return ANSWERS.get(chosen.option_id, Approval(False))
        return Approval(False)  # the prompt was cancelled

    async def close(self) -> None:
        """The editor went away: every run going on ends cancelled (recorded so)."""
        sessions = list(self._sessions.values())
        for session in sessions:
            if session.cancel is not None:
                session.cancel.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SHUTDOWN_S):
                for session in sessions:
                    async with session.lock:
                        pass

    def _open(
        self, session_id: str, workspace: Path, servers: Sequence[EditorServer], *, begun: bool
    ) -> _Session:
        setup = SessionSetup(
            workspace=workspace,
            log=self._log_of(workspace),
            approval=self.approval,
            mcp_servers=tuple(servers_of(servers)),
        )
        session = _Session(session_id, workspace, self._make_agent(setup), begun=begun)
        self._sessions[session_id] = session
        return session

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise UsageError(f"no session {session_id} here: session/new or session/load it")
        return session

    def _sender(self, session_id: str) -> Send:
        async def send(update: Update) -> None:
            if self._client is None:
                return
            with contextlib.suppress(ConnectionError):  # gone: the run still ends recorded
                await self._client.session_update(session_id=session_id, update=update)

        return send


def _folder(cwd: str) -> Path:
    """The session's folder: absolute (ACP's rule) and a directory."""
    path = Path(cwd)
    if not path.is_absolute():
        raise UsageError(f"cwd {cwd!r} is not an absolute path")
    if not path.is_dir():
        raise UsageError(f"cwd {cwd} is not a folder")
    return Path(os.path.realpath(path))
