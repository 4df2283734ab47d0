"""The `ask_user` tool the model calls: the loop answers it (`reins.core._questions`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core._errors import ToolError
from ..core._questions import ASK_USER
from ._tool import Tool, tool


def _ask_user(question: str, default: str, choices: Sequence[str] = ()) -> str:
    """Ask the user one question, only for a material choice you cannot settle yourself:
    overwriting a deliverable, where the output should go when that is unclear, or which
    format when the request is ambiguous. At most one question per run; do not ask about what
    you can find out with your tools. If the user does not answer, go on with your default.

    Args:
        question: The question, short and complete.
        default: What you will do if the user does not answer.
        choices: The answers you offer, if the choice is among a few.
    """
    raise ToolError("ask_user is answered by the run, not run as a tool")  # the loop answers


ASK_USER_TOOL: Tool = tool(name=ASK_USER, timeout=None)(_ask_user)
