"""The strict JSON action contract, for text-only and small models.

The whole reply must be one JSON object, `{"thought": ..., "name": <tool>, "arguments": {...}}`
(the thought optional), with at most one ```json (or bare ```) fence and whitespace around it.
Nothing is guessed: prose, a second object or an extra key is rejected, never dropped, because
a guessed action would run with consequences the model did not choose. Every rejection is an
`ActionError` of a closed `ActionErrorKind`; `repair_message` turns it into the one instruction
the model gets back.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, NoReturn

from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for
from referencing.exceptions import Unresolvable

from ._errors import ToolError, UsageError
from ._messages import ToolCall, ToolSpec

MAX_REPAIRS = 3
"""Consecutive rejected replies after which the loop stops asking the model to repair."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted. Deeper replies are NOT_JSON: no decoder or
validator recursion can then overflow, and no real tool call nests this deep."""

ENVELOPE = '{"thought": "<what you know, what you do next>", "name": "<tool>", "arguments": {...}}'
ENVELOPE_KEYS = ("thought", "name", "arguments")


class ActionErrorKind(StrEnum):
    """What was wrong with a reply, in the order the checks run."""

    EMPTY = "empty"
    NOT_JSON = "not_json"
    """Also: nested deeper than MAX_DEPTH, duplicate keys, NaN/Infinity, unpaired surrogates."""
    NOT_OBJECT = "not_object"
    MISSING_NAME = "missing_name"
    NAME_NOT_STRING = "name_not_string"
    UNKNOWN_TOOL = "unknown_tool"
    MISSING_ARGUMENTS = "missing_arguments"
    ARGUMENTS_NOT_OBJECT = "arguments_not_object"
    EXTRA_KEYS = "extra_keys"
    THOUGHT_NOT_STRING = "thought_not_string"
    SCHEMA_INVALID = "schema_invalid"


class ActionError(ToolError):
    """A reply broke the action contract; `message` (one line) says what and where."""

    def __init__(self, kind: ActionErrorKind, message: str) -> None:
        # One line, and encodable: the message quotes model text and goes to the event log.
        message = " ".join(message.splitlines()).encode("utf-8", "backslashreplace").decode()
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple[type[ActionError], tuple[ActionErrorKind, str]]:
        return type(self), (self.kind, self.message)


@dataclass(frozen=True)
class Action:
    """One tool call parsed from a reply; it gets a call id only when the loop records it."""

    name: str
    arguments: dict[str, Any]
    thought: str = ""
    """The reasoning the model gave before acting: a small model that may not write prose
    around its action (or is held to a grammar) thinks here."""

    def to_call(self, call_id: str) -> ToolCall:
        return ToolCall(id=call_id, name=self.name, arguments=self.arguments)


def parse_action(text: str, tools: Sequence[ToolSpec]) -> Action:
    """The action in `text`, validated against its tool's schema, or raise `ActionError`."""
    by_name = {spec.name: spec for spec in tools}
    if len(by_name) != len(tools):
        raise UsageError("tool names must be unique")
    payload, start = _payload(text)
    if not payload:
        _fail(ActionErrorKind.EMPTY, "the reply is empty")
    value = _decode(text, payload, start)
    if not isinstance(value, dict):
        _fail(ActionErrorKind.NOT_OBJECT, f"the reply is a JSON {_json_type(value)}, not an object")
    if "name" not in value:
        _fail(ActionErrorKind.MISSING_NAME, f'the object has no "name" key{_keys_of(value)}')
    name = value["name"]
    if not isinstance(name, str):
        _fail(ActionErrorKind.NAME_NOT_STRING, f'"name" is a JSON {_json_type(name)}, not a string')
    if name not in by_name:
        _fail(ActionErrorKind.UNKNOWN_TOOL, _unknown_tool(name, by_name))
    if "arguments" not in value:
        _fail(
            ActionErrorKind.MISSING_ARGUMENTS, f'the object has no "arguments" key{_keys_of(value)}'
        )
    arguments = value["arguments"]
    if not isinstance(arguments, dict):
        _fail(
            ActionErrorKind.ARGUMENTS_NOT_OBJECT,
            f'"arguments" is a JSON {_json_type(arguments)}, not an object',
        )
    if extra := [key for key in value if key not in ENVELOPE_KEYS]:
        _fail(
            ActionErrorKind.EXTRA_KEYS,
            f'unexpected keys {_list(extra)}: only "thought", "name" and "arguments" are allowed',
        )
    thought = value.get("thought", "")
    if not isinstance(thought, str):
        _fail(
            ActionErrorKind.THOUGHT_NOT_STRING,
            f'"thought" is a JSON {_json_type(thought)}, not a string',
        )
    if problems := _schema_problems(by_name[name], arguments):
        _fail(ActionErrorKind.SCHEMA_INVALID, f"invalid arguments for {name}: {problems}")
    return Action(name=name, arguments=arguments, thought=thought.strip())


def repair_message(error: ActionError, tools: Sequence[ToolSpec]) -> str:
    """The one message that tells the model what was wrong and how to send a valid action."""
    names = ", ".join(spec.name for spec in tools) or "none"
    return (
        f"Your reply was rejected: {error.message}\n"
        f"{_RECOVERY[error.kind]}\n"
        f"Reply with exactly one JSON object and nothing else: {ENVELOPE}\n"
        "No prose, no second object, no text before or after the object.\n"
        f"Allowed tools: {names}.\n"
        "If the action is large (for example writing a big file), split it into several "
        "smaller actions."
    )


_RECOVERY: dict[ActionErrorKind, str] = {
    ActionErrorKind.EMPTY: "Send the action now.",
    ActionErrorKind.NOT_JSON: "Send valid JSON only, starting with { and ending with }.",
    ActionErrorKind.NOT_OBJECT: "Send one JSON object, not another kind of value.",
    ActionErrorKind.MISSING_NAME: 'Put the tool name under "name".',
    ActionErrorKind.NAME_NOT_STRING: 'Give "name" as a tool name in double quotes.',
    ActionErrorKind.UNKNOWN_TOOL: "Use one of the allowed tools, spelled exactly.",
    ActionErrorKind.MISSING_ARGUMENTS: 'Put the arguments inside "arguments" ({} if none).',
    ActionErrorKind.ARGUMENTS_NOT_OBJECT: 'Make "arguments" an object of argument names to values.',
    ActionErrorKind.EXTRA_KEYS: 'Put every argument inside "arguments"; add no other keys.',
    ActionErrorKind.THOUGHT_NOT_STRING: 'Give "thought" as one string, or leave it out.',
    ActionErrorKind.SCHEMA_INVALID: "Fix those arguments to match the tool's parameters.",
}

# `*+`: the blanks after the fence are never given back (a try at the rest for each: quadratic).
_FENCE = re.compile(r"```(?:json)?[ \t]*+\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_BRACKET_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"?|[\[\]{}]', re.DOTALL)
"""A bracket, or a string (possibly unterminated) whose brackets do not count; never backtracks."""


class _Invalid(Exception):
    """Raised by the decoder hooks: JSON that Python would accept but the contract does not."""


def _fail(kind: ActionErrorKind, message: str) -> NoReturn:
    raise ActionError(kind, message)


def _payload(text: str) -> tuple[str, int]:
    """The reply without surrounding whitespace and one fence, and where it starts in `text`."""
    start = len(text) - len(text.lstrip())
    payload = text.strip()
    if fence := _FENCE.fullmatch(payload):
        body = fence.group(1)
        start += fence.start(1) + len(body) - len(body.lstrip())
        payload = body.strip()
    return payload, start


def _decode(text: str, payload: str, start: int) -> Any:
    if (deep := _too_deep(payload)) is not None:
        _fail(
            ActionErrorKind.NOT_JSON,
            f"JSON nested deeper than {MAX_DEPTH} levels at {_where(text, start + deep)}",
        )
    try:
        # strict=False: raw control characters (a newline typed into a file's content) are
        # accepted inside strings. llama.cpp's JSON-schema grammar admits them (its `char` is
        # [^"\\]), and a small model writing a multi-line file that way means no other text.
        value = json.loads(
            payload,
            strict=False,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_int=_int,
            parse_float=_float,
        )
        json.dumps(value, ensure_ascii=False).encode()  # unpaired surrogates from \ud800 escapes
    except json.JSONDecodeError as exc:
        where = _where(text, start + exc.pos)
        _fail(ActionErrorKind.NOT_JSON, f"not a single JSON object: {exc.msg} at {where}")
    except UnicodeEncodeError:
        _fail(ActionErrorKind.NOT_JSON, "a string holds an unpaired UTF-16 surrogate escape")
    except _Invalid as exc:
        _fail(ActionErrorKind.NOT_JSON, f"not valid JSON: {exc}")
    return value


def _too_deep(payload: str) -> int | None:
    """Where brackets outside strings first nest deeper than MAX_DEPTH, if they do."""
    if payload.count("[") + payload.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    for match in _BRACKET_OR_STRING.finditer(payload):
        char = payload[match.start()]
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif char in "]}":
            depth -= 1
    return None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        counts = Counter(key for key, _ in pairs)
        duplicate = next(key for key, count in counts.items() if count > 1)
        raise _Invalid(f"duplicate key {_show(duplicate)} in one object")
    return result


def _constant(name: str) -> NoReturn:
    raise _Invalid(f"{name} is not a JSON number")


def _int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # past Python's limit on digits
        raise _Invalid(f"integer of {len(digits)} digits is too long") from None


def _float(digits: str) -> float:
    number = float(digits)
    if math.isinf(number):
        raise _Invalid(f"number {_show(digits)} is out of range")
    return number


def _where(text: str, pos: int) -> str:
    """Line and column of `pos` in the whole reply, and the text found there."""
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    found = f"near {text[pos : pos + 30]!r}" if pos < len(text.rstrip()) else "end of reply"
    return f"line {line} column {column} ({found})"


def _unknown_tool(name: str, by_name: dict[str, ToolSpec]) -> str:
    allowed = ", ".join(by_name) or "none"
    close = difflib.get_close_matches(name, by_name, n=1) if len(name) <= 100 else []
    hint = f"; did you mean {_show(close[0])}?" if close else ""
    return f"unknown tool {_show(name)}; allowed tools: {allowed}{hint}"


def _schema_problems(spec: ToolSpec, arguments: dict[str, Any], limit: int = 5) -> str:
    """Each failing argument with its path and the validator's message; empty if valid."""
    try:
        validator = _validator(json.dumps(spec.parameters, sort_keys=True))
        errors = list(validator.iter_errors(arguments))
    except (SchemaError, Unresolvable) as exc:
        detail = exc.message if isinstance(exc, SchemaError) else str(exc)
        raise UsageError(f"tool {spec.name} has an unusable JSON schema: {detail}") from None
    # best_match looks inside anyOf/oneOf for the branch that nearly fit
    shown = [_problem(best_match([error])) for error in errors[:limit]]
    more = [f"and {len(errors) - limit} more"] if len(errors) > limit else []
    return "; ".join(shown + more)


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Validator:
    """One compiled validator per distinct schema (keyed by its canonical JSON)."""
    schema = json.loads(schema_json)
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _problem(error: ValidationError) -> str:
    return f"{_path(error.absolute_path)}: {_clip(error.message)}"


def _path(path: Sequence[str | int]) -> str:
    return "arguments" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{_clip(p, 40)}" for p in path
    )


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _keys_of(value: dict[str, Any]) -> str:
    return f" (its keys: {_list(list(value))})" if value else " (it is empty)"


def _list(keys: list[str], limit: int = 5) -> str:
    shown = ", ".join(_show(key) for key in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _show(text: str, limit: int = 40) -> str:
    """Model text quoted on one line, cut to `limit` characters."""
    return json.dumps(_clip(text, limit), ensure_ascii=False)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
