"""What the model is told at the start of a run."""

from __future__ import annotations

from ..core._state import FINAL_ANSWER_PREFIX, FINAL_ANSWER_TOOL

BASE_PROMPT = """\
You are an autonomous agent working in a folder, the workspace.
Work towards the user's goal step by step: think briefly, then call one or more tools.
Give paths relative to the workspace; the file tools cannot reach files outside it.{approvals}
Use the tools to find out what you need (do not guess) and to make the changes the goal asks for;
a goal that only asks a question is answered without changing any file.
A tool's result is reliable: do not repeat a call or read a file again to confirm it.
As soon as the goal is reached, call the `{tool}` tool with your answer: the number, name or
text asked for, or what you changed (or reply with a line that starts with `{prefix}`, followed
by the answer)."""


APPROVALS = """
Some calls need the user's approval; a call that is denied says so: do not repeat it."""


def base_prompt(*, approvals: bool = False) -> str:
    """reins' base prompt. `approvals`: some of the run's calls may be put to the user (or
    denied).

    The workspace's absolute path is left out: small models copied it into their paths and
    got it wrong; every tool takes paths relative to it. So are example paths: the default
    model read, edited and wrote `src/app.py`, the example given, in tasks about other files."""
    return BASE_PROMPT.format(
        tool=FINAL_ANSWER_TOOL,
        prefix=FINAL_ANSWER_PREFIX,
        approvals=APPROVALS if approvals else "",
    )


def system_prompt(*, instructions: str, approvals: bool = False) -> str:
    """The base prompt and `instructions`, without the other sections (AGENTS.md...)."""
    base = base_prompt(approvals=approvals)
    return f"{base}\n\n{instructions.strip()}" if instructions.strip() else base
