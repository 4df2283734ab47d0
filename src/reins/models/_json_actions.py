"""The strict JSON action protocol as a model sees it: a text-only chat in which every reply is
one `{"name", "arguments"}` object. History is flattened to text; replies are parsed back into
tool calls. A reply that does not parse stays text, for the `StrictActions` policy to reject."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._actions import ENVELOPE, ActionError, parse_action
from .._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

RULES = """\
You act by replying with exactly one JSON object and nothing else:
{envelope}
No prose before or after it. One action per reply; you will see its result, then act again.
When the task is done, call final_answer with your answer.
Tools:
{tools}"""


def action_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A JSON schema that only valid actions satisfy, for constrained decoding."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": tool.parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for tool in tools
        ]
    }


def chat(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """The conversation as plain role/content messages, the rules in the system message."""
    listing = "\n".join(
        f"- {t.name}: {t.description.splitlines()[0] if t.description else ''} "
        f"arguments: {json.dumps(t.parameters.get('properties', {}))}"
        for t in tools
    )
    rules = RULES.format(envelope=ENVELOPE, tools=listing)
    out: list[dict[str, str]] = []
    for message in messages:
        match message:
            case SystemMessage():
                out.append({"role": "system", "content": f"{message.content}\n\n{rules}"})
            case UserMessage():
                out.append({"role": "user", "content": message.content})
            case AssistantMessage():
                out.append({"role": "assistant", "content": _as_text(message)})
            case ToolResultMessage():
                label = "Error from" if message.is_error else "Result of"
                out.append(
                    {"role": "user", "content": f"{label} {message.name}: {message.content}"}
                )
    if not out or out[0]["role"] != "system":
        out.insert(0, {"role": "system", "content": rules})
    return out


def reply(text: str, tools: Sequence[ToolSpec]) -> AssistantMessage:
    """A reply parsed into one tool call (its id is given by the loop), or kept as text."""
    try:
        action = parse_action(text, tools)
    except ActionError:
        return AssistantMessage(text=text)
    return AssistantMessage(tool_calls=(action.to_call(""),))


def _as_text(message: AssistantMessage) -> str:
    if not message.tool_calls:
        return message.text
    call = message.tool_calls[0]
    return json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
