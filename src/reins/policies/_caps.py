"""The caps every run has: steps, and output cut off by the token limit."""

from __future__ import annotations

from ..core._messages import AssistantMessage
from ..core._policy import CONTINUE, AfterResponse, BeforeRound, Policy, Reject, Stop
from ..core._state import RunState
from ..core._stop import StopReason


class MaxSteps(Policy):
    """Stops the run before a model call past the cap recorded in the run's config."""

    async def before_round(self, state: RunState) -> BeforeRound:
        cap = state.config.max_steps
        if state.step >= cap:
            return Stop(StopReason.MAX_STEPS, f"reached the cap of {cap} steps")
        return CONTINUE


class MaxTokensRecovery(Policy):
    """A response cut off by the output-token limit is not acted on: its (truncated) tool calls
    are discarded and the model is asked to go on in smaller steps. After `recoveries` such
    requests in a row have failed, the run stops with `max_tokens`."""

    def __init__(self, recoveries: int = 2) -> None:
        self.recoveries = recoveries

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if state.cutoffs == 0:
            return CONTINUE
        if state.cutoffs > self.recoveries:
            return Stop(
                StopReason.MAX_TOKENS,
                f"the output was cut off by the token limit {state.cutoffs} times in a row",
            )
        return Reject(
            "Your reply was cut off: it reached the output-token limit, so it was not used "
            "(any tool call in it was incomplete). Continue in smaller steps: one short "
            "action at a time, and split a large write into several smaller actions "
            "(for example, write a file in parts with edit_file)."
        )
