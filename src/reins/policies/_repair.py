"""Replies that cannot be acted on: not one valid action, or nothing at all."""

from __future__ import annotations

from collections.abc import Sequence

from ..core._messages import AssistantMessage, ToolSpec
from ..core._policy import CONTINUE, AfterResponse, Policy, Reject, Stop
from ..core._state import RunState
from ..core._stop import StopReason

REPEAT_TEMPERATURE = 0.7
"""The temperature of the request after a repair that repeated the rejected reply."""


class StrictActions(Policy):
    """For models on the strict JSON action protocol: a reply that is not exactly one valid
    action is rejected with one specific repair message; after `MAX_REPAIRS` rejections in a
    row the run stops with `error`.

    A reply identical to the one just rejected means the model (deterministic at temperature
    0) did not take the repair in: it is told so, and the next request samples at
    `REPEAT_TEMPERATURE` at least, so it cannot come back the same."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools = tools  # the executor's list: it changes with the tools offered

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if response.tool_calls:
            return CONTINUE
        from ..core._actions import MAX_REPAIRS, ActionError, parse_action, repair_message

        try:
            parse_action(response.text, self.tools)
        except ActionError as error:
            if state.rejections >= MAX_REPAIRS:
                return Stop(
                    StopReason.ERROR,
                    f"no valid action after {MAX_REPAIRS} repairs; last: {error.message}",
                )
            if not _repeated(state, response):
                return Reject(repair_message(error, self.tools))
            again = (
                "You sent the same reply as before, which was rejected for the same reason. "
                "Do not repeat it: change it as follows.\n"
            )
            return Reject(again + repair_message(error, self.tools), REPEAT_TEMPERATURE)
        return CONTINUE  # it parses after all (the model kept it as text): let it through


def _repeated(state: RunState, response: AssistantMessage) -> bool:
    """The reply is the same as the one rejected just before."""
    if state.rejections == 0:
        return False
    earlier = (m for m in reversed(state.messages[:-1]) if isinstance(m, AssistantMessage))
    before = next(earlier, None)
    return before is not None and before.text == response.text


class EmptyReply(Policy):
    """A reply with no text and no tool call is not a final answer (a model that fell silent,
    a server that dropped the content): the model is told and asked to act, at most `repairs`
    times in a row; then the run stops with `error`."""

    def __init__(self, repairs: int = 2) -> None:
        self.repairs = repairs

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if response.tool_calls or response.text.strip():
            return CONTINUE
        if state.rejections >= self.repairs:
            return Stop(
                StopReason.ERROR,
                f"the model replied with nothing {state.rejections + 1} times in a row",
            )
        return Reject(
            "Your reply was empty: no text and no tool call. Act now: call a tool, or give "
            "your final answer."
        )
