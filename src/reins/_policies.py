"""Policies: small objects the loop consults at fixed hook points.

Each hook returns a verdict from a closed union, narrowed per hook:

    before_round    Continue | Inject | Stop          stage 1, before the model is asked
    after_response  Continue | Reject | Stop          stage 4, before the response is acted on
    on_final        Continue | Reject                 stage 4, before a final answer is accepted
    before_tool     Continue | Reject | Answer | Stop stage 5, before each tool call
    after_tools     Continue | Inject | Stop          stage 7, after a step's tools ran
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._messages import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec
from ._state import RunState
from ._stop import StopReason


@dataclass(frozen=True)
class Continue:
    """Go on as planned."""


@dataclass(frozen=True)
class Inject:
    """Tell the model something before it acts next."""

    text: str


@dataclass(frozen=True)
class Reject:
    """Refuse the response, final answer or tool call; the model sees `observation`."""

    observation: str


@dataclass(frozen=True)
class Stop:
    """End the run with `reason`."""

    reason: StopReason
    detail: str = ""


@dataclass(frozen=True)
class Answer:
    """Do not run the tool call; use `observation` as its result (a cache hit)."""

    observation: str


CONTINUE = Continue()

Verdict = Continue | Inject | Reject | Stop | Answer
BeforeRound = Continue | Inject | Stop
AfterResponse = Continue | Reject | Stop
OnFinal = Continue | Reject
BeforeTool = Continue | Reject | Answer | Stop
AfterTools = Continue | Inject | Stop


class Policy:
    """Base class: every hook continues. Override the hooks a policy needs."""

    @property
    def name(self) -> str:
        return type(self).__name__

    async def before_round(self, state: RunState) -> BeforeRound:
        return CONTINUE

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        return CONTINUE

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        return CONTINUE

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        return CONTINUE

    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        return CONTINUE


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


class StrictActions(Policy):
    """For models on the strict JSON action protocol: a reply that is not exactly one valid
    action is rejected with one specific repair message; after `MAX_REPAIRS` rejections in a
    row the run stops with `error`."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools = list(tools)

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if response.tool_calls:
            return CONTINUE
        from ._actions import MAX_REPAIRS, ActionError, parse_action, repair_message

        try:
            parse_action(response.text, self.tools)
        except ActionError as error:
            if state.rejections >= MAX_REPAIRS:
                return Stop(
                    StopReason.ERROR,
                    f"no valid action after {MAX_REPAIRS} repairs; last: {error.message}",
                )
            return Reject(repair_message(error, self.tools))
        return CONTINUE  # it parses after all (the model kept it as text): let it through


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
