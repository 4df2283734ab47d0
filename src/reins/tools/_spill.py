"""A tool result too long to send whole: saved to a file the model can page through.

The file goes in the run's spill folder (the store's `spill/RUN/`, which the file tools may read
wherever the store is, and not write); the model gets the head and the tail, and where the rest
is. Without a spill folder (a log in memory), the middle is cut.
"""

from __future__ import annotations

import re
from pathlib import Path

HEAD_CHARS = 4000
TAIL_CHARS = 2000
HEAD_LINES = 60
TAIL_LINES = 30


def spill(content: str, *, folder: Path, name: str, shown_as: str) -> str:
    """Save `content` as `folder/name.txt` and return its preview; `shown_as` is the path the
    model reads it by. Raises OSError if the file cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    file = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:100]}.txt"
    (folder / file).write_text(content, encoding="utf-8", errors="surrogateescape")
    lines = content.splitlines(keepends=True)
    head = _take(lines, HEAD_LINES, HEAD_CHARS)
    tail = _take(lines[head:][::-1], TAIL_LINES, TAIL_CHARS)
    path = f"{shown_as}/{file}"
    first, last = head + 1, len(lines) - tail
    note = (
        f"[… lines {first}-{last} of {len(lines)} not shown. The whole output "
        f"({len(content)} characters) is saved in {path}: read any part of it with read_file "
        f'(path="{path}", start_line={first}, end_line={min(last, first + 199)}) …]\n'
    )
    shown = "".join(lines[:head]) or content[:HEAD_CHARS]
    rest = "".join(lines[len(lines) - tail :]) if tail else content[-TAIL_CHARS:]
    return f"{_ended(shown)}{note}{rest}"


def _take(lines: list[str], most: int, chars: int) -> int:
    """How many of `lines` fit in `most` lines and `chars` characters."""
    used = count = 0
    for line in lines[:most]:
        if used + len(line) > chars:
            break
        used, count = used + len(line), count + 1
    return count


def _ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
