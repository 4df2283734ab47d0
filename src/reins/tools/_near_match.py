"""Finding an edit's `old` text that a model wrote down not quite as the file has it.

Small models flatten what they read: a line break and its indentation become one space
(`ports: - "8000:8000"` for a YAML list item on the next line), a string's quotes change
(`'0.3.1'` for `"0.3.1"`), punctuation gets a regex's backslash (`old-site\\.org`). The exact
search then finds nothing, the model sends the same call again, and the run stalls. codex's
patch tool meets the same slips by matching with whitespace trimmed and punctuation normalized.

Here, when the exact text is nowhere, `old` is matched once more with each whitespace run
standing for any whitespace run, either quote for either, and a backslash before punctuation
dropped. Where that finds it, `new` is written the way the file writes it: the file's
whitespace between the same words, its quote where `old` had the other, and no regex
backslashes if `old` had them; a `new` that holds `old` as written (a header put above it)
gets the file's text in its place. When `new` cannot be carried over word for word (it has another
number of words), the caller changes nothing and shows the file's text to copy; when `old` is
nowhere even so, `similar_lines` offers the lines most like it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

_ESCAPED = re.compile(r"\\([^\w\s\\])")
"""A backslash before punctuation: `\\.`, `\\(`, `\\-` (not `\\n`, not a doubled backslash)."""
_QUOTES = "'\""
MIN_CHARS = 4
"""The fewest non-space characters an `old` needs for a loose match to mean anything."""
SIMILAR = 0.6
"""How alike (difflib's ratio) a line must be to `old`'s first line to be offered instead."""
MAX_SIMILAR = 3


@dataclass(frozen=True)
class NearMatch:
    found: list[str]
    """The file's text at each place `old` matched loosely, in order."""
    new: list[str | None]
    """`new` as the file would write it at each place (None: it cannot be carried over)."""
    how: str
    """What differed, for the model: "whitespace", "quotes", "backslashes", joined."""


def near_match(text: str, old: str, new: str) -> NearMatch | None:
    """Where `old`, not in `text` as written, is once its whitespace, quotes and regex
    backslashes are read loosely; None if nowhere or if `old` is too short to tell."""
    words = _ESCAPED.sub(r"\1", old).split()
    if sum(map(len, words)) < MIN_CHARS:
        return None
    pattern = r"\s+".join("".join(_char(c) for c in word) for word in words)
    found = [m.group() for m in re.finditer(pattern, text)]
    if not found:
        return None
    how = _differences(old, found[0])
    return NearMatch(found, [_carried(old, new, place) for place in found], how)


def _char(c: str) -> str:
    return "[\"']" if c in _QUOTES else re.escape(c)


def _differences(old: str, found: str) -> str:
    unescaped = _ESCAPED.sub(r"\1", old)
    kinds = []
    if re.findall(r"\s+", unescaped.strip()) != re.findall(r"\s+", found):
        kinds.append("whitespace")
    if "".join(unescaped.split()) != "".join(found.split()):
        kinds.append("quotes")
    if unescaped != old:
        kinds.append("backslashes")
    return ", ".join(kinds)


def _carried(old: str, new: str, found: str) -> str | None:
    """`new` written as the file writes it where `old` was `found`: with `old` in it as
    written (a line added above it), that part as the file has it; else word i of `new`
    followed by the file's whitespace after word i, `old`'s quotes swapped for the file's,
    regex backslashes dropped if `old` had them. None if `new` has another number of words,
    or other whitespace around it than `old` (the place it goes would be a guess)."""
    if _ESCAPED.search(old):
        new = _ESCAPED.sub(r"\1", new)
        old = _ESCAPED.sub(r"\1", old)
    if not new.strip():
        return ""
    if new.count(old) == 1:  # lines put above or below `old` as written: the file's goes in
        before, after = new.split(old)
        if before[-1:] in ("", "\n") and after[:1] in ("", "\n"):
            return before + found + after
    old_words, new_words = old.split(), new.split()
    if len(new_words) != len(old_words) or _around(new) != _around(old):
        return None
    quotes: dict[str, str] = {}
    for written, filed in zip("".join(old_words), "".join(found.split()), strict=True):
        if written in _QUOTES and quotes.setdefault(written, filed) != filed:
            return None  # one quote of `old` stands for both in the file: which to write?
    swap = str.maketrans(quotes)
    gaps = [*re.findall(r"\s+", found), ""]
    return "".join(word.translate(swap) + gap for word, gap in zip(new_words, gaps, strict=True))


def _around(s: str) -> tuple[str, str]:
    return s[: len(s) - len(s.lstrip())], s[len(s.rstrip()) :]


def similar_lines(text: str, old: str) -> list[tuple[int, str]]:
    """The lines of `text` (numbered from 1) most like `old`'s first line, best first: what
    the model may have meant (`dependencies = [` for `dependencies = []`, `"http": {` for
    `http:`), as aider offers the lines a failed search block was closest to."""
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if len(wanted) < MIN_CHARS:
        return []
    scored = []
    for number, line in enumerate(text.splitlines(), 1):
        matcher = SequenceMatcher(None, wanted, line.strip(), autojunk=False)
        # The cheap upper bounds first: the exact ratio only for a line that can reach it.
        if (
            matcher.real_quick_ratio() >= SIMILAR
            and matcher.quick_ratio() >= SIMILAR
            and (ratio := matcher.ratio()) >= SIMILAR
        ):
            scored.append((-ratio, number, line))
    return [(number, line) for _, number, line in sorted(scored)[:MAX_SIMILAR]]
