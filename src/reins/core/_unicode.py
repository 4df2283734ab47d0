"""Text that UTF-8 cannot encode: lone surrogates, made safe to record.

A Python str may hold a lone surrogate ("\\ud800"): a model's reply decoded leniently, a tool's
output read with `surrogateescape`, a command-line argument that was not valid UTF-8. JSON and
the terminal cannot carry one, so each is written as its escape, the six characters `\\ud800`,
and whoever records it says so. The checks cost one `isascii` on the usual text.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ._messages import AssistantMessage, ToolResultMessage

T = TypeVar("T")

NOTE = "text that is not valid Unicode (lone surrogates) was escaped as \\uXXXX"


def encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_text(text: str) -> str:
    """`text` with every character UTF-8 cannot encode written as its `\\uXXXX` escape."""
    if encodable(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escape_data(value: T) -> T:
    """`value` (strs, and dicts, lists and tuples of them) with every str escaped."""
    return _escape(value)  # type: ignore[no-any-return]


def _escape(value: Any) -> Any:
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, dict):
        return {_escape(k): _escape(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_escape(v) for v in value)
    return value


def clean(value: Any) -> bool:
    """True if no str in `value` needs escaping. Iterative: a model's arguments may nest
    deeper than Python's recursion limit."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not (item.isascii() or encodable(item)):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


M = TypeVar("M", bound=BaseModel)


def escape_model(model: M) -> M:
    """A copy of a (frozen) pydantic model with its text escaped; the model itself if clean,
    or if it nests too deep to copy (then the store refuses it, saying why)."""
    try:
        data = model.model_dump(mode="python", round_trip=True)
        if clean(data):
            return model
        return type(model).model_validate(escape_data(data))
    except (ValueError, RecursionError):
        return model


def escaped_reply(message: AssistantMessage) -> AssistantMessage | None:
    """The reply with its text escaped, or None if it has nothing to escape (the usual)."""
    text, thinking = message.text, message.thinking
    # Inline `isascii` first and a loop, not all(): this runs every round.
    if (text.isascii() or encodable(text)) and (thinking.isascii() or encodable(thinking)):
        for call in message.tool_calls:
            if not call.name.isascii() or (call.arguments and not clean(call.arguments)):
                break
        else:
            return None
    return escape_model(message)


def escaped_result(result: ToolResultMessage) -> ToolResultMessage:
    """The result, its text escaped with a note saying so if it needs it."""
    content = result.content
    if content.isascii() or encodable(content):  # inline first: this runs for every result
        return result
    return result.model_copy(update={"content": f"{escape_text(content)}\n[reins: {NOTE}]"})
