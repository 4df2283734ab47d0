"""The workspace: the one directory tools may touch, with paths resolved inside it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pathspec

from .._errors import ToolError, WorkspaceError

ALWAYS_IGNORED = (".git", ".reins")


class Workspace:
    """Resolves every path inside `root`; `..`, outside absolute paths and symlink escapes
    are refused. Writes into `protected` paths (the event log) are refused too."""

    def __init__(self, root: str | Path, *, protected: Sequence[str | Path] = ()) -> None:
        real = os.path.realpath(os.path.expanduser(root))  # os.path: cheaper than pathlib
        if not os.path.isdir(real):
            raise WorkspaceError(
                f"workspace {str(root)!r} is not an existing directory; create it or pass "
                "--workspace with a directory that exists"
            )
        self.root = Path(real)
        self.protected = tuple(Path(os.path.realpath(p)) for p in protected)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real, absolute path for `path`, symlinks followed, or a ToolError."""
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        candidate = Path(os.path.realpath(self.root / Path(path).expanduser()))
        if not candidate.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} resolves outside the workspace {self.root}; "
                "use a path inside it (relative paths start at the workspace root)"
            )
        if write and any(candidate.is_relative_to(p) for p in self.protected):
            raise ToolError(f"path {path!r} is in the run log's folder, which tools may not write")
        return candidate

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def walk(self, start: Path) -> Iterator[Path]:
        """Files under `start`, sorted, skipping what .gitignore files (nested ones too) and
        `ALWAYS_IGNORED` exclude. Symlinks are not followed out of the tree."""
        rules: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
        for directory in reversed([start, *start.parents]):
            if directory.is_relative_to(self.root):
                self._load_rules(directory, rules)
        for dirpath, dirnames, filenames in os.walk(start):
            here = Path(dirpath)
            if here != start:
                self._load_rules(here, rules)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in ALWAYS_IGNORED and not _ignored(here / d, rules, is_dir=True)
            )
            for name in sorted(filenames):
                file = here / name
                if not _ignored(file, rules, is_dir=False) and self._inside(file):
                    yield file

    def _inside(self, file: Path) -> bool:
        return not file.is_symlink() or Path(os.path.realpath(file)).is_relative_to(self.root)

    @staticmethod
    def _load_rules(directory: Path, rules: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> None:
        ignore = directory / ".gitignore"
        if ignore.is_file():
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            rules.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))


def _ignored(path: Path, rules: list[tuple[Path, pathspec.GitIgnoreSpec]], *, is_dir: bool) -> bool:
    for base, spec in rules:
        if path.is_relative_to(base):
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
    return False
