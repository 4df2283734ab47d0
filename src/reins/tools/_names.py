"""File names as the file tools print them, one to a line, so that no name reads as two.

A name may hold any byte but `/` and NUL: `a.txt\\nb.txt` listed as is was two entries, and a
match line of grep could be forged the same way. A name with a line break or another control
character (or a bidirectional override, or bytes that are not UTF-8) is shown as a JSON string
— in double quotes, escaped — which is how the model writes it back in a call's arguments; so is
a name that starts with a double quote, which would read as one shown so.
"""

from __future__ import annotations

import json
import re

_ODD = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
"""Control characters (C0, DEL, C1), line and paragraph separators, bidirectional marks and
overrides, lone surrogates (bytes of a name that are not UTF-8)."""


def as_listed(name: str) -> str:
    """`name` as is, or as a JSON string if it holds a character that could break the listing."""
    if not name.startswith('"') and _ODD.search(name) is None:
        return name
    return _ODD.sub(_escape, json.dumps(name, ensure_ascii=False))


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"
