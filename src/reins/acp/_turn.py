"""A prompt's run told to the editor as it goes: its events become `session/update`s, and its
stop reason the prompt's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeAlias, assert_never

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from acp.schema import StopReason as ACPStopReason

from ..core._events import (
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    Checkpoint,
    ContextCompacted,
    FilesRestored,
    ForkedFrom,
    MemoryUpdated,
    ModelRequested,
    ModelResponded,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    Reflected,
    ResponseRejected,
    RunFinished,
    RunResumed,
    RunStarted,
    Steered,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    TodoItem,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from ..core._messages import ToolCall
from ..core._stop import StopReason
from ._tools import NOT_SHOWN, kind_of, locations_of, plan_of, text_content, title_of

Update: TypeAlias = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)
Send: TypeAlias = Callable[[Update], Awaitable[None]]
"""Sends one `session/update` of the session."""


def call_id(run_id: str, call: str) -> str:
    """A tool call's id in the editor's session: the run's and the model's (which a later
    turn may use again)."""
    return f"{run_id}/{call}"


def message(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
    )


def thought(text: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=text)
    )


def user(text: str) -> UserMessageChunk:
    return UserMessageChunk(
        session_update="user_message_chunk", content=TextContentBlock(type="text", text=text)
    )


def plan(items: tuple[TodoItem, ...]) -> AgentPlanUpdate:
    return AgentPlanUpdate(session_update="plan", entries=plan_of(items))


def announce(tool_call_id: str, call: ToolCall, workspace: Path, *, running: bool) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=tool_call_id,
        title=title_of(call),
        kind=kind_of(call.name),
        status="in_progress" if running else "pending",
        raw_input=dict(call.arguments),
        locations=locations_of(call, workspace),
    )


def outcome(tool_call_id: str, text: str, *, failed: bool) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_call_id,
        status="failed" if failed else "completed",
        content=text_content(text),
        raw_output=text,
    )


STOP_REASONS: dict[StopReason, ACPStopReason] = {
    StopReason.END_TURN: "end_turn",
    StopReason.CANCELLED: "cancelled",
    StopReason.MAX_STEPS: "max_turn_requests",
    StopReason.TIME_BUDGET: "max_turn_requests",
    StopReason.COST_BUDGET: "max_turn_requests",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.TOKEN_BUDGET: "max_tokens",
    StopReason.REFUSAL: "refusal",
    # No word for these in ACP: the turn ended, and its last message says why.
    StopReason.MISSING_EVIDENCE: "end_turn",
    StopReason.STALLED: "end_turn",
    StopReason.ERROR: "end_turn",
    StopReason.WAITING: "end_turn",
}


class Turn:
    """One prompt's run as the editor sees it: the reply's text and thinking as they stream,
    each tool call (announced with the reply that makes it, then running, then its output),
    the todo list as the plan, and why the run stopped if it did not simply answer."""

    def __init__(self, send: Send, workspace: Path) -> None:
        self._send = send
        self._workspace = workspace
        self.run_id = ""
        self.finished: RunFinished | None = None
        self._said = ""
        """The reply text told in this run (the final answer is not told twice)."""
        self._streamed = False
        self._thought = False
        self._held = ""
        """The start of a reply that may be a JSON action (a text-only model's tool call):
        told only if it turns out not to be one."""
        self._open: dict[str, ToolCall] = {}
        """Calls announced that have no result yet."""

    @property
    def stop_reason(self) -> ACPStopReason:
        if self.finished is None:  # the run ended without its last event: it was interrupted
            return "cancelled"
        return STOP_REASONS[self.finished.stop_reason]

    async def show(self, event: StreamEvent) -> None:
        match event:
            case SubagentEvent():
                pass  # the child's own run has it; its result is the spawn call's output
            case RunStarted():
                self.run_id = event.run_id
            case ModelRequested():
                self._streamed, self._thought, self._held = False, False, ""
            case ThinkingDelta():
                self._thought = True
                await self._send(thought(event.text))
            case TextDelta():
                await self._text(event.text)
            case ModelResponded():
                await self._responded(event)
            case ToolCallStarted():
                await self._started(event.call)
            case ToolCallFinished():
                await self._finished_call(event)
            case ResponseRejected():
                await self._close_open(f"not run: {event.source} rejected the reply")
            case AnswerRejected():
                await self._send(thought(f"\n[{event.source}] {event.observation}\n"))
            case Notice(level="warning"):
                await self._send(thought(f"\n[{event.source}] {event.text}\n"))
            case RunFinished():
                await self._close_open(f"not run: the run stopped ({event.stop_reason.value})")
                await self._end(event)
            case (
                RunResumed()
                | BudgetExtended()
                | ForkedFrom()
                | Checkpoint()
                | FilesRestored()
                | MemoryUpdated()
                | ApprovalRequested()  # the approval handler asks the editor
                | PermissionDecided()  # a denial is the call's output
                | Reflected()
                | Steered()
                | ContextCompacted()
                | Notice()
                | QuestionAsked()
                | QuestionAnswered()
                | ToolsChanged()
            ):
                pass
            case _:
                assert_never(event)

    async def _text(self, text: str) -> None:
        if not self._streamed:
            text = self._held + text
            if text.lstrip()[:1] in ("{", ""):  # maybe a JSON action: held
                self._held = text
                return
            self._held = ""
        self._streamed = True
        self._said += text
        await self._send(message(text))

    async def _responded(self, event: ModelResponded) -> None:
        reply = event.message
        if reply.thinking and not self._thought:
            await self._send(thought(reply.thinking))
        text = ""
        if self._held and not reply.tool_calls:
            text = self._held  # it was not an action after all
        elif reply.text and not self._streamed and not self._held:
            text = reply.text
        if text:
            self._said += text
            await self._send(message(text))
        for call in reply.tool_calls:
            if call.name not in NOT_SHOWN:
                self._open[call.id] = call
                tool_call_id = call_id(event.run_id, call.id)
                await self._send(announce(tool_call_id, call, self._workspace, running=False))

    async def _started(self, call: ToolCall) -> None:
        if call.name in NOT_SHOWN:
            return
        tool_call_id = call_id(self.run_id, call.id)
        if call.id not in self._open:  # parsed out of a text reply, or resumed
            self._open[call.id] = call
            await self._send(announce(tool_call_id, call, self._workspace, running=True))
            return
        self._open[call.id] = call
        await self._send(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=tool_call_id,
                status="in_progress",
                raw_input=dict(call.arguments),  # as they ran (a hook may have changed them)
            )
        )

    async def _finished_call(self, event: ToolCallFinished) -> None:
        result = event.result
        if result.name in NOT_SHOWN:
            return
        tool_call_id = call_id(self.run_id, result.call_id)
        if self._open.pop(result.call_id, None) is None:  # answered before it was announced
            call = ToolCall(id=result.call_id, name=result.name)
            await self._send(announce(tool_call_id, call, self._workspace, running=True))
        await self._send(outcome(tool_call_id, result.content, failed=result.is_error))
        if event.todo is not None:
            await self._send(plan(event.todo))

    async def _close_open(self, why: str) -> None:
        for call in list(self._open):
            del self._open[call]
            await self._send(outcome(call_id(self.run_id, call), why, failed=True))

    async def _end(self, event: RunFinished) -> None:
        self.finished = event
        answer = (event.final_answer or "").strip()
        told = ""
        if event.stop_reason is StopReason.END_TURN:
            if answer and answer not in self._said:
                told = answer
        elif event.stop_reason is not StopReason.CANCELLED:
            why = event.stop_reason.value.replace("_", " ")
            told = f"(reins stopped: {why}{': ' + event.detail if event.detail else ''})"
            if answer:
                told = f"{answer}\n\n{told}"
        if told:
            await self._send(message(f"\n\n{told}" if self._said.strip() else told))
