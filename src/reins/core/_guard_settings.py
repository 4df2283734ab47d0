"""`Guards`: which guards a run has, and their settings.

A run's config records them (`RunConfig.guards`), so a resume and a replay use what the run was
started with; the policies they make are in `policies/_guards.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, get_args

from ._errors import UsageError

GUARD_NAMES = (
    "file-action",
    "repeat-cache",
    "loop",
    "markup",
    "goal-anchor",
    "one-call",
    "repetition",
    "schema-echo",
    "done-check",
    "escapes",
    "syntax-check",
    "rereads",
    "change-review",
    "compute",
    "read-first",
    "repeat-block",
)
"""The guards' names, as `--no-guard NAME` and the config's `[guards]` table spell them."""

GOAL_ANCHOR = 5
"""How often the goal is restated when the guard is switched on by name (`--guard goal-anchor`)."""

SyntaxCheck = Literal["report", "refuse", "off"]
"""What a write that breaks a file a parser reads gets: a note in its result, a refusal (the
file left as it was), or nothing."""
_OFF: dict[str, Any] = {"goal_anchor": 0, "syntax_check": "off"}
"""The settings that are not booleans, as switched off (the others: False)."""
_ON: dict[str, Any] = {"goal_anchor": GOAL_ANCHOR, "syntax_check": "report"}


@dataclass(frozen=True, kw_only=True)
class Guards:
    """Which guards a run has, and their settings (`Agent(guards=...)`, `[guards]`)."""

    file_action: bool = True
    """Refuse a final answer while a file the goal asks for is not written (twice at most)."""
    repeat_cache: bool = True
    """Answer an exact repeat of a successful read-only call with its earlier result."""
    loop: bool = True
    """Warn, then stop (`stalled`), a run that repeats itself or makes no progress."""
    loop_threshold: int = 3
    """The same call this many rounds in a row, or an A-B oscillation this many times over."""
    anti_stall_threshold: int = 8
    """Rounds in a row with no successful change and no new result."""
    markup: bool = True
    """Nudge a reply that writes tool-call markup as text (twice at most); strip it from a
    final answer."""
    goal_anchor: int = GOAL_ANCHOR
    """Restate the goal every this many rounds; 0: never."""
    one_call: bool = False
    """Run only the first tool call of a response (for small models); off by default."""
    repetition: bool = True
    """A sentence, line or phrase a reply's text repeats back to back (3 times or more) is
    collapsed to one copy and `[… repeated N times]` in the history sent back to the model
    (and in a final answer given as text); the log keeps the reply as the model wrote it."""

    schema_echo: bool = True
    """Refuse a call whose argument is its parameter's name or description (`path="file_path"`,
    `answer="The final answer."`): what small models write when they copy the schema."""
    done_check: bool = True
    """After a step whose change succeeded (a file tool's write or edit, a writing command
    that exited 0), ask whether the goal is reached and, if so, to answer: small models otherwise
    go on "confirming" and inventing more work."""
    escapes: bool = True
    """In an argument that is a regex, a glob or a path, read a control character back as the
    JSON escape the model meant (a backspace as `\\b`), saying so in the result."""
    syntax_check: SyntaxCheck = "report"
    """A write_file or edit_file that leaves a JSON, TOML, YAML, Python or XML file that parsed
    unparsable: "report" it in the result (the parser's message, line and column), "refuse" it
    (the file left as it was), or "off"."""
    rereads: bool = True
    """Answer read_file of a file the run read whole, with another range (or whole again), with
    the lines asked for from that read and a nudge to answer, while the file is unchanged."""
    change_review: bool = True
    """Send back once a final answer after an edit that replaced a name (a rename) that still
    occurs in the workspace, with the places and a short diff of each change."""
    compute: bool = True
    """Tell the model to count and add up with a tool, not by eye: the prompt's tool notes
    name run_command's `wc`, `grep -c` and `awk`, and a run with read_file that cannot run
    commands (no run_command, or a read-only mode) is given the `calculate` tool."""

    read_first: bool = True
    """Do not run a write_file replacing a file, or an edit_file whose old is not in it, of a
    file the run has not read: give the model the file's text instead (Claude Code's Edit and
    Write refuse a file not read first)."""

    repeat_block: bool = True
    """Reject a call that repeats one of the last two steps' exactly when its result cannot
    differ (a cached read, a file change that succeeded or failed, nothing touched since; the
    last command, nothing changed or run since), with the earlier result; the next reply may
    not call that tool."""

    def __post_init__(self) -> None:
        if self.loop_threshold < 2 or self.anti_stall_threshold < 1 or self.goal_anchor < 0:
            raise UsageError(
                "guards: loop_threshold must be at least 2, anti_stall_threshold at least 1, "
                "goal_anchor at least 0"
            )
        if self.syntax_check not in get_args(SyntaxCheck):
            raise UsageError(
                f"guards: syntax_check={self.syntax_check!r}: one of "
                f"{', '.join(map(repr, get_args(SyntaxCheck)))}"
            )

    def without(self, *names: str) -> Guards:
        """These guards switched off (names as in `GUARD_NAMES`)."""
        off: dict[str, Any] = {}
        for name in names:
            field = _field(name)
            off[field] = _OFF.get(field, False)
        return replace(self, **off)

    def switched(
        self,
        *,
        off: Sequence[str] = (),
        on: Sequence[str] = (),
        loop_threshold: int | None = None,
        anti_stall_threshold: int | None = None,
        goal_anchor: int | None = None,
    ) -> Guards:
        """These guards with the command line's say: `off` switched off, then `on` switched on
        (a goal anchor that was off: every 5 rounds; a syntax check: "report"), then the
        settings given (None: as they are)."""
        chosen = self.without(*off)
        turned: dict[str, Any] = {}
        for name in on:
            field = _field(name)
            if getattr(chosen, field) in (False, _OFF.get(field)):
                turned[field] = _ON.get(field, True)
        settings = {
            "loop_threshold": loop_threshold,
            "anti_stall_threshold": anti_stall_threshold,
            "goal_anchor": goal_anchor,
        }
        turned.update({k: v for k, v in settings.items() if v is not None})
        return replace(chosen, **turned) if turned else chosen

    def changes(self) -> list[str]:
        """What differs from the defaults, briefly (`loop off`, `goal_anchor 3`)."""
        default = Guards()
        said = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == getattr(default, f.name):
                continue
            if isinstance(value, bool):
                said.append(f"{f.name.replace('_', '-')} {'on' if value else 'off'}")
            else:
                said.append(f"{f.name} {value}")
        return said


def _field(name: str) -> str:
    if name not in GUARD_NAMES:
        raise UsageError(f"no guard {name!r}; the guards: {', '.join(GUARD_NAMES)}")
    return name.replace("-", "_")
