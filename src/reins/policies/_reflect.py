"""The Reflective agent's REFLECT phase: after each step whose tools ran, a model call judges the
step and chooses what comes next.

The reflection is asked for as a call of one tool, `reflect`, with the tool choice forced: a
native-tools model answers with structured arguments, and the embedded model's decoding is
constrained by the grammar made from that tool's schema. A reply that is text anyway is parsed
tolerantly (`parse_reflection`). What it decides takes effect through the fold of its
`reflected` event (`RunState`): a failure counts an attempt and tells the model the revised
approach, a new plan is told, `complete` makes its reasoning the answer (still subject to the
final-answer policies), a success resets the count.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, cast, get_args

from ..core._cancel import Cancel
from ..core._errors import StoreError
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ..core._model import Model, ModelSettings, ensure_requests_allowed
from ..core._policy import (
    CONTINUE,
    Assessment,
    BeforeRound,
    NextAction,
    Policy,
    Reflect,
    Reflection,
    Stop,
)
from ..core._state import REFLECTION_TAG, RunState
from ..core._stop import StopReason

OBSERVATION_CHARS = 500
"""Of each tool result, what the reflection prompt shows."""
FAILED_NOTE = f"{REFLECTION_TAG} the last step failed"
"""How the model is told of a failed step (the loop guard starts afresh at it)."""

REFLECT_TOOL = ToolSpec(
    name="reflect",
    description="Record your judgement of the agent's last step and what it should do next.",
    parameters={
        "type": "object",
        "properties": {
            "assessment": {"type": "string", "enum": list(get_args(Assessment))},
            "reasoning": {"type": "string"},
            "next_action": {"type": "string", "enum": list(get_args(NextAction))},
            "revised_approach": {"type": "string"},
        },
        "required": ["assessment", "reasoning", "next_action", "revised_approach"],
        "additionalProperties": False,
    },
)

INSTRUCTIONS = """\
You review one step of an AI agent that works on a goal with tools. From the tool results, \
judge whether the step did what it was meant to, then choose what the agent does next. Call \
the reflect tool with:
- assessment: success (the step worked), failure (it failed or went wrong), partial (it \
worked in part), or unknown;
- reasoning: one or two sentences, citing the results;
- next_action: continue (go on with the plan), retry (try the failed step again, differently), \
change_plan (this approach will not work), or complete (the whole goal is achieved and \
nothing is left to do; then reasoning is the answer to give the user);
- revised_approach: for retry or change_plan, concretely what to do instead; else empty."""

REFLECT_MAX_TOKENS = 512


class Reflective(Policy):
    """Reflects on each step whose tools ran, before the next round (so a resumed run reflects
    on a step whose reflection a crash cut off); stops the run (`stalled`) once `max_retries`
    reflections in a row judged their step a failure."""

    @property
    def name(self) -> str:
        return "reflection"

    def __init__(
        self, model: Model, settings: ModelSettings, cancel: Cancel, max_retries: int = 3
    ) -> None:
        self.model = model
        # A forced call of `reflect`, short; extended thinking keeps its own cap.
        self.settings = replace(
            settings,
            tool_choice="required",
            max_tokens=settings.max_tokens if settings.thinking_budget else REFLECT_MAX_TOKENS,
        )
        self.cancel = cancel
        self.max_retries = max_retries

    async def before_round(self, state: RunState) -> BeforeRound:
        if state.reflected < state.acted:
            return await self._reflect(state)
        if state.failed_attempts >= self.max_retries:
            return Stop(
                StopReason.STALLED,
                f"the reflection judged {state.failed_attempts} steps in a row failed "
                f"(max_retries {self.max_retries})",
            )
        return CONTINUE

    async def _reflect(self, state: RunState) -> BeforeRound:
        ensure_requests_allowed(self.model)
        messages: list[Message] = [
            SystemMessage(content=INSTRUCTIONS),
            UserMessage(content=step_report(state)),
        ]
        try:
            response = await self.cancel.race(
                self.model.request(messages, [REFLECT_TOOL], self.settings)
            )
        except StoreError:
            raise
        except Exception as exc:  # like a failed model call: the run stops, resumably
            detail = f"the reflection call failed: {type(exc).__name__}: {exc}"
            return Stop(StopReason.ERROR, detail)
        if response is None:
            return Stop(StopReason.CANCELLED, "cancelled while reflecting")
        reflection = parse_reflection(response.message)
        return Reflect(
            step=state.acted,
            reflection=reflection,
            to_model=self.told(reflection, state.failed_attempts),
            response=response,
        )

    def told(self, reflection: Reflection, failed_before: int) -> str:
        """What the model is told of a reflection: one `[Reflection: …]` block, or nothing."""
        reasoning = _plain(reflection.reasoning)
        approach = _plain(reflection.revised_approach)
        if reflection.assessment == "failure":
            attempt = f"attempt {failed_before + 1} of {self.max_retries}"
            then = approach or "try a different approach"
            return f"{FAILED_NOTE} ({attempt}). {reasoning} Revised approach: {then}]"
        if reflection.next_action == "change_plan":
            return f"{REFLECTION_TAG} change of plan. {reasoning} New plan: {approach}]"
        if reflection.next_action == "retry":
            return f"{REFLECTION_TAG} retry. {reasoning} {approach}]".replace(" ]", "]")
        return ""


def step_report(state: RunState) -> str:
    """The goal, and the last step as the reflection sees it: the thought, each call and its
    result (cut to `OBSERVATION_CHARS`)."""
    thought, lines = "", []
    calls: dict[str, Any] = {}
    for message in reversed(state.messages):
        if isinstance(message, ToolResultMessage):
            lines.append(message)
        elif isinstance(message, AssistantMessage):
            thought = message.text
            calls = {call.id: call for call in message.tool_calls}
            break
    parts = [f"Goal:\n{state.goal}\n", f"The agent's step {state.acted}:"]
    if thought.strip():
        parts.append(f"Thought: {thought.strip()[:OBSERVATION_CHARS]}")
    for result in reversed(lines):
        call = calls.get(result.call_id)
        arguments = json.dumps(call.arguments, ensure_ascii=False) if call else "{}"
        if len(arguments) > 200:
            arguments = arguments[:197] + "..."
        content = result.content
        if len(content) > OBSERVATION_CHARS:
            content = content[:OBSERVATION_CHARS] + f"… [{len(result.content) - 500} more chars]"
        status = "error" if result.is_error else "ok"
        parts.append(f"- {result.name}({arguments}) -> {status}:\n{content}")
    parts.append("\nJudge this step: call reflect.")
    return "\n".join(parts)


_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")


def parse_reflection(message: AssistantMessage) -> Reflection:
    """A reflection from a reply, however it came: the `reflect` call's arguments, or text
    holding JSON (fences stripped, the outermost braces), or fields found one by one; what is
    missing or unknown reads as `unknown` / `continue`."""
    fields: dict[str, Any] = {}
    if message.tool_calls:
        fields = dict(message.tool_calls[0].arguments)
    else:
        text = _FENCE.sub("", message.text)
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                found = json.loads(text[start : end + 1])
            except ValueError:
                found = None
            if isinstance(found, dict):
                fields = found
        if not fields:
            fields = _fields(text)
    assessment = str(fields.get("assessment", "")).strip().lower()
    next_action = str(fields.get("next_action", "")).strip().lower().replace(" ", "_")
    return Reflection(
        assessment=cast(Assessment, assessment)
        if assessment in get_args(Assessment)
        else "unknown",
        reasoning=str(fields.get("reasoning") or "").strip(),
        next_action=cast(NextAction, next_action)
        if next_action in get_args(NextAction)
        else "continue",
        revised_approach=str(fields.get("revised_approach") or "").strip(),
    )


def _fields(text: str) -> dict[str, str]:
    """Fields written as `name: value` or `"name": "value"`, one by one."""
    found: dict[str, str] = {}
    for name in ("assessment", "reasoning", "next_action", "revised_approach"):
        quoted = re.search(rf'"?{name}"?\s*[:=]\s*"((?:[^"\\]|\\.)*)"', text, re.IGNORECASE)
        bare = quoted or re.search(rf"\b{name}\b\s*[:=]\s*([^\n,}}]+)", text, re.IGNORECASE)
        if bare:
            found[name] = bare.group(1).strip().strip("\"'")
    return found


def _plain(text: str) -> str:
    """Text inside a `[Reflection: …]` block: no brackets of its own to end it early."""
    return text.replace("[", "(").replace("]", ")").strip()
