"""`approval="ask"` from Python with no function of yours: the request is put to the person at
this process's terminal (stderr, then a line of stdin). The CLI has its own, richer prompt; this
one is for scripts run by hand."""

from __future__ import annotations

import asyncio
import sys

from ..core._approval import Approval, ApprovalRequest

_ANSWERS = {
    "y": Approval(True),
    "yes": Approval(True),
    "n": Approval(False),
    "no": Approval(False),
    "": Approval(False),
    "a": Approval(True, always=True),
    "always": Approval(True, always=True),
}


def has_terminal() -> bool:
    """Whether someone can answer here: stdin is a terminal."""
    return sys.stdin is not None and sys.stdin.isatty()


async def ask_on_terminal(request: ApprovalRequest) -> Approval:
    """Shows the exact call and waits for yes, no or always (default: no)."""
    choices = f"[y]es, [n]o, [a]lways allow {request.grant!r} this session"
    if request.each_time:  # a write that runs code later: this once, or not
        choices = "[y]es, this once, [n]o"
    print(f"\n{request.call.name} asks for approval ({request.rule}):", file=sys.stderr)
    print(f"  {request.describe()}", file=sys.stderr)
    while True:
        print(f"Allow? {choices} (default no): ", end="", file=sys.stderr, flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:  # end of input: nobody is there to say yes
            return Approval(False)
        answer = _ANSWERS.get(line.strip().lower())
        if answer is not None and not (answer.always and request.each_time):
            return answer
