"""A past session told again to the editor that loads it (`session/load`): its conversation,
folded from the log, as the `session/update`s it was told as, and its todo list as the plan."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from pathlib import Path

from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from ..core._state import RunState
from ._tools import NOT_SHOWN
from ._turn import Send, announce, message, outcome, plan, thought, user


async def replay(state: RunState, goals: Sequence[str], send: Send, workspace: Path) -> None:
    """Tell the conversation of the session whose last run is `state` and whose runs were
    asked `goals`: every turn's messages (its history holds the earlier turns), then its
    todo list."""
    await tell(state.transcript(whole=True), goals, send, workspace)
    if state.todo:
        await send(plan(state.todo))


async def tell(
    messages: Sequence[Message], goals: Sequence[str], send: Send, workspace: Path
) -> None:
    """Tell `messages`: of the user messages, only the person's (the goals, in order), not
    what reins told the model in the user's place (a nudge, a budget notice)."""
    asked = deque(goals)
    calls: dict[str, str] = {}
    """The model's call ids to those told (a later turn may use a call id again)."""
    for index, item in enumerate(messages):
        match item:
            case SystemMessage():
                pass
            case UserMessage():
                goal = item.content or ", ".join(m.describe() for m in item.media)
                if asked and goal == asked[0]:
                    asked.popleft()
                    shown = [item.content, *(f"[{m.describe()}]" for m in item.media)]
                    await send(user("\n\n".join(s for s in shown if s)))
            case AssistantMessage():
                if item.thinking:
                    await send(thought(item.thinking))
                if item.text and not (item.tool_calls and item.text.lstrip().startswith("{")):
                    await send(message(item.text))  # (not a text model's JSON action)
                for call in item.tool_calls:
                    if call.name == "final_answer":
                        await send(message(str(call.arguments.get("answer", ""))))
                    elif call.name not in NOT_SHOWN:
                        calls[call.id] = f"{index}/{call.id}"
                        await send(announce(calls[call.id], call, workspace, running=True))
            case ToolResultMessage():
                if (told := calls.pop(item.call_id, None)) is not None:
                    await send(outcome(told, item.content, failed=item.is_error))
