"""What the model is told at the start of a run."""

from __future__ import annotations

from pathlib import Path

from ._state import FINAL_ANSWER_PREFIX, FINAL_ANSWER_TOOL

BASE_PROMPT = """\
You are an autonomous agent working in the folder {workspace}.
Work towards the user's goal step by step: think briefly, then call one or more tools.
Paths are relative to that folder; the file tools cannot reach files outside it.{approvals}
When the goal is reached, call the `{tool}` tool with your answer (or reply with a line that starts
with `{prefix}`, followed by the answer)."""


APPROVALS = """
Some calls need the user's approval; a call that is denied says so: do not repeat it."""


def system_prompt(*, workspace: Path, instructions: str, approvals: bool = False) -> str:
    """`approvals`: some of the run's calls may be put to the user (or denied)."""
    base = BASE_PROMPT.format(
        workspace=workspace,
        tool=FINAL_ANSWER_TOOL,
        prefix=FINAL_ANSWER_PREFIX,
        approvals=APPROVALS if approvals else "",
    )
    return f"{base}\n\n{instructions.strip()}" if instructions.strip() else base
