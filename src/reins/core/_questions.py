"""`ask_user`: the model asks the person one question about a material choice. Like an
approval, the question and its answer are events; the answer comes from a handler in this
process (the terminal, an API callback), or the run pauses `waiting` and a later process
answers (`Agent.resume(run_id, answers=...)`). Headless, the tool is not offered. The tool the
model calls is `reins.tools.ASK_USER_TOOL`; the loop answers it."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

ASK_USER = "ask_user"


@dataclass(frozen=True, kw_only=True)
class QuestionRequest:
    """What the model asks, with the choices it offers and what it does if nobody answers."""

    session_id: str
    run_id: str
    call_id: str
    question: str
    choices: tuple[str, ...] = ()
    default: str


Asker: TypeAlias = Callable[[QuestionRequest], str | Awaitable[str | None] | None]
"""Answers a question (sync or async): the answer, or None when the person dismissed it."""
AskMode: TypeAlias = Literal["pause"]


async def ask(handler: Asker, request: QuestionRequest) -> str | None:
    answer = handler(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer.strip() or None if isinstance(answer, str) else None


def answered(answer: str | None, by: str, default: str) -> tuple[str, bool]:
    """The tool result for an answer (its text, and whether it is an error)."""
    if answer is not None:
        return f"The user answered: {answer}", False
    why = "timed out" if by == "timeout" else "was dismissed"
    return f"The question {why}: go on with your default ({default}).", True
