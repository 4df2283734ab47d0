"""How skills reach the model: their names and descriptions in the system prompt (a section
with its own budget), and `load_skill`, which returns one's instructions and bundled files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..context._sections import PromptContext
from ..core._errors import ToolError
from ..tools import Tool, ToolContext, tool
from ._skill import Skill

LOAD_SKILL = "load_skill"


@dataclass(frozen=True)
class SkillsSection:
    """The skills the model may load: a line each, cut to the budget."""

    skills: Sequence[Skill]
    name: str = "skills"
    budget: int | None = 800

    def render(self, context: PromptContext) -> str:
        if not self.skills:
            return ""
        lines = [f"- {s.name}: {s.description}" for s in self.skills]
        outside = any(not s.folder.is_relative_to(context.workspace) for s in self.skills)
        where = (
            " A skill's files may lie outside the workspace: read_file reads them by the "
            "paths load_skill gives."
            if outside
            else ""
        )
        return (
            "Skills (instructions for particular tasks): when the task matches one, call "
            f"{LOAD_SKILL} with its name first and follow what it says.{where}\n" + "\n".join(lines)
        )


def load_skill_tool(skills: Sequence[Skill]) -> Tool:
    """`load_skill(name)`: the skill's instructions and the paths of what it bundles."""
    by_name = {s.name: s for s in skills}

    def load_skill(context: ToolContext, name: str) -> str:
        """Load a skill listed in your instructions: returns what to do and the files it
        bundles (read them with read_file; run its scripts with run_command).

        Args:
            name: The skill's name, as listed.
        """
        skill = by_name.get(name)
        if skill is None:
            raise ToolError(
                f"no skill named {name!r}; the skills are: {', '.join(sorted(by_name)) or 'none'}"
            )
        try:
            body = skill.body()
            files = skill.bundled()
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"skill {name!r} cannot be read now: {exc}") from None
        shown = context.workspace.shown
        parts = [f"# Skill: {skill.name}\n\n{body}"]
        if files:
            listed = "\n".join(f"- {shown(f)}" for f in files)
            parts.append(
                f"Files of this skill (its folder: {shown(skill.folder)}):\n{listed}\n"
                "Read them with read_file when the instructions call for them; run its "
                "scripts with run_command."
            )
        return "\n\n".join(parts)

    return tool(read_only=True, path_args=(), timeout=30)(load_skill)
