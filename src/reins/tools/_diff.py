"""What a write or an edit changed, as a short unified diff for the person watching the run
(the terminal shows it under the call): the model never sees it.

Cheap by design, as a write must stay fast: texts over `MAX_TEXT_CHARS` get none; the lines
both texts share at their ends are set aside before difflib looks (an edit's diff costs a
scan, not a match of the whole file); and a middle too big for difflib's matcher (quadratic
at worst) shows as its old lines, then its new ones. The diff is cut to a glance.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from difflib import SequenceMatcher

MAX_TEXT_CHARS = 1_000_000
"""Past this either side, no diff."""
MAX_LINES = 60
MAX_CHARS = 8_000
MAX_LINE_CHARS = 300
"""A longer line (minified JSON) is cut: the diff is for reading."""
CONTEXT = 3
MAX_MATCHED = 1_000_000
"""Past this product of the two middles' line counts, difflib's matcher is not run."""

Opcode = tuple[str, int, int, int, int]


def short_diff(path: str, before: str, after: str, *, new: bool = False) -> str | None:
    """The change from `before` to `after` (`new`: from no file) as a unified diff, cut to
    `MAX_LINES` lines and `MAX_CHARS` characters with a last line `… N more lines`; None when
    nothing changed or a text is too big."""
    if before == after or max(len(before), len(after)) > MAX_TEXT_CHARS:
        return None
    a, b = _lines(before), _lines(after)
    head, tail = _shared_ends(a, b)
    lo = max(head - CONTEXT, 0)  # the middle, with its context
    a, b = a[lo : len(a) - max(tail - CONTEXT, 0)], b[lo : len(b) - max(tail - CONTEXT, 0)]
    if len(a) * len(b) <= MAX_MATCHED:
        groups = SequenceMatcher(None, a, b).get_grouped_opcodes(CONTEXT)
    else:
        above, below = head - lo, min(tail, CONTEXT)
        ops: list[Opcode] = [
            ("equal", 0, above, 0, above),
            ("replace", above, len(a) - below, above, len(b) - below),
            ("equal", len(a) - below, len(a), len(b) - below, len(b)),
        ]
        groups = [[op for op in ops if op[0] != "equal" or op[1] < op[2]]]
    old = "/dev/null" if new else f"a/{path}"
    return _cut([f"--- {old}", f"+++ b/{path}"], _shown(_hunks(a, b, lo, groups)))


def _lines(text: str) -> list[str]:
    """The lines of `text`, split at line feeds only (as read_file numbers them), each with
    its own: a last line without one differs from the same line with one."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _shared_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many lines the two share at their start, and then at their end."""
    most = min(len(a), len(b))
    head = 0
    while head < most and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < most - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _hunks(a: list[str], b: list[str], lo: int, groups: Iterable[list[Opcode]]) -> Iterator[str]:
    """Each group of changes as a hunk (as `difflib.unified_diff` writes one), its line
    numbers counted from `lo`, the first line of `a` and `b` in the whole texts."""
    for group in groups:
        first, last = group[0], group[-1]
        yield f"@@ -{_span(first[1], last[2], lo)} +{_span(first[3], last[4], lo)} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _span(start: int, stop: int, lo: int) -> str:
    begin, length = start + lo + 1, stop - start
    if length == 1:
        return str(begin)
    return f"{begin - 1 if not length else begin},{length}"


def _shown(lines: Iterator[str]) -> Iterator[str]:
    """The diff's lines as a person reads them: no line break (nor a CRLF's carriage return),
    long ones cut, and a line that ended the file without a line break marked so."""
    for line in lines:
        text = line.removesuffix("\n").removesuffix("\r") if line.endswith("\n") else line
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "…"
        yield text
        if not line.endswith("\n"):
            yield "\\ No newline at end of file"


def _cut(kept: list[str], lines: Iterator[str]) -> str:
    """`kept` and as many of `lines` as fit, then how many did not."""
    size = sum(len(line) + 1 for line in kept)
    for line in lines:
        if len(kept) == MAX_LINES or size + len(line) > MAX_CHARS:
            more = 1 + sum(1 for _ in lines)
            kept.append(f"… {more} more line{'s' if more > 1 else ''}")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)
