"""Modes: one per run, told in the prompt and enforced where tools run.

`explore` and `plan` are read-only (the executor refuses what changes files or runs commands,
but writes under their folder); `write-test` makes changes and must run the tests after the
last one before its answer stands; `write-no-test` makes changes without running tests or
builds unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tools._scope import ReadOnlyScope
from ._sections import PromptContext


@dataclass(frozen=True, kw_only=True)
class Mode:
    """A way of working told to the model (`explore`, `plan`, `write-test`, `write-no-test`);
    a read-only one has a folder it may still write its notes to."""

    name: str
    prompt: str
    folder: str | None = None
    """A read-only mode's one writable folder; None: not read-only."""
    tests_after_changes: bool = False

    @property
    def scope(self) -> ReadOnlyScope | None:
        return None if self.folder is None else ReadOnlyScope(mode=self.name, folder=self.folder)


MODES = {
    m.name: m
    for m in (
        Mode(
            name="explore",
            folder="docs/explore",
            prompt="Mode: explore. This run is read-only: find out and explain, do not change "
            "the project. Tools that change files or run commands are refused; notes you "
            "want to keep may be written under docs/explore/.",
        ),
        Mode(
            name="plan",
            folder="docs/plan",
            prompt="Mode: plan. This run is read-only: study the project and write a plan, do "
            "not carry it out. Tools that change files or run commands are refused; write the "
            "plan under docs/plan/ (docs/plan/PLAN.md, say).",
        ),
        Mode(
            name="write-test",
            tests_after_changes=True,
            prompt="Mode: write-test. Make the changes, then run the project's tests with "
            "run_command and fix what fails. An answer given after a change with no test run "
            "since is refused.",
        ),
        Mode(
            name="write-no-test",
            prompt="Mode: write-no-test. Make the changes; do not run tests or builds unless "
            "the goal asks for it.",
        ),
    )
}
FALLBACK = "explore"


def resolve_mode(name: str | None) -> tuple[Mode | None, str | None]:
    """The mode a name means, and a note if it means none (then: explore, the safe one). An
    agent refuses an unknown name when it is made; a log written before that may hold one."""
    if name is None:
        return None, None
    mode = MODES.get(name.strip().lower())
    if mode is not None:
        return mode, None
    note = f"unknown mode {name!r}: running in {FALLBACK} mode (modes: {', '.join(MODES)})"
    return MODES[FALLBACK], note


@dataclass(frozen=True)
class ModeSection:
    """The mode's part of the prompt."""

    mode: Mode | None
    name: str = "mode"
    budget: int | None = None

    def render(self, context: PromptContext) -> str:
        return self.mode.prompt if self.mode is not None else ""
