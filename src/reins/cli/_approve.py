"""The terminal's answer to an approval request: yes, no, or always for this session."""

from __future__ import annotations

import asyncio
import sys
import threading

from rich.console import Console
from rich.text import Text

from ..permissions import Approval, ApprovalRequest

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

    def __init__(self, console: Console) -> None:
        self.console = console

    async def __call__(self, request: ApprovalRequest) -> Approval:
        out = self.console
        out.print(Text(f"\n{request.call.name} asks for approval ({request.rule}):", "bold"))
        out.print(Text(request.describe()), markup=False, emoji=False, highlight=False)
        choices = f"[y]es, [n]o, [a]lways allow {request.grant!r} this session"
        while True:
            out.print(Text(f"Allow? {choices} (default no): "), end="")
            line = await _read_line()
            if not line:  # end of input: nobody is there to say yes
                out.print()
                return Approval(False)
            answer = ANSWERS.get(line.strip().lower())
            if answer is not None:
                return answer


def _read_line() -> asyncio.Future[str]:
    """A line of stdin, read in a daemon thread: the event loop (and Ctrl-C) go on meanwhile,
    and a run that ends while the prompt waits does not wait for the person."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def settle(text: str) -> None:
        if not line.done():
            line.set_result(text)

    def read() -> None:
        try:
            text = sys.stdin.readline()
        except (OSError, ValueError):
            text = ""
        loop.call_soon_threadsafe(settle, text)

    threading.Thread(target=read, name="reins-approval", daemon=True).start()
    return line
