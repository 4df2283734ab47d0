"""The system prompt, assembled from ordered sections.

Each section provider renders one part (the base prompt, the mode, your instructions, the
project's AGENTS.md, and what later issues add: skills, memory) under its own token budget. A
provider that raises is left out with a notice: a broken source never stops a run. Adding a
source is adding a provider; the loop does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ._compaction import clip
from ._instructions import INSTRUCTION_FILES, discover
from ._prompt import base_prompt
from ._tokens import CHARS_PER_TOKEN, text_tokens


@dataclass(kw_only=True)
class PromptContext:
    """What a section may draw on."""

    workspace: Path
    """The workspace's real path (symlinks resolved)."""
    goal: str
    approvals: bool = False
    """Some calls may be put to the user (or denied)."""
    notes: list[str] = field(default_factory=list[str])
    """What a section wants a person to know (a capped file, say): recorded as notices."""


class SectionSource(Protocol):
    """A source of one part of the system prompt: a `PromptSection`, or an object of yours
    with the same `name`, `budget` and `render(context)` (and, if it reads what takes time,
    an async `prepare(context)`, awaited first: `prepare_sections`)."""

    @property
    def name(self) -> str: ...

    @property
    def budget(self) -> int | None:
        """Tokens the part may take; None: no cap."""
        ...

    def render(self, context: PromptContext) -> str:
        """The part, or "" for none."""
        ...


@dataclass(frozen=True, kw_only=True)
class PromptSection:
    """A part of the system prompt from a function: `PromptSection(name="team",
    render=lambda ctx: "...", budget=200)`; `render` is given the `PromptContext` and returns
    the part ("" for none)."""

    name: str
    render: Callable[[PromptContext], str]
    budget: int | None = None
    """Tokens the part may take; None: no cap."""


def Section(
    *, name: str, render_fn: Callable[[PromptContext], str], budget: int | None = None
) -> PromptSection:
    """`PromptSection`, as it was spelled in 0.1 (`render_fn`)."""
    return PromptSection(name=name, render=render_fn, budget=budget)


@dataclass(frozen=True)
class BaseSection:
    """reins' base prompt, or the one given in its place (`Agent(system_prompt=...)`)."""

    replacement: str | None = None
    name: str = "base"
    budget: int | None = None

    def render(self, context: PromptContext) -> str:
        if self.replacement is not None:
            return self.replacement
        return base_prompt(approvals=context.approvals)


@dataclass(frozen=True)
class TextSection:
    """A fixed text (`Agent(instructions=...)`)."""

    text: str
    name: str = "instructions"
    budget: int | None = None

    def render(self, context: PromptContext) -> str:
        return self.text.strip()


@dataclass(frozen=True)
class ProjectInstructions:
    """The AGENTS.md files from the repository root down to the workspace."""

    names: Sequence[str] = INSTRUCTION_FILES
    name: str = "project"
    budget: int | None = None  # the files have their own cap, in bytes

    def render(self, context: PromptContext) -> str:
        found = discover(context.workspace, self.names)
        context.notes.extend(found.notes)
        return found.render()


@dataclass(frozen=True)
class ToolNotes:
    """What the tools' descriptions cannot say, as it depends on the run: where an over-long
    result is saved (`spill`, the store's folder; None: results are cut, nothing to say), and
    how to count and add up with the tools the run has (`tools`; `commands`: run_command may
    run, not refused by a read-only mode; `compute`: the compute guard is on)."""

    spill: Path | None
    workspace: Path
    tools: frozenset[str] = frozenset()
    commands: bool = True
    compute: bool = True
    name: str = "tools"
    budget: int | None = None

    def render(self, context: PromptContext) -> str:
        notes = (self._computing(), self._moving(), self._spilled())
        return "\n".join(note for note in notes if note)

    def _moving(self) -> str:
        """Small models "copy" a file by writing what they guess it holds, and "delete" one
        by writing it empty."""
        return FILES_WITH_COMMANDS if "run_command" in self.tools and self.commands else ""

    def _computing(self) -> str:
        """Small models miscount lines and words and add wrong when they do it by eye."""
        if not self.compute:
            return ""
        if "run_command" in self.tools and self.commands:
            return COMPUTE_WITH_COMMANDS
        if "calculate" in self.tools:
            return COMPUTE_WITH_CALCULATE
        return ""

    def _spilled(self) -> str:
        if self.spill is None:
            return ""
        if self.spill.is_relative_to(self.workspace):
            where = f"under {self.spill.relative_to(self.workspace).as_posix()}/"
        else:  # no absolute path here: small models copy it into paths where it does not go
            where = "in the run log's folder (outside the workspace, but read_file may read it)"
        return (
            f"A tool result too long to show whole is saved to a file {where}: the result "
            "shows its head and tail and the file's path; read_file pages through it."
        )


COMPUTE_WITH_COMMANDS = (
    "Count lines, words or matches and add up numbers with run_command (`wc -l FILE`, "
    '`wc -w FILE`, `grep -c WORD FILE`, `python3 -c "print(5 + 7 + 9)"` with the numbers you '
    "read, `awk -F, 'NR > 1 {s += $4} END {print s}' FILE` for column 4 of a CSV file with a "
    "header line), not by eye."
)
FILES_WITH_COMMANDS = (
    "Copy, move or delete files with run_command (`cp a.txt b.txt`, `mv a.txt b.txt`, "
    "`rm a.txt`), not with write_file."
)
COMPUTE_WITH_CALCULATE = (
    "Add up or average numbers with calculate (`sum([12, 7.5, 30]) / 3`), not in your head; "
    "a whole read_file ends with the file's line count."
)


async def prepare_sections(sections: Sequence[SectionSource], context: PromptContext) -> None:
    """Let each section with an async `prepare(context)` read what takes time (a database, a
    server) before the prompt is built, off the event loop; one that fails is said in
    `context.notes`, and renders unprepared."""
    for section in sections:
        prepare = getattr(section, "prepare", None)
        if prepare is None:
            continue
        try:
            await prepare(context)
        except Exception as exc:
            context.notes.append(
                f"prompt section {section.name!r} could not prepare: {type(exc).__name__}: {exc}"
            )


def build_prompt(sections: Sequence[SectionSource], context: PromptContext) -> str:
    """The system prompt: each section's part in order, cut to its budget; a section that
    fails is left out, and `context.notes` says so."""
    parts: list[str] = []
    for section in sections:
        try:
            part = section.render(context).strip()
        except Exception as exc:  # fail open: the run goes on without this part
            context.notes.append(
                f"prompt section {section.name!r} failed and was left out: "
                f"{type(exc).__name__}: {exc}"
            )
            continue
        budget = section.budget
        if budget is not None and text_tokens(part) > budget:
            context.notes.append(f"prompt section {section.name!r} cut to {budget} tokens")
            part = clip(part, budget * CHARS_PER_TOKEN)
        if part:
            parts.append(part)
    return "\n\n".join(parts)
