"""An immediate repeat of a call whose result cannot differ: not run, and not callable next.

A small model that copies its last step sends the same call again (the grep that found its
answer, the edit that failed, the command it ran): the repeat cache answers it, the model
copies that step too, and the loop guard stops the run, a found answer never given. Here the
repeat (of one of the last two steps, with nothing changed since) is rejected with the earlier
result, and the next reply may not call that tool (`ModelSettings.excluded_tools`: the embedded
model's grammar leaves it out; the prompt, and its cached prefix, stay as they are), so the
model moves on: it answers, or takes another step.
"""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING

from ..core._messages import AssistantMessage
from ..core._policy import CONTINUE, AfterResponse, Policy, Reject
from ..core._state import FINAL_ANSWER_TOOL, RunState

if TYPE_CHECKING:
    from ._guards import RunFacts

REPEAT_NOTE = "Not run: you made this exact call"
SHOWN_CHARS = 300


class RepeatBlock(Policy):
    """A response whose only call repeats one of the last two steps' exactly, a read whose
    result is cached or a file change that succeeded or failed, with nothing touched since, or
    the last command, with nothing changed or run since, is rejected (once in a row) with the
    earlier result; the next reply may not call that tool."""

    def __init__(self, facts: RunFacts, watched: Set[str]) -> None:
        self.facts = facts
        self.watched = watched
        """The tools whose repeat may give the same result: cached reads, file changes and
        commands (`RunFacts.repeated` tells when it does)."""

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        calls = response.tool_calls
        if len(calls) != 1 or calls[0].name not in self.watched or state.rejections:
            return CONTINUE
        found = self.facts.update(state).repeated(calls[0])
        if found is None:
            return CONTINUE
        ago, how, earlier = found
        name = calls[0].name
        when = "in your last step" if ago == 1 else "two steps ago"
        shown = earlier if len(earlier) <= SHOWN_CHARS else earlier[:SHOWN_CHARS] + "…"
        if how == "failed":
            said = f"and it failed: {shown}\nNothing has changed since: it would fail again"
        elif how == "done":
            said = f"and it succeeded: {shown}\nIt is done"
        else:
            said = f"and nothing has changed since. Its result was:\n{shown}\n"
            said += "It would be the same again"
        return Reject(
            f"{REPEAT_NOTE} ({name}) {when}, {said}. Use what you have: if it answers the "
            f"goal, call {FINAL_ANSWER_TOOL} now; if not, take a different step.",
            excluded_tools=(name,),
        )
