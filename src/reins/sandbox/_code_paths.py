"""Places in a project whose content a program the user runs later executes without asking:
git's folder (its hooks and the programs its config names run at the next `git status`),
reins's own project folder, and the files editors and hook managers run from. A write there
is code the agent gets run outside its sandbox, so the file tools ask a person each time (see
`tools._workspace`); commands find `COMMANDS_READ_ONLY` read-only (see `sandbox`).

Not here, on purpose: files that run only when the user runs the project's own tooling, which
runs the project's code anyway (Makefile, package.json's scripts, setup.py, noxfile.py, a
Cargo build script), CI files (they run on CI, not here), and .gitattributes / .gitmodules
(the commands they name come from git's config, which is here)."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..core._files import read_regular


@dataclass(frozen=True)
class CodePlace:
    """Paths, at any depth, and what runs them."""

    paths: tuple[str, ...]
    """Patterns of the path's last components (`*` any characters), slash-separated."""
    runs: str
    """Who runs what is there, and when: for the person asked, and the docs."""
    tree: bool = False
    """Everything below it too (a folder), not only the path itself."""


GIT = CodePlace(
    (".git",),
    "git runs its hooks and the commands its config names (core.fsmonitor, core.pager) at "
    "the next git command, even git status",
    tree=True,
)
TABLE: tuple[CodePlace, ...] = (
    GIT,
    CodePlace((".reins",), "reins reads the project's rules, hooks and servers from it", tree=True),
    CodePlace((".envrc",), "direnv runs it when a shell enters the folder"),
    CodePlace(
        (".vscode/tasks.json", ".vscode/settings.json", "*.code-workspace"),
        "VS Code runs its folder-open tasks and the programs its settings name",
    ),
    CodePlace(
        (".devcontainer", ".devcontainer.json"),
        "dev containers run its initializeCommand on this machine",
        tree=True,
    ),
    CodePlace((".pre-commit-config.yaml",), "pre-commit runs its hooks at the next commit"),
    CodePlace((".husky",), "husky's git hooks run at the next commit", tree=True),
    CodePlace(
        ("lefthook.*", ".lefthook.*", "lefthook-local.*", ".lefthook-local.*", ".lefthook"),
        "lefthook runs its git hooks at the next commit",
        tree=True,
    ),
)
"""Each place, by name at any depth; `tools._workspace` adds the places found by looking:
a git folder by its content whatever its name, and the folder git's core.hooksPath names."""
GIT_FOLDER = CodePlace(
    ("(a git folder by its content)",),
    "a git folder (HEAD with objects/, refs/ or commondir): " + GIT.runs,
    tree=True,
)
HOOKS_PATH = CodePlace(
    ("(core.hooksPath)",), "git runs the hooks in the folder its core.hooksPath names", tree=True
)
COMMANDS_READ_ONLY = (".git", ".reins")
"""What the command sandbox binds read-only, in the workspace and one folder down (with the
folder a `.git` file points to). The other places stay writable by commands: formatters and
hook managers rewrite them, a read-only bind cannot cover a file not yet made, and a command
asks by default, showing what it runs."""

_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ drops from names, so `.g\u200cit` is `.git` there (git's own list)."""


def fold(name: str) -> str:
    """A name as a case-insensitive file system compares it (macOS, Windows shares): case,
    Unicode form, the code points HFS+ ignores, and NTFS's trailing dots and spaces."""
    folded = _IGNORABLE.sub("", unicodedata.normalize("NFC", name)).casefold()
    return folded.rstrip(". ") or folded


def place_of(parts: Sequence[str]) -> CodePlace | None:
    """The place the path `parts` (components below the workspace) is in, by the table."""
    folded = [fold(p) for p in parts]
    for place in TABLE:
        for pattern in place.paths:
            want = pattern.split("/")
            for start in range(len(folded) - len(want) + 1):
                end = start + len(want)
                if (place.tree or end == len(folded)) and all(
                    fnmatchcase(folded[start + i], w) for i, w in enumerate(want)
                ):
                    return place
    return None


def git_dir_of(dot_git: str) -> str | None:
    """The folder a `.git` file points to (`gitdir: PATH`, as worktrees and submodules have),
    absolute; None if `dot_git` is not such a file."""
    try:
        head = read_regular(dot_git, 4096)  # a clone's FIFO must not hang every run
    except OSError:  # a folder, or gone
        return None
    text = head.decode("utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target)) if target else None


def hooks_path(config_text: str) -> str | None:
    """core.hooksPath as a git config file sets it (the last one wins); includes not read.
    Line by line, in linear time: the file is the project's, and a regex whose `\\s*` spans
    lines took quadratic time on a config of blank lines (a megabyte of them: hours)."""
    found, section = None, ""
    for line in config_text.splitlines():
        line = line.strip()
        if line.startswith("["):
            name, _, line = line[1:].partition("]")
            section = name.strip().lower()
        key, equals, value = line.partition("=")
        if section == "core" and equals and key.strip().lower() == "hookspath":
            found = value.strip().strip('"') or None
    return found
