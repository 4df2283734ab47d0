"""Drafted tokens for the embedded model: what an action must say next, checked in one batch.

On 2 cores llama.cpp evaluates four tokens in one batch in about the time of two alone. So
after each token, a few likely next tokens are drafted and evaluated with it; at temperature 0
each is kept only while it is the token the model picks itself (`GreedyGrammarLlama`). The
reply is the model's own greedy choice, sooner, though not always the same text: a batch's
logits differ from a lone token's by rounding, so a near tie can go the other way. Drafts come
from two places:

- the action's own structure, known from its schema: `{"thought": "`, the keys that follow a
  value (`", "name": "`, a tool's next required argument), the rest of a tool's name once its
  first letters leave one tool, a held argument's fixed value;
- elsewhere (inside a value: a path, a line being copied), what followed the reply's last
  tokens where they last occurred in the prompt (prompt lookup), a few tokens only: a drafted
  token the model rejects is time lost, and long lookups are mostly rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LOOKUP_NGRAM = (6, 3)
"""The longest and shortest run of the reply's last tokens looked up in the context."""
LOOKUP_TOKENS = 3
"""Tokens drafted from a lookup: a batch of four costs about what three cost (2 cores)."""
STRUCTURE_TOKENS = 10
"""Tokens drafted from the structure, which the model nearly always keeps."""


@dataclass
class _Object:
    """An object of the action the reply is inside: its schema, if the drafts know it."""

    keys: list[str]
    """The keys in the grammar's order: required ones first, then the optional."""
    required: set[str]
    values: dict[str, Any]
    """The schema of each key's value."""
    key: str | None = None
    """The key whose value is being written, or was last."""
    strings: dict[str, str] = field(default_factory=dict)
    """The string values written so far."""


def _object(schema: Mapping[str, Any] | None) -> _Object | None:
    if not schema or schema.get("type") != "object" or "properties" not in schema:
        return None
    properties: dict[str, Any] = dict(schema["properties"])
    required = set(schema.get("required", ()))
    keys = [k for k in properties if k in required] + [k for k in properties if k not in required]
    return _Object(keys, required, properties)


class Shape:
    """The structure an action has: its envelope, and each tool's arguments."""

    def __init__(self, action_schema: Mapping[str, Any]) -> None:
        branches = action_schema["anyOf"]
        self.arguments = {
            b["properties"]["name"]["const"]: b["properties"]["arguments"] for b in branches
        }
        envelope = branches[0]["properties"]
        self.envelope = {
            "type": "object",  # the name's value is one of the tools', the arguments theirs
            "properties": {**envelope, "name": {"type": "string"}, "arguments": None},
            "required": branches[0]["required"],
        }

    def next_text(self, text: str) -> str | None:
        """What must follow `text` (a reply so far), as far as it is certain; "" if nothing
        is (inside a free value), None once the action is whole."""
        start = self._open(self.envelope, [])
        if len(text) < len(start):
            return start[len(text) :] if start.startswith(text) else ""
        scan = _scan(text, self)
        if scan is None:
            return ""
        stack, string, closed_at = scan
        if not stack:
            return None if closed_at is not None else ""
        frame = stack[-1]
        if string is not None:
            return self._in_string(stack, string)
        if closed_at is None or frame.key is None:
            return ""
        after = self._after(stack)
        typed = text[closed_at:]
        return after[len(typed) :] if after.startswith(typed) else ""

    def _in_string(self, stack: list[_Object], string: tuple[bool, str]) -> str:
        """Inside a key, the rest of the only key it can be; inside the tool's name, the rest
        of the only tool it can be; inside another value, nothing."""
        is_key, typed = string
        frame = stack[-1]
        if is_key:
            left = [k for k in frame.keys if k not in frame.strings and k != frame.key]
            fits = [k for k in left if k.startswith(typed)]
            if len(fits) != 1:
                return ""
            frame.key = fits[0]
            return fits[0][len(typed) :] + '": ' + self._open(frame.values[fits[0]], stack)
        if len(stack) == 1 and frame.key == "name":
            fits = [name for name in self.arguments if name.startswith(typed)]
            if len(fits) != 1:
                return ""
            frame.strings["name"] = fits[0]
            return fits[0][len(typed) :] + '"' + self._after(stack)
        return ""

    def _after(self, stack: list[_Object]) -> str:
        """What follows the value just written in the innermost object: the next key when it
        is required, the closing braces when no key is left, nothing when the next is
        optional (the model may write it or not)."""
        frame = stack[-1]
        assert frame.key is not None
        rest = frame.keys[frame.keys.index(frame.key) + 1 :]
        if rest:
            following = rest[0]
            if following not in frame.required:
                return ""
            frame.key = following
            return f', "{following}": ' + self._open(frame.values[following], stack)
        if len(stack) == 1:
            return "}"
        return "}" + self._after(stack[:-1])

    def _open(self, schema: Any, stack: list[_Object]) -> str:
        """How a value of `schema` starts, as far as that is certain."""
        if schema is None:  # the envelope's arguments: the named tool's
            schema = self.arguments.get(stack[-1].strings.get("name", ""))
        if not isinstance(schema, Mapping):
            return ""
        if "const" in schema:
            return json.dumps(schema["const"]) + self._after(stack) if stack else ""
        kind = schema.get("type")
        if kind == "string":
            return '"'
        inner = _object(schema)
        if inner is None:
            return ""
        if not inner.keys:
            return "{}" + self._after(stack) if stack else "{}"
        first = inner.keys[0]
        if first not in inner.required:
            return "{"
        inner.key = first
        return '{"' + first + '": ' + self._open(inner.values[first], [*stack, inner])


def _scan(
    text: str, shape: Shape
) -> tuple[list[_Object], tuple[bool, str] | None, int | None] | None:
    """Where `text` leaves off: the objects it is inside (those whose schema is known; None
    when it is inside one that is not), the string it is inside (a key?, its text so far),
    and where the last value of the innermost object ended."""
    stack: list[_Object | None] = []
    string: list[str] | None = None
    is_key = False
    escaped = False
    closed_at: int | None = None
    expect_key = False
    for i, char in enumerate(text):
        frame = stack[-1] if stack else None
        if string is not None:
            if escaped:
                escaped = False
                string.append(char)
            elif char == "\\":
                escaped = True
            elif char == '"':
                value = "".join(string)
                string = None
                if frame is not None:
                    if is_key:
                        frame.key = value
                    else:
                        if frame.key is not None:
                            frame.strings[frame.key] = value
                        closed_at = i + 1
            else:
                string.append(char)
            continue
        if char == '"':
            string, is_key = [], expect_key
            expect_key = False
        elif char in "{[":
            if char == "[" or (stack and frame is None):
                inner = None
            elif not stack:
                inner = _object(shape.envelope)
            else:
                assert frame is not None
                schema = frame.values.get(frame.key) if frame.key else None
                if schema is None and frame.key == "arguments":
                    schema = shape.arguments.get(frame.strings.get("name", ""))
                inner = _object(schema)
            stack.append(inner)
            expect_key = char == "{"
            closed_at = None
        elif char in "}]":
            if not stack:
                return None
            stack.pop()
            closed_at = i + 1
        elif char == ",":
            expect_key = frame is not None
    if any(frame is None for frame in stack):
        return None
    known: list[_Object] = [frame for frame in stack if frame is not None]
    return known, (None if string is None else (is_key, "".join(string))), closed_at


def lookup(tokens: np.ndarray[Any, Any], most: int = LOOKUP_TOKENS) -> list[int]:
    """The tokens that followed the last few of `tokens` where they last occurred before."""
    longest, shortest = LOOKUP_NGRAM
    for n in range(longest, shortest - 1, -1):
        if len(tokens) <= n:
            continue
        windows = np.lib.stride_tricks.sliding_window_view(tokens[:-1], n)
        hits = np.flatnonzero((windows == tokens[-n:]).all(axis=1))
        if len(hits):
            start = int(hits[-1]) + n
            return [int(t) for t in tokens[start : start + most]]
    return []


class ActionDrafts:
    """llama-cpp-python's `draft_model` for one request: called with the context's tokens
    (the prompt, the reply so far) after each run of kept tokens, it returns the next draft."""

    def __init__(
        self,
        shape: Shape,
        tokenize: Callable[[str], Sequence[int]],
        detokenize: Callable[[int], bytes],
    ) -> None:
        self._shape = shape
        self._tokenize = tokenize
        self._detokenize = detokenize
        self.start: int | None = None
        """Where the reply starts in the context: set at the first call, which comes after
        the reply's first token."""
        self._reply: list[int] = []
        self._bytes: list[bytes] = []

    def __call__(self, input_ids: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        if self.start is None:
            self.start = len(input_ids) - 1
        reply = input_ids[self.start :]
        if len(reply) < len(self._reply) or list(reply[: len(self._reply)]) != self._reply:
            self._reply, self._bytes = [], []  # not the reply it was: read it again
        for token in reply[len(self._reply) :]:
            self._reply.append(int(token))
            self._bytes.append(self._detokenize(int(token)))
        following = self._shape.next_text(b"".join(self._bytes).decode("utf-8", errors="ignore"))
        if following:
            draft = list(self._tokenize(following))[:STRUCTURE_TOKENS]
        elif following is None:  # the action is whole: the model ends its reply
            draft = []
        else:
            draft = lookup(input_ids)
        return np.asarray(draft, dtype=np.intc)
