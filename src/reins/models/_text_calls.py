"""Tool calls a model wrote as text, recovered as the calls they are.

Over an OpenAI-compatible server, a small model offered native tools often writes its call as
text in its own training format, which the server has no parser for:

    <tool_call>{"name": ..., "arguments": {...}}</tool_call>    Hermes, Qwen, SmolLM2 (a list)
    <tools>...</tools>                                          the prompt's tag, echoed back
    ```json {"name": ..., "arguments": {...}} ```               a fence ("parameters" too)
    {"name": ..., "parameters": {...}}                          the whole reply (Llama 3.2)
    [TOOL_CALLS] [{...}]  or  [TOOL_CALLS]name[ARGS]{...}       Mistral
    <|python_tag|>{...}                                         Llama 3.1

vLLM's `--tool-call-parser` does this on the server; where the server does not, the provider
finishes the translation with `recover`. Nothing is guessed: every call that one kind of markup
holds must be a `{"name", "arguments"}` object (the strict action parser's contract, "parameters"
allowed) naming an offered tool, or none is recovered and the reply stays text (the
`LeakedMarkup` guard then nudges the model). A fence or a JSON object that is no action at all
(a code sample) is prose. Arguments that do not fit the tool's schema still make a call: the
tool executor validates it like any call and tells the model what is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ..core._messages import ToolCall, ToolSpec


@dataclass(frozen=True)
class Recovered:
    """The calls found in a reply's text, and what else the text held."""

    calls: tuple[ToolCall, ...]
    """With no ids: the loop gives each a unique one."""
    text: str
    """The prose before the first call: the message's text."""
    form: str
    """The markup the calls were written in."""
    dropped: str
    """Text after the first call that is no call (often an imagined result): not kept."""

    def note(self) -> str:
        """What the log says about it."""
        names = ", ".join(call.name for call in self.calls)
        count = "1 tool call" if len(self.calls) == 1 else f"{len(self.calls)} tool calls"
        note = f"{count} written as text ({self.form}) recovered as calls: {names}"
        if self.dropped:
            note += f"; the text after them was dropped: {_clip(self.dropped)!r}"
        return note


def recover(text: str, tools: Sequence[ToolSpec]) -> Recovered | None:
    """The tool calls `text` writes as markup, if all of them are actions naming one of `tools`;
    else None (the text is prose, or markup that cannot be run as it is)."""
    if not tools or not _MAYBE.search(text):
        return None  # the usual case: prose, checked without a parse
    for form, blocks in _FORMS:
        found = list(blocks(text))
        if not found:
            continue
        calls: list[ToolCall] = []
        kept: list[_Block] = []
        for block in found:
            values = _values(block.payload)
            actions = None if values is None else [_action(v) for v in values]
            if form == "```json fence" and (not actions or not any(actions)):
                continue  # a code sample in a fence: prose
            if not actions or None in actions:
                return None  # markup that is not all actions: not run, left to the guard
            for action in actions:
                assert action is not None
                call = _checked(action, tools)
                if call is None:
                    return None
                calls.append(call)
            kept.append(block)
        if not calls:
            continue
        after = [text[a.end : b.start] for a, b in pairwise(kept)]
        dropped = "\n".join(s.strip() for s in [*after, text[kept[-1].end :]] if s.strip())
        return Recovered(
            calls=tuple(calls), text=text[: kept[0].start].strip(), form=form, dropped=dropped
        )
    return None


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    payload: str


_MAYBE = re.compile(r"<tool_call>|<tools>|\[TOOL_CALLS\]|<\|python_tag\|>|```|\A\s*[\[{]")
_TAGGED = re.compile(r"<(tool_call|tools)>(.*?)(?:</\1>|\Z)", re.DOTALL)
# `[ \t]*+` takes all the blanks after a fence at once: given back one by one, each a new try
# at the rest of the text, a fence never closed after 40,000 spaces held the loop for 14 s.
_FENCE = re.compile(
    r"```(?:json|tool_call|tool_code)?[ \t]*+\n?(.*?)```", re.DOTALL | re.IGNORECASE
)
_INNER_FENCE = re.compile(r"\A```(?:json)?[ \t]*+\n?(.*?)```\Z", re.DOTALL | re.IGNORECASE)
_PYTHON_TAG = re.compile(r"<\|python_tag\|>(.*?)(?:<\|eom_id\|>|<\|eot_id\|>|\Z)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_CALL = re.compile(r"([\w.-]+)(?:\[CALL_ID\]\w+)?\[ARGS\]")
_SEPARATOR = re.compile(r"(?:\s|[;,]|\[TOOL_CALLS\])*")


def _tagged(tag: str) -> Callable[[str], Iterator[_Block]]:
    def blocks(text: str) -> Iterator[_Block]:
        for match in _TAGGED.finditer(text):
            if match.group(1) == tag:
                yield _Block(match.start(), match.end(), match.group(2))

    return blocks


def _fences(text: str) -> Iterator[_Block]:
    for match in _FENCE.finditer(text):
        yield _Block(match.start(), match.end(), match.group(1))


def _python_tag(text: str) -> Iterator[_Block]:
    for match in _PYTHON_TAG.finditer(text):
        yield _Block(match.start(), match.end(), match.group(1))


def _mistral(text: str) -> Iterator[_Block]:
    start = text.find(_MISTRAL)
    if start >= 0:
        yield _Block(start, len(text), text[start + len(_MISTRAL) :])


def _bare(text: str) -> Iterator[_Block]:
    """The whole reply, when it is JSON (an object or a list) and nothing else."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        start = text.find(stripped[0])
        yield _Block(start, len(text), stripped)


_FORMS: tuple[tuple[str, Callable[[str], Iterator[_Block]]], ...] = (
    ("<tool_call> markup", _tagged("tool_call")),
    ("<tools> markup", _tagged("tools")),
    ("[TOOL_CALLS] markup", _mistral),
    ("<|python_tag|> markup", _python_tag),
    ("```json fence", _fences),
    ("a JSON reply", _bare),
)


class _Invalid(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Invalid("duplicate key")
    return result


def _constant(name: str) -> Any:
    raise _Invalid(f"{name} is not a JSON number")


# strict=False: small models write raw newlines inside strings (a file's content).
_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_pairs, parse_constant=_constant)


def _values(payload: str) -> list[Any] | None:
    """The JSON values in `payload`, lists flattened: one or several, separated by nothing but
    whitespace, `;` or `,` (or Mistral's `name[ARGS]{...}` calls); None if anything else is
    there, or if there is nothing."""
    payload = payload.strip()
    if fence := _INNER_FENCE.match(payload):
        payload = fence.group(1).strip()
    values: list[Any] = []
    pos = _skip(payload, 0)
    try:
        while pos < len(payload):
            if mistral := _MISTRAL_CALL.match(payload, pos):
                arguments, pos = _DECODER.raw_decode(payload, mistral.end())
                values.append({"name": mistral.group(1), "arguments": arguments})
            else:
                value, pos = _DECODER.raw_decode(payload, pos)
                values.extend(value if isinstance(value, list) else [value])
            pos = _skip(payload, pos)
    except (json.JSONDecodeError, _Invalid, RecursionError):
        return None
    return values or None


def _skip(payload: str, pos: int) -> int:
    """Past the whitespace, separators and `[TOOL_CALLS]` marks at `pos`."""
    match = _SEPARATOR.match(payload, pos)
    return match.end() if match else pos


def _action(value: Any) -> dict[str, Any] | None:
    """`{"name", "arguments"}` from an action-shaped object (its arguments under "arguments" or
    "parameters", perhaps as a JSON string; OpenAI's `{"type": "function", "function": {...}}`
    shape too), or None if it is not one."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and set(value) <= {"type", "function", "id"}:
        value = value["function"]
    keys = set(value) - {"type", "id"} if value.get("type", "function") == "function" else set()
    if "name" not in keys or len(keys & {"arguments", "parameters"}) != 1 or len(keys) != 2:
        return None
    arguments = value.get("arguments", value.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = _DECODER.decode(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, _Invalid, RecursionError):
            return None
    return {"name": value["name"], "arguments": arguments}


def _checked(action: dict[str, Any], tools: Sequence[ToolSpec]) -> ToolCall | None:
    """The call, if the action contract holds for it (arguments that miss the schema do make a
    call: the executor answers them as it does a native call's)."""
    from ..core._actions import ActionError, ActionErrorKind, parse_action  # loads jsonschema

    try:
        parse_action(json.dumps(action, ensure_ascii=False), tools)
    except ActionError as error:
        if error.kind is not ActionErrorKind.SCHEMA_INVALID:
            return None
    except (TypeError, ValueError):  # not serializable back: no action
        return None
    return ToolCall(id="", name=action["name"], arguments=action["arguments"])


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
