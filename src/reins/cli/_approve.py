"""The terminal's answers: to an approval request (yes, no, or always for this session), and
to the model's question (`ask_user`)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..core._questions import QuestionRequest
from ..permissions import Approval, ApprovalRequest
from ._safe import Quoted, shown
from ._stdin import LineSource

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
    """Shows the exact call and asks on the terminal (stderr, so `--json` output stays clean):
    the command, or the tool and its arguments, verbatim and whole, behind a bar (`Quoted`)."""

    def __init__(self, console: Console, lines: LineSource) -> None:
        self.console = console
        self.lines = lines

    async def __call__(self, request: ApprovalRequest) -> Approval:
        out = self.console
        self.lines.prompting()
        out.print(shown(f"\n{request.call.name} asks for approval ({request.rule}):", "bold"))
        out.print(Quoted(request.describe()))
        choices = f"[y]es, [n]o, [a]lways allow {request.grant!r} this session"
        if request.each_time:  # a write that runs code later: this once, or not
            choices = "[y]es, this once, [n]o"
        while True:
            out.print(
                Text(f"Allow? {choices} (default no): "), end="" if self.lines.inline else "\n"
            )
            line = await self.lines.line()
            if not line:  # end of input: nobody is there to say yes
                out.print()
                return Approval(False)
            answer = ANSWERS.get(line.strip().lower())
            if answer is not None and not (answer.always and request.each_time):
                return answer


class TerminalAsker:
    """Puts the model's question (`ask_user`) to the person at the terminal: a choice by its
    number or its words, any other answer, or an empty line for the model's default."""

    def __init__(self, console: Console, lines: LineSource) -> None:
        self.console = console
        self.lines = lines

    async def __call__(self, request: QuestionRequest) -> str | None:
        out = self.console
        self.lines.prompting()
        out.print(shown(f"\nThe agent asks: {request.question}", "bold"))
        for number, choice in enumerate(request.choices, 1):
            out.print(shown(f"  {number}. {choice}"))
        out.print(
            shown(f"Answer (empty: its default, {request.default}): "),
            end="" if self.lines.inline else "\n",
        )
        line = (await self.lines.line()).strip()
        if line.isdigit() and 1 <= int(line) <= len(request.choices):
            return request.choices[int(line) - 1]
        return line or None
