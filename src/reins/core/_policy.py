"""Policies: small objects the loop consults at fixed hook points (the implementations are in
`reins.policies`; the hooks and their verdicts live here, with the loop that handles them).

Each hook returns a verdict from a closed union, narrowed per hook:

    before_round    Continue | Inject | Reflect | Stop
                                                      stage 1, before the model is asked
                                                      (Reflect: a judged step, recorded)
    after_response  Continue | Reject | Stop          stage 4, before the response is acted on
    on_final        Continue | Verified | Reject | Replace | Stop
                                                      stage 4, before a final answer is accepted
                                                      (Replace: accepted, as this text)
    before_tool     Continue | Rewrite | Reject | Replace | Stop
                                                      stage 5, before each tool call
                                                      (Rewrite: run it with other arguments)
    after_tools     Continue | Inject | Stop          stage 7, after a step's tools ran

A `Continue` from `before_round`, `before_tool` or `after_tools` may carry a `note`: the loop
records it (a warning for the user, not the model), as a command hook that failed and was
passed over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._messages import AssistantMessage, ToolCall, ToolResultMessage
from ._state import RunState
from ._stop import StopReason

if TYPE_CHECKING:
    from ._model import ModelResponse

Assessment = Literal["success", "failure", "partial", "unknown"]
NextAction = Literal["continue", "change_plan", "complete", "retry"]


@dataclass(frozen=True, kw_only=True)
class Reflection:
    """A reflection's judgement of a step: how it went, why, and what to do next (go on,
    retry, change approach, or finish), with a revised approach if one is needed."""

    assessment: Assessment
    reasoning: str
    next_action: NextAction
    revised_approach: str = ""


@dataclass(frozen=True)
class Continue:
    """Go on as planned; a `note` is recorded as a warning, not told to the model (from
    `before_round`, `before_tool` and `after_tools`)."""

    note: str = ""


@dataclass(frozen=True)
class Inject:
    """Tell the model something before it acts next."""

    text: str
    mark: str = ""
    """A budget mark the notice passes, recorded with it (`RunState.marks`)."""


@dataclass(frozen=True)
class Reject:
    """Refuse the response, final answer or tool call; the model sees `observation`."""

    observation: str
    temperature: float | None = None
    """From `after_response`: sample the next request at this temperature (at least), so a
    deterministic model does not send the rejected reply again."""
    excluded_tools: tuple[str, ...] = ()
    """From `after_response`: tools the next reply may not call (`ModelSettings`)."""
    argument_schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """From `after_response`: for the next reply, schemas that replace some arguments' of a
    tool, by tool and argument (`ModelSettings.argument_schemas`)."""


@dataclass(frozen=True)
class Stop:
    """End the run with `reason`."""

    reason: StopReason
    detail: str = ""


@dataclass(frozen=True)
class Replace:
    """Do not run the tool call; use `observation` as its result (a cache hit). From
    `on_final`: accept the final answer as `observation` (a cleaned-up answer)."""

    observation: str


@dataclass(frozen=True)
class Verified:
    """The final answer passed this policy; each line of `evidence` is recorded (a notice)
    before the run finishes."""

    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Rewrite:
    """From `before_tool`: run `call` (the same id, other arguments, valid for its tool) in
    place of the model's; the later policies and the permissions judge it, and its start is
    recorded with `changed_by` (the policy's name) and `note`."""

    call: ToolCall
    note: str


@dataclass(frozen=True, kw_only=True)
class Reflect:
    """A reflection on step `step` (the Reflective agent), to be recorded: its fold tells the
    model `to_model` and acts on the judgement."""

    step: int
    reflection: Reflection
    to_model: str
    response: ModelResponse


CONTINUE = Continue()

Verdict = Continue | Inject | Reflect | Rewrite | Reject | Stop | Replace | Verified
BeforeRound = Continue | Inject | Reflect | Stop
AfterResponse = Continue | Reject | Stop
OnFinal = Continue | Verified | Reject | Replace | Stop
BeforeTool = Continue | Rewrite | Reject | Replace | Stop
AfterTools = Continue | Inject | Stop


class Policy:
    """Base class: every hook continues. Override the hooks a policy needs."""

    @property
    def name(self) -> str:
        return type(self).__name__

    async def before_round(self, state: RunState) -> BeforeRound:
        """Before each model call: go on, tell the model something first (`Inject`), or stop
        the run (`Stop`)."""
        return CONTINUE

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        """After each reply, before its tool calls run: accept it, send it back with an
        observation (`Reject`), or stop."""
        return CONTINUE

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        """Before a final answer ends the run: accept it (`Verified` with evidence), reject it
        with what is missing, replace it (`Replace`), or stop."""
        return CONTINUE

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        """Before each tool call runs: run it, run it with other arguments (`Rewrite`), refuse
        it with an observation (`Reject`), answer it without running it (`Replace`), or stop."""
        return CONTINUE

    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        """After a step's tool calls ran: go on, tell the model something with the results
        (`Inject`), or stop."""
        return CONTINUE
