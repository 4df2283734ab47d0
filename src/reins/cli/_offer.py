"""The terminal's answer to the offer to continue at a cap: one of its choices, or stop."""

from __future__ import annotations

from rich.console import Console

from ..policies import CapOffer
from ._safe import shown
from ._stdin import LineSource


class TerminalCapOffer:
    """Asks on the terminal (stderr, so `--json` output stays clean); the default is stop."""

    def __init__(self, console: Console, lines: LineSource) -> None:
        self.console = console
        self.lines = lines

    async def __call__(self, offer: CapOffer) -> str | None:
        out = self.console
        self.lines.prompting()
        out.print(shown(f"\nThe run reached a cap: {offer.detail}.", "bold"))
        numbered = ", ".join(f"[{i}] {choice}" for i, choice in enumerate(offer.choices, 1))
        while True:
            out.print(
                shown(f"Continue? {numbered}, [s]top (default stop): "),
                end="" if self.lines.inline else "\n",
            )
            line = await self.lines.line()
            if not line:  # end of input: nobody is there to choose
                out.print()
                return None
            answer = line.strip().lower()
            if answer in ("", "s", "stop", "n", "no"):
                return None
            if answer.isdigit() and 1 <= int(answer) <= len(offer.choices):
                return offer.choices[int(answer) - 1]
