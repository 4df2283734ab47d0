"""Text from outside (a model, a tool, a file, a log) made safe to show on a terminal.

Such text may hold what a terminal obeys rather than shows: an escape sequence (ESC, or the
8-bit CSI U+009B) that moves the cursor, erases a line, sets the title, makes a hyperlink or
writes the clipboard; a carriage return or a backspace that writes over what is shown; a bidi
override or a zero-width character that makes it read other than it is. Each such character
(Unicode's controls, format characters, line and paragraph separators, lone surrogates) is
shown as its Python escape, `\\x1b`, `\\r`, `\\x9b`, `\\u202e`, so what is shown is what was
sent, and nothing it holds can rewrite what reins draws.

The door is the console: `SafeConsole` shows every string it is given this way, before rich
reads it, so each command's text from outside (its markup escaped by the caller) is covered
where it is printed. A `Text` made of outside text is made with `shown`; a command asked
about is shown as a `Quoted` block.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import ConsoleOptions, RenderResult

HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""The categories of what is obeyed, or not seen, rather than shown."""

ESCAPE_STYLE = "reverse"
"""An escape in a `Quoted` block: told apart from the same characters typed."""

_SUSPECT = re.compile(r"[^\x20-\x7e]+")  # all but printable ASCII, checked a run at a time
_SUSPECT_IN_LINES = re.compile(r"[^\x20-\x7e\n\t]+")


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with each control and format character shown as its escape. `lines`: a newline
    and a tab stay layout (as does a carriage return before a newline, which cannot write over
    anything), as in a tool's output; without it, for a name or one line, they are escaped."""
    if text.isprintable():  # the usual, and fast: one line of text, any script
        return text
    if lines:
        text = text.replace("\r\n", "\n")
        if text.replace("\n", "").replace("\t", "").isprintable():
            return text
    return "".join(piece for piece, _ in pieces(text, lines=lines))


def pieces(text: str, *, lines: bool = False) -> list[tuple[str, bool]]:
    """`text` as its runs of characters shown as they are and its escapes, in order: (text,
    True) for an escape."""
    found: list[tuple[str, bool]] = []
    start = 0
    for match in (_SUSPECT_IN_LINES if lines else _SUSPECT).finditer(text):
        if match.start() > start:
            found.append((text[start : match.start()], False))
        run = match.group()
        if run.isprintable():  # letters of another script: nothing to escape
            found.append((run, False))
        else:
            for ch in run:
                if ch.isprintable() or unicodedata.category(ch) not in HIDDEN:
                    found.append((ch, False))  # a space of another width, a private-use icon
                else:
                    found.append((ch.encode("unicode_escape").decode("ascii"), True))
        start = match.end()
    if start < len(text):
        found.append((text[start:], False))
    return found


def json_visible(line: str) -> str:
    """A JSON text with each control and format character that JSON encoders leave raw (DEL,
    C1 such as the 8-bit CSI, bidi overrides, zero-width characters) as its `\\u` escape: the
    same data to a parser, nothing a terminal obeys (`--json` output is often read on one)."""
    if line.isascii() and "\x7f" not in line:
        return line
    return _JSON_SUSPECT.sub(_json_escapes, line)


_JSON_SUSPECT = re.compile(r"[^\x00-\x7e]+")  # JSON's layout (a newline, a tab) is not a string's


def _json_escapes(match: re.Match[str]) -> str:
    return "".join(
        ch if ch.isprintable() or unicodedata.category(ch) not in HIDDEN else _utf16(ch)
        for ch in match.group()
    )


def _utf16(ch: str) -> str:
    """`ch` as JSON's `\\u` escape (a surrogate pair past the BMP)."""
    units = ch.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def shown(text: str, style: str = "") -> Text:
    """A `Text` (no markup) of outside text, its lines kept."""
    return Text(visible(text, lines=True), style=style)


class SafeConsole(Console):
    """A console that shows every string it is given with its control characters visible
    (`visible(lines=True)`): rich reads markup and strips only a few controls (a carriage
    return, a backspace; not ESC), so text from outside would reach the terminal raw. Our own
    markup holds no control characters, and an escape ends in a letter or digit, never in the
    backslash that would escape a tag after it."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible(text, lines=True), **kwargs)


class Quoted:
    """Text to be read exactly (a command asked about, a question), shown verbatim and whole
    behind a bar: each of its lines, and each piece a long one wraps to, starts with the bar,
    so no line of it can pass for a line of ours (a call, a prompt). Its escapes stand out
    from the same characters typed."""

    BAR = "  │ "

    def __init__(self, text: str, style: str = "") -> None:
        self.text, self.style = text, style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - len(self.BAR))
        for line in self.text.split("\n"):
            body = Text(style=self.style, overflow="fold")
            for piece, escaped in pieces(line):
                body.append(piece, ESCAPE_STYLE if escaped else "")
            for part in body.wrap(console, width, overflow="fold") or [Text()]:
                yield Text.assemble((self.BAR, "dim"), part)
