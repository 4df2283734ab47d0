"""The strict JSON action protocol as a model sees it: a text-only chat in which every reply is
one `{"name", "arguments"}` object. History is flattened to text; replies are parsed back into
tool calls. A reply that does not parse stays text, for the `StrictActions` policy to reject."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core._actions import ENVELOPE, ActionError, parse_action
from ..core._messages import (
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
No prose before or after it: think in "thought", in a sentence or two (what the last result
tells you, what is still to do). One action per reply; you will see its result, then act again.
When the task is done, call final_answer with your answer.
Tools:
{tools}"""

THOUGHT_CHARS = 200
MIN_THOUGHT_BUDGET = 400
"""The grammar's cap on a thought: room for a short reasoning step (small models count and
add better when they write the items out first), not for an essay before every action."""


MIN_STRING = 16
"""The fewest characters a capped string may still hold."""
MAX_STRING = 512
"""The most: llama.cpp refuses (and its sampler then crashes on) a grammar whose string
repeats more than about a thousand times. A longer text takes several actions."""
MAX_ITEMS = 8
"""The cap on a list whose schema sets none."""
SCALAR = 24
"""Characters a number (at most 16 digits in llama.cpp's JSON grammar), boolean or null takes."""


def action_schema(
    tools: Sequence[ToolSpec],
    max_chars: int | None = None,
    arguments: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A JSON schema that only valid actions satisfy, for constrained decoding.

    With `max_chars`, every action also fits in that many characters: the free-text arguments
    of a tool share what its other arguments leave (up to `MAX_STRING` characters each), and
    lists get at most `MAX_ITEMS` items.
    A token is at least one character (of ASCII text), so with `max_chars` = the output-token
    cap no action is cut off, however the model loops inside a string.

    Every action starts with a thought (required here, optional to the parser): a model held
    to JSON has nowhere else to reason before it acts.

    `arguments`, by tool and argument: schemas that replace those of the tool's parameters,
    made required (a repair holding an edit to the file it failed on)."""
    chars = thought_cap(max_chars)
    thought = {"thought": {"type": "string", "maxLength": chars}} if chars else {}
    # the rest of the envelope: {"thought": "", "name": "", "arguments": }
    room = None if max_chars is None else max_chars - 30 - (chars + 15 if chars else 0)
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    **thought,
                    "name": {"const": tool.name},
                    "arguments": parameters
                    if room is None
                    else _fit(parameters, room - len(tool.name)),
                },
                "required": [*thought, "name", "arguments"],
                "additionalProperties": False,
            }
            for tool in tools
            for parameters in [_held(tool.parameters, (arguments or {}).get(tool.name))]
        ]
    }


def _held(parameters: dict[str, Any], arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """`parameters` with the schemas of `arguments` in place of those arguments' own."""
    if not arguments:
        return parameters
    properties = {**parameters.get("properties", {}), **arguments}
    required = list(dict.fromkeys([*parameters.get("required", []), *arguments]))
    return {**parameters, "properties": properties, "required": required}


def thought_cap(max_chars: int | None) -> int:
    """The longest thought: `THOUGHT_CHARS`, or a fifth of a smaller budget (the arguments get
    the rest); none at all below `MIN_THOUGHT_BUDGET`, where the action needs every character."""
    if max_chars is None:
        return THOUGHT_CHARS
    return min(THOUGHT_CHARS, max_chars // 5) if max_chars >= MIN_THOUGHT_BUDGET else 0


def _fit(schema: dict[str, Any], chars: int) -> dict[str, Any]:
    """Caps such that the longest value fits in `chars`: strings share what the rest leaves,
    lists shrink before strings get shorter than `MIN_STRING`. If even that does not fit, the
    caps stay at those floors (a cut-off action is then still possible)."""
    items = MAX_ITEMS
    while True:
        fixed, free = _size(schema, items)
        per_string = (chars - fixed) // free if free else MIN_STRING
        if per_string >= MIN_STRING or items == 1:
            per_string = min(max(per_string, MIN_STRING), MAX_STRING)
            capped: dict[str, Any] = _cap(schema, per_string, items)
            return capped
        items //= 2


def _size(schema: Any, items: int) -> tuple[int, int]:
    """At the longest, lists at `items` items: the characters of a value but for its uncapped
    strings, and how many of those it has."""
    if not isinstance(schema, dict):
        return SCALAR, 0
    if "const" in schema:
        return len(json.dumps(schema["const"])), 0
    if "enum" in schema:
        return max((len(json.dumps(v)) for v in schema["enum"]), default=SCALAR), 0
    if branches := schema.get("anyOf") or schema.get("oneOf"):
        sizes = [_size(branch, items) for branch in branches]
        return max(f for f, _ in sizes), max(n for _, n in sizes)
    kind = _kind(schema)
    if kind == "string":
        return (2 + schema["maxLength"], 0) if "maxLength" in schema else (2, 1)
    if kind == "object":
        fixed, free = 2, 0
        for key, value in schema.get("properties", {}).items():
            f, n = _size(value, items)
            fixed, free = fixed + len(key) + 6 + f, free + n  # "key": value, and spaces
        return fixed, free
    if kind == "array":
        f, n = _size(schema.get("items"), items)
        count = schema.get("maxItems", items)
        return 2 + count * (f + 2), count * n
    return SCALAR, 0


def _cap(schema: Any, per_string: int, items: int) -> Any:
    """A copy with every uncapped string and list capped."""
    if isinstance(schema, list):
        return [_cap(item, per_string, items) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _cap(value, per_string, items) for key, value in schema.items()}
    if "const" in schema or "enum" in schema:
        return out
    kind = _kind(schema)
    if kind == "string":
        out["maxLength"] = min(schema.get("maxLength", per_string), MAX_STRING)
    elif kind == "array":
        out.setdefault("maxItems", items)
    return out


def _kind(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: as long as its longest
        return "string" if "string" in kind else "array" if "array" in kind else kind
    return kind


def chat(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """The conversation as plain role/content messages, the rules in the system message (no
    rules with no tools: nothing to act with, the reply is plain text)."""
    listing = "\n".join(
        f"- {t.name}: {t.description.splitlines()[0] if t.description else ''} "
        f"arguments: {json.dumps(t.parameters.get('properties', {}))}"
        for t in tools
    )
    rules = RULES.format(envelope=ENVELOPE, tools=listing) if tools else ""
    out: list[dict[str, str]] = []
    for message in messages:
        match message:
            case SystemMessage():
                content = f"{message.content}\n\n{rules}" if rules else message.content
                out.append({"role": "system", "content": content})
            case UserMessage():
                out.append({"role": "user", "content": message.content})
            case AssistantMessage():
                out.append({"role": "assistant", "content": _as_text(message)})
            case ToolResultMessage():
                label = "Error from" if message.is_error else "Result of"
                out.append(
                    {"role": "user", "content": f"{label} {message.name}: {message.content}"}
                )
    if rules and (not out or out[0]["role"] != "system"):
        out.insert(0, {"role": "system", "content": rules})
    return out


def reply(text: str, tools: Sequence[ToolSpec]) -> AssistantMessage:
    """A reply parsed into one tool call (its id is given by the loop), or kept as text."""
    try:
        action = parse_action(text, tools)
    except ActionError:
        return AssistantMessage(text=text)
    return AssistantMessage(text=action.thought, tool_calls=(action.to_call(""),))


def _as_text(message: AssistantMessage) -> str:
    if not message.tool_calls:
        return message.text
    call = message.tool_calls[0]
    action = {"name": call.name, "arguments": call.arguments}
    if message.text:  # the thought, back in its place
        action = {"thought": message.text, **action}
    return json.dumps(action, ensure_ascii=False)
