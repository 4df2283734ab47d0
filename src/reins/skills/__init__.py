"""Skills: SKILL.md folders whose names and descriptions the model sees, and whose
instructions it loads (`load_skill`) when a task calls for one."""

from ._offer import LOAD_SKILL, SkillsSection, load_skill_tool
from ._skill import (
    PROJECT_FOLDERS,
    Skill,
    SkillError,
    discover,
    has_skills,
    project_folders,
    read_skill,
)

__all__ = [
    "LOAD_SKILL",
    "PROJECT_FOLDERS",
    "Skill",
    "SkillError",
    "SkillsSection",
    "discover",
    "has_skills",
    "load_skill_tool",
    "project_folders",
    "read_skill",
]
