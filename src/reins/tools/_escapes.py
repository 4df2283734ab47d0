"""Arguments that are a pattern or a path, and the JSON escapes a model meant in them.

A model writes the regex `\\b[0-9]+\\b` into a JSON string as it would write it anywhere; JSON
reads `\\b` as a backspace (U+0008), so grep searched for a backspace, found nothing, and the
model sent the same call again. In a regex, a glob or a path, which hold one line and no
control character a person could type, a backspace, form feed, tab, line break or carriage
return is the escape the model typed: it is read back as that escape, and the result says so,
so that the model learns to double the backslash.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import GetJsonSchemaHandler
from pydantic_core import CoreSchema

_ESCAPE = {"\b": "\\b", "\f": "\\f", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_SAID = {
    "\b": "backspace (U+0008)",
    "\f": "form feed",
    "\t": "tab",
    "\n": "line break",
    "\r": "carriage return",
}
_CONTROL = re.compile("[\b\f\t\n\r]")


class ArgKind(Enum):
    """What a string parameter of a tool holds, as a marker on its annotation:
    `pattern: Annotated[str, ArgKind.REGEX]`. A regex is declared to the model
    (`"format": "regex"` in the schema) and a path is one of the tool's `path_args`; in each
    kind a control character that a JSON escape makes (`\\b`, `\\t`, ...) is read back as the
    escape the model typed, and the result says so."""

    REGEX = "regex"
    GLOB = "glob"
    PATH = "path"

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        schema: dict[str, Any] = handler(core_schema)
        return {**schema, "format": "regex"} if self is ArgKind.REGEX else schema


def kinds_of(hint: object) -> set[ArgKind]:
    """The `ArgKind` markers of a parameter's annotation (in an optional one's too)."""
    if get_origin(hint) is Annotated:
        return {m for m in get_args(hint)[1:] if isinstance(m, ArgKind)}
    if get_origin(hint) in (Union, types.UnionType):
        return set().union(*(kinds_of(arg) for arg in get_args(hint)))
    return set()


def regex_properties(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level properties a JSON schema declares regexes (`"format": "regex"`)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    return tuple(
        name
        for name, prop in properties.items()
        if isinstance(prop, Mapping) and prop.get("format") == "regex"
    )


def read_back(
    arguments: dict[str, Any],
    *,
    patterns: tuple[str, ...],
    paths: tuple[str, ...],
    exists: Callable[[str], bool],
) -> tuple[dict[str, Any], str]:
    """`arguments` with the control characters in the patterns and paths read back as the JSON
    escapes that made them, and the note that says so ("" when none was). A path that names
    a file as it is (a name with a line break, as list_files shows one) is left alone."""
    changed: dict[str, str] = {}
    notes = []
    for name in (*patterns, *paths):
        value = arguments.get(name)
        if not isinstance(value, str) or _CONTROL.search(value) is None:
            continue
        if name not in patterns and exists(value):
            continue
        found = list(dict.fromkeys(_CONTROL.findall(value)))  # in order, once each
        changed[name] = _CONTROL.sub(lambda m: _ESCAPE[m.group()], value)
        said = " and ".join(f"a {_SAID[c]} as {_ESCAPE[c]}" for c in found)
        doubled = ", ".join(f'"\\{_ESCAPE[c]}"' for c in found)
        notes.append(f"[{name}: read {said}, the escape meant; in JSON, write {doubled}]")
    if not changed:
        return arguments, ""
    return {**arguments, **changed}, "\n".join(notes)
