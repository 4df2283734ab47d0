"""A skill: a folder with a SKILL.md (YAML front-matter `name` and `description`, then the
instructions), and whatever it bundles (scripts, references, assets)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core._files import read_regular

SKILL_FILE = "SKILL.md"
PROJECT_FOLDERS = (".reins/skills", ".agents/skills")
"""Where a project keeps its skills, below its folder."""
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_DESCRIPTION = 1024
MAX_FILES = 50
"""Bundled files listed when a skill is loaded."""


@dataclass(frozen=True)
class Skill:
    """A skill: a folder with SKILL.md (its name and description in front-matter, then the
    instructions) and what it bundles; the model loads it when the task needs it."""

    name: str
    description: str
    folder: Path
    """Absolute; holds SKILL.md and what it bundles."""

    @property
    def file(self) -> Path:
        return self.folder / SKILL_FILE

    def body(self) -> str:
        """The instructions: SKILL.md after its front-matter."""
        return _split(read_regular(self.file).decode("utf-8"))[1].strip()

    def bundled(self) -> list[Path]:
        """The files beside SKILL.md (hidden ones left out), at most `MAX_FILES`."""
        found: list[Path] = []
        for path in sorted(self.folder.rglob("*")):
            relative = path.relative_to(self.folder)
            if any(part.startswith(".") for part in relative.parts):
                continue
            if path.is_file() and path.name != SKILL_FILE:
                found.append(path)
                if len(found) == MAX_FILES:
                    break
        return found


class SkillError(ValueError):
    """A SKILL.md that cannot be read as a skill; the message names the file."""


def read_skill(folder: Path) -> Skill:
    """The skill in `folder`; `SkillError` naming its SKILL.md and what is wrong."""
    import yaml

    file = folder / SKILL_FILE
    try:
        text = read_regular(file).decode("utf-8")
    except OSError as exc:  # a FIFO, a device: said so, never waited on
        raise SkillError(f"{file}: cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SkillError(f"{file}: cannot be read: {exc}") from None
    head, _ = _split(text)
    if head is None:
        raise SkillError(f"{file}: no front-matter (a `---` block with name and description)")
    try:
        fields = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise SkillError(f"{file}: the front-matter is not valid YAML{line}") from None
    except RecursionError:  # a clone's `[[[[…`: PyYAML recurses a level a bracket
        raise SkillError(f"{file}: the front-matter is nested too deep to read") from None
    if not isinstance(fields, dict):
        raise SkillError(f"{file}: the front-matter must be a mapping of name and description")
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not NAME.match(name):
        raise SkillError(
            f"{file}: `name` must be 1 to 64 lowercase letters, digits or '-' (found {name!r})"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{file}: `description` must say what the skill is for and when")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{file}: `description` is over {MAX_DESCRIPTION} characters")
    return Skill(name=name, description=" ".join(description.split()), folder=folder)


def discover(places: Iterable[Skill | str | Path]) -> tuple[list[Skill], list[str]]:
    """The skills of each place — a `Skill`, a skill's folder (it holds a SKILL.md), or a
    folder of skills (its subfolders that hold one) — and a note for each that could not be
    read or whose name an earlier one took. A place that does not exist has none."""
    skills: dict[str, Skill] = {}
    notes: list[str] = []
    for place in places:
        if isinstance(place, Skill):
            found: list[Skill | SkillError] = [place]
        else:
            root = Path(place).expanduser()
            # exists, not is_file: a SKILL.md that is a FIFO or a folder is left out with a note
            if (root / SKILL_FILE).exists():
                folders = [root]
            elif root.is_dir():
                folders = sorted(p for p in root.iterdir() if (p / SKILL_FILE).exists())
            else:
                continue
            found = [_read_or_error(folder.resolve()) for folder in folders]
        for skill in found:
            if isinstance(skill, SkillError):
                notes.append(f"skill left out: {skill}")
            elif skill.name in skills:
                notes.append(
                    f"skill left out: {skill.file}: the name {skill.name!r} is taken by "
                    f"{skills[skill.name].file}"
                )
            else:
                skills[skill.name] = skill
    return list(skills.values()), notes


def _read_or_error(folder: Path) -> Skill | SkillError:
    try:
        return read_skill(folder)
    except SkillError as exc:
        return exc


def project_folders(project: Path) -> list[Path]:
    return [project / relative for relative in PROJECT_FOLDERS]


def has_skills(folders: Sequence[Path]) -> bool:
    return any(f.is_dir() and any((p / SKILL_FILE).is_file() for p in f.iterdir()) for f in folders)


def _split(text: str) -> tuple[str | None, str]:
    """(front-matter, body); no front-matter: (None, text)."""
    match = re.match(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", text, re.S | re.M)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]
