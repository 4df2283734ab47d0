"""An immediate repeat of a call whose result cannot differ: not run, and not callable next.

A small model that copies its last step sends the same call again (the grep that found its
answer, the edit that failed, the command it ran): the repeat cache answers it, the model
copies that step too, and the loop guard stops the run, a found answer never given. Here the
repeat (of one of the last two steps, with nothing changed since) is rejected with the earlier
result, and the next reply may not call that tool (`ModelSettings.excluded_tools`: the embedded
model's grammar leaves it out; the prompt, and its cached prefix, stay as they are), so the
model moves on: it answers, or takes another step.

Two repeats get more than that. An edit whose `old` was not in the file is held instead: the
next reply's `old` must be one line of that file, or two in a row, as they are
(`ModelSettings.argument_schemas`), for the 1.5B model wrote the same guess (`http:` for
`"http": {`) after it was shown the file's text and the lines most like it; an edit given a
folder (`.`, for a rename) is held to the files under it that hold `old`. And when the goal
is a question and the repeat's earlier result stands, the next reply may only answer: barred
from one tool, the model went on to another (`run_command` with the `grep` it was barred from,
a `find_files` after the `wc -w` that had counted) until the step cap, its answer in sight.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from itertools import pairwise
from typing import TYPE_CHECKING

from ..core._messages import AssistantMessage, ToolCall
from ..core._policy import CONTINUE, AfterResponse, Policy, Reject
from ..core._state import FINAL_ANSWER_TOOL, RunState
from ..core._threads import in_thread
from ._leftovers import leftovers
from ._read_first import file_text

if TYPE_CHECKING:
    from ..tools import Workspace
    from ._guards import RunFacts

REPEAT_NOTE = "Not run: you made this exact call"
SHOWN_CHARS = 300
EDIT_TOOL = "edit_file"
NOT_FOUND = "old text not found"
FOLDER = " is a folder: edit_file changes one file"
MAX_HELD_LINES = 200
"""A file longer than this is not held to its lines: the grammar would be too big."""
_CHANGE_VERB = re.compile(
    r"\b(?:rename|replace|fix|add|update|bump|set|change|delete|remove|append|insert|move|copy"
    r"|edit|modify|write|create|save|convert|upgrade|downgrade|pin|make|run|install)\b",
    re.IGNORECASE,
)


def asks_question(goal: str) -> bool:
    """Whether a goal is a question about the workspace ("How many ...?", "Where is ...
    defined?"), not a request to change it ("Can you fix ...?")."""
    return "?" in goal and _CHANGE_VERB.search(goal) is None


class RepeatBlock(Policy):
    """A response whose only call repeats one of the last two steps' exactly, a read whose
    result is cached or a file change that succeeded or failed, with nothing touched since, or
    the last command, with nothing changed or run since, is rejected (once in a row) with the
    earlier result; the next reply may not call that tool."""

    def __init__(
        self,
        facts: RunFacts,
        watched: Set[str],
        tool_names: Sequence[str],
        workspace: Workspace | None = None,
    ) -> None:
        self.facts = facts
        self.watched = watched
        """The tools whose repeat may give the same result: cached reads, file changes and
        commands (`RunFacts.repeated` tells when it does)."""
        self.tool_names = tuple(tool_names)
        self.workspace = workspace
        """Where an edit's file is read, to hold the next `old` to its lines."""

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
            if (held := await self._held(calls[0], earlier)) is not None:
                schemas, advice = held
                return Reject(
                    f"{REPEAT_NOTE} ({name}) {when}, {said}. {advice}",
                    argument_schemas={name: schemas},
                )
        elif how == "done":
            said = f"and it succeeded: {shown}\nIt is done"
        else:
            said = f"and nothing has changed since. Its result was:\n{shown}\n"
            said += "It would be the same again"
            if asks_question(state.goal):
                return Reject(
                    f"{REPEAT_NOTE} ({name}) {when}, {said}. Your goal is a question: answer "
                    f"it now from what you have found, with {FINAL_ANSWER_TOOL}.",
                    excluded_tools=tuple(t for t in self.tool_names if t != FINAL_ANSWER_TOOL),
                )
        return Reject(
            f"{REPEAT_NOTE} ({name}) {when}, {said}. Use what you have: if it answers the "
            f"goal, call {FINAL_ANSWER_TOOL} now; if not, take a different step.",
            excluded_tools=(name,),
        )

    async def _held(self, call: ToolCall, failure: str) -> tuple[dict[str, object], str] | None:
        """For an edit that failed as it will again, schemas that hold the next one, and what
        to do: an `old` not found, to one line of the file or two in a row, as they are; a
        folder for a path, to the files under it that hold `old`."""
        path, old = call.arguments.get("path"), call.arguments.get("old")
        if call.name != EDIT_TOOL or self.workspace is None or not isinstance(path, str):
            return None
        if failure.startswith(NOT_FOUND):
            return self._lines(self.workspace, path)
        if FOLDER in failure and isinstance(old, str) and old.strip():
            within = () if path.strip("./") == "" else (path.strip("/"),)
            found = await in_thread(
                leftovers, self.workspace, [old.strip()], (), within, limit=None
            )
            files = list(dict.fromkeys(place.split(":", 1)[0] for place in found))
            if files:
                advice = "path must name one file: change each of those that hold old in turn."
                return {"path": {"enum": files}}, advice
        return None

    @staticmethod
    def _lines(workspace: Workspace, path: str) -> tuple[dict[str, object], str] | None:
        text = file_text(workspace, path)
        if text is None:
            return None
        lines = text.splitlines()
        if len(lines) > MAX_HELD_LINES:
            return None
        pairs = ["\n".join(pair) for pair in pairwise(lines)]
        olds = list(dict.fromkeys(t for t in [*lines, *pairs] if t.strip()))
        if not olds:
            return None
        advice = (
            "old must be text the file holds: copy one or two of its lines exactly as they "
            "are, whitespace included, and write new as those lines should read."
        )
        return {"path": {"const": path}, "old": {"enum": olds}}, advice
