"""Repetition in a reply's text, collapsed before it goes back into the history.

Small models fall into saying the same sentence, line or phrase over and over ("I will read the
file. I will read the file. …", a line 30 times). Sent back as it is, that fills the context
and primes the model to go on repeating. The `repetition` guard (`Guards.repetition`) makes the
fold of a run's events put, in place of each run of 3 or more back-to-back copies of a unit of
words, the unit once and `[… repeated N times]` (N: the copies in the run). Only the text is
touched, never the tool calls; the log keeps the reply as it came (`ModelResponded`).

A unit is any sequence of whole words (so sentences, lines, groups of lines and phrases alike);
copies compare word by word, whatever the whitespace between them. Left alone: a unit under 10
characters or with no letter (`} } }`, `| - | - |`, `0 0 0`), two copies, text in a fenced code
block, and a reply that may be a JSON action (`{...}`).

The cost is a split on whitespace and one dictionary look-up a word (a text of under 30
characters is returned at once); no regular expression that could backtrack.
"""

from __future__ import annotations

import re
from operator import eq

from ._messages import AssistantMessage

MIN_TIMES = 3
"""Copies in a row that make a run."""
MIN_CHARS = 10
"""A unit shorter than this is never collapsed."""
MARK = "[… repeated {times} times]"
LONG = 32
"""A unit of more words is compared word by word up to a difference, not as a whole."""

_LETTER = re.compile(r"[^\W\d_]")
_FENCE = "```"
_ONES = b"\x01"


def collapsed(message: AssistantMessage) -> AssistantMessage:
    """`message` with its text's repetition collapsed (the same object if there is none)."""
    text = collapse_repeats(message.text)
    return message if text is message.text else message.model_copy(update={"text": text})


def collapse_repeats(text: str) -> str:
    """`text` with each run of 3 or more back-to-back copies of a unit of words (10 characters
    or more, with a letter) put as the unit once and `[… repeated N times]`; `text` itself
    (the same object) if there is none."""
    if len(text) < MIN_TIMES * MIN_CHARS:
        return text
    if text[0] == "{" or text[-1] == "}":
        stripped = text.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            return text  # maybe a JSON action: its arguments are never touched
    if _FENCE not in text:
        return _collapse(text)
    parts = text.split(_FENCE)  # odd parts are inside a fenced block (an open one runs to the end)
    changed = [_collapse(part) if i % 2 == 0 else part for i, part in enumerate(parts)]
    if all(new is old for new, old in zip(changed, parts, strict=True)):
        return text
    return _FENCE.join(changed)


def _collapse(text: str) -> str:
    words = text.split()
    runs = _runs(words) if len(words) >= MIN_TIMES else []
    if not runs:
        return text  # the usual case
    out: list[str] = []
    where = _Offsets(text)
    done = 0  # the text before this offset is in `out`, or left out
    for start, period, times in runs:
        begin = where.of(start)
        unit_end = where.of(start + period - 1) + len(words[start + period - 1])
        last = start + period * times - 1
        out += (text[done:begin], text[begin:unit_end], " ", MARK.format(times=times))
        done = where.of(last) + len(words[last])
    out.append(text[done:])
    return "".join(out)


class _Offsets:
    """Where each word of a text begins, asked for in order: `str.split` with a `maxsplit`
    skips words in C (a regular expression's split costs ten times as much)."""

    def __init__(self, text: str) -> None:
        self.rest = text
        self.offset = 0  # of `rest` in the text
        self.word = 0  # the first word of `rest`

    def of(self, word: int) -> int:
        if word > self.word:
            rest = self.rest.split(None, word - self.word)[-1]
            self.offset += len(self.rest) - len(rest)
            self.rest, self.word = rest, word
        elif word == self.word and self.rest[:1].isspace():  # only the start can be blank
            rest = self.rest.lstrip()
            self.offset += len(self.rest) - len(rest)
            self.rest = rest
        return self.offset


def _runs(words: list[str]) -> list[tuple[int, int, int]]:
    """The runs to collapse: (first word, words in the unit, copies), in order."""
    count = len(words)
    last: dict[str, int] = {}
    get = last.get
    runs: list[tuple[int, int, int]] = []
    misses: dict[int, int] = {}
    settled: set[int] = set()
    """Periods with no run anywhere in the text."""
    differs: dict[int, int] = {}
    """By long period: the last place found whose word differs from the word a period on (two
    copies that begin at or before it, less than a period back, do not match)."""
    short: dict[int, int] = {}
    """By period: where the last stretch found too short to collapse ends (two copies inside
    it are that stretch again)."""
    floor = 0  # no run starts before this word
    skip = 0  # the words before this one are in a run seen already
    for i, word in enumerate(words):
        if i < skip:
            continue
        before = get(word, -1)
        last[word] = i
        if before < floor:
            continue
        ahead = 2 * i - before
        if ahead >= count or words[ahead] != word or words[i - 1] != words[ahead - 1]:
            continue  # the usual case: no third copy at the same distance
        period = i - before
        if period in settled or before <= differs.get(period, -1) or ahead <= short.get(period, -1):
            continue  # known: no run at this period, a word unlike its copy's, a stretch seen
        if period <= LONG and words[before:i] != words[i:ahead]:  # not two whole copies
            # A list's lines, a table's rows: the same distance again and again. After two
            # misses, the whole text is checked once (in C) for a run of this period.
            misses[period] = missed = misses.get(period, 0) + 1
            if missed == 2 and _ONES * (2 * period) not in bytes(map(eq, words, words[period:])):
                settled.add(period)
            continue
        if period > LONG and (same := _matching(words, before, i, period)) < period:
            # A long unit is compared up to its first difference, which is kept: the copies
            # compared next at this period begin past it. (Compared whole, a near copy of a long
            # unit again and again took the text's length times the unit's; and checked whole
            # after two misses, each of many long periods took the text's length.)
            differs[period] = before + same
            continue
        start, end = _extent(words, before, period, floor)
        times = (end - start) // period
        if times < MIN_TIMES:
            short[period] = end  # so the copies from the next words are not measured again
            continue
        start = _aligned(words, start, period, end - start - times * period)
        stop = start + times * period
        unit = " ".join(words[start : start + period])
        if len(unit) >= MIN_CHARS and _LETTER.search(unit):
            runs.append((start, period, times))
            floor = stop
        # Passed over as a whole (a run too short to collapse too): its unit's words were last
        # seen in its last copy.
        for index in range(max(i + 1, stop - period), stop):
            last[words[index]] = index
        skip = stop
    return runs


def _extent(words: list[str], at: int, period: int, floor: int) -> tuple[int, int]:
    """The words that repeat with this period around `at`, the start of two copies: [start,
    end). (A run is found from its first copy, so it begins less than a period before.)"""
    start = at
    low = max(floor, at - period + 1)
    while start > low and words[start - 1] == words[start - 1 + period]:
        start -= 1
    return start, at + period + _matching(words, at, at + period)


def _matching(words: list[str], a: int, b: int, most: int | None = None) -> int:
    """How many words from `a` on are the same as those from `b` on, pair by pair, up to
    `most` (found by comparing ever longer slices, then halving: a long run costs a few
    comparisons in C, and a difference found early little)."""
    limit = len(words) - b if most is None else min(most, len(words) - b)
    good, size = 0, 8
    while True:  # words[a:a+good] match
        size = min(size, limit)
        if words[a + good : a + size] != words[b + good : b + size]:
            break
        good = size
        if size == limit:
            return limit
        size *= 2
    while size - good > 1:  # words[a:a+size] do not
        middle = (good + size) // 2
        if words[a + good : a + middle] == words[b + good : b + middle]:
            good = middle
        else:
            size = middle
    return good


def _aligned(words: list[str], start: int, period: int, spare: int) -> int:
    """Where the copies begin, of the `spare + 1` places they may: the first whose unit ends a
    sentence (else the first place); the spare words stay as they are."""
    for shift in range(spare + 1):
        if words[start + shift + period - 1][-1] in ".!?:":
            return start + shift
    return start
