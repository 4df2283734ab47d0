"""The terminal's answer to an approval request: yes, no, or always for this session."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..permissions import Approval, ApprovalRequest
from ._stdin import TerminalLines

ANSWERS = {
    "y": Approval(True),
    "yes": Approval(True),
    "n": Approval(False),
    "no": Approval(False),
    "": Approval(False),
    "a": Approval(True, always=True),
    "always": Approval(True, always=True),
}


class TerminalApprover:
    """Shows the exact call and asks on the terminal (stderr, so `--json` output stays clean)."""

    def __init__(self, console: Console, lines: TerminalLines) -> None:
        self.console = console
        self.lines = lines

    async def __call__(self, request: ApprovalRequest) -> Approval:
        out = self.console
        out.print(Text(f"\n{request.call.name} asks for approval ({request.rule}):", "bold"))
        out.print(Text(request.describe()), markup=False, emoji=False, highlight=False)
        choices = f"[y]es, [n]o, [a]lways allow {request.grant!r} this session"
        while True:
            out.print(Text(f"Allow? {choices} (default no): "), end="")
            line = await self.lines.line()
            if not line:  # end of input: nobody is there to say yes
                out.print()
                return Approval(False)
            answer = ANSWERS.get(line.strip().lower())
            if answer is not None:
                return answer
