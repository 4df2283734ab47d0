"""JSON schemas as tools carry them: `$ref`s to the schema's own `$defs` written out in place,
so that a tool's schema means the same wherever it is put (inside an action schema for
constrained decoding, where `#/$defs/...` would point elsewhere)."""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 8
"""A recursive type (a tree) is written out this deep; below, any value is accepted."""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without `$defs`: every `{"$ref": "#/$defs/X"}` replaced by X itself."""
    defs = schema.get("$defs") or schema.get("definitions")
    if not defs:
        return schema
    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    inlined: dict[str, Any] = _inlined(body, defs, 0)
    return inlined


def _inlined(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_inlined(item, defs, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
        target = defs.get(ref.rsplit("/", 1)[1])
        if target is None or depth >= MAX_DEPTH:
            return {}  # unknown, or recursive past the cap: any value
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inlined({**target, **rest}, defs, depth + 1)
    return {key: _inlined(value, defs, depth) for key, value in node.items()}
