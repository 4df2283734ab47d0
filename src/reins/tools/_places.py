"""What the file tools keep off in one workspace: the hidden paths (never opened), and the
places that run code later (written only with a person's yes for that call and that path),
and the workspaces they refuse outright (a folder holding the home folder, reins's own)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from ..core._errors import WorkspaceError
from ..core._files import read_regular
from ..core._paths import config_home, data_home
from ..sandbox._code_paths import (
    GIT_FOLDER,
    HOOKS_PATH,
    CodePlace,
    fold,
    git_dir_of,
    hooks_path,
    place_of,
)
from ..sandbox._hidden import hidden_paths
from ._fs import Hidden

_APPROVED: ContextVar[frozenset[str]] = ContextVar("reins_approved_writes", default=frozenset())


def refuse_broad(real: str, given: str | Path) -> None:
    """A WorkspaceError for a workspace no run should have: the whole file system, the home
    folder or one holding it, or one inside reins's own folders."""
    home = os.path.realpath(os.environ.get("HOME") or Path.home())
    reach = (
        "the agent's tools would reach far more than a project: other projects, the files "
        "your shell and tools run, your keys"
    )
    what = None
    if real == "/":
        what = f"the whole file system: {reach}"
    elif real == home:
        what = f"your home folder: {reach}"
    elif Path(home).is_relative_to(real):
        what = f"a folder that holds your home folder ({home}): {reach}"
    for own, name in ((data_home(), "data"), (config_home(), "config")):
        if what is None and Path(real).is_relative_to(os.path.realpath(own)):
            what = (
                f"inside reins's own {name} folder ({own}), which holds its logs, settings and "
                "keys, kept from the agent"
            )
    if what is not None:
        raise WorkspaceError(
            f"workspace {str(given)!r} is {what}; give the project's folder as the workspace"
        )


def hidden_below(root: Path, readable: Sequence[str]) -> Hidden:
    """The hidden paths inside `root` (those holding it are left alone: the user chose to work
    there), and the readable folders inside those."""
    parts, ids = set(), set()
    shown = tuple(Path(r).relative_to(root).parts for r in readable if Path(r).is_relative_to(root))
    for path in hidden_paths():
        real = Path(os.path.realpath(path))
        if real == root or not real.is_relative_to(root):
            continue
        below = real.relative_to(root).parts
        parts.add(below)
        if any(s[: len(below)] == below for s in shown):
            continue  # the way to a shown folder: known by its name only
        try:
            st = os.stat(real)
        except OSError:
            continue
        ids.add((st.st_dev, st.st_ino))
    return Hidden(frozenset(parts), frozenset(ids), shown)


@dataclass(frozen=True)
class CodeWrite:
    """A write to a place that runs code later."""

    path: str
    """Its real path below the workspace root."""
    why: str
    """For the person asked: the path, and what runs it."""


class CodePlaces:
    """Which writes in the workspace at `root` run code later: by the table, by git's
    core.hooksPath, and by looking for git folders (whatever their name) above the path."""

    def __init__(self, root: Path, root_fd: int) -> None:
        self.root, self.root_fd = root, root_fd
        self.hooks = _hooks_folder(root)

    def place(self, rel: str) -> CodePlace | None:
        """The place that runs the file at `rel` (a real path below the root); None: no
        program runs it unasked."""
        parts = [] if rel in ("", ".") else rel.split("/")
        return place_of(parts) or self._hooks(parts) or self._git_folder(parts)

    def _hooks(self, parts: Sequence[str]) -> CodePlace | None:
        hooks = self.hooks
        if hooks is None or len(parts) <= len(hooks):
            return None
        return HOOKS_PATH if tuple(fold(p) for p in parts[: len(hooks)]) == hooks else None

    def _git_folder(self, parts: Sequence[str]) -> CodePlace | None:
        """GIT_FOLDER if a folder above the path (the root too) is one, as git knows one."""
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth]) or "."
            if _is_file(f"{folder}/HEAD", self.root_fd) and any(
                _exists(f"{folder}/{name}", self.root_fd)
                for name in ("objects", "refs", "commondir")
            ):
                return GIT_FOLDER
        return None


def _hooks_folder(root: Path) -> tuple[str, ...] | None:
    """The folder below `root` that git's core.hooksPath names (the repository's config, then
    the user's), folded; None: none, or outside the workspace (where the tools cannot write)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    configs = [os.path.join(xdg, "git", "config"), os.path.expanduser("~/.gitconfig")]
    git = str(root / ".git")
    folder = git_dir_of(git) or git
    common = _read(os.path.join(folder, "commondir")).strip()
    if common:
        configs.append(os.path.join(folder, common, "config"))
    configs.append(os.path.join(folder, "config"))
    found = None
    for config in configs:  # later ones win, as git reads them
        found = hooks_path(_read(config)) or found
    if found is None:
        return None
    real = Path(os.path.realpath(root / os.path.expanduser(found)))
    if real == root or not real.is_relative_to(root):
        return None
    return tuple(fold(p) for p in real.relative_to(root).parts)


def _read(path: str) -> str:
    try:  # a clone's FIFO (or device) must not hang every run
        return read_regular(path, 1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _is_file(rel: str, root_fd: int) -> bool:
    try:
        return stat.S_ISREG(os.stat(rel, dir_fd=root_fd).st_mode)
    except OSError:
        return False


def _exists(rel: str, root_fd: int) -> bool:
    try:
        os.stat(rel, dir_fd=root_fd)
    except OSError:
        return False
    return True


def key(rel: str) -> str:
    """`rel` as approvals compare it: each name folded (`.GIT` is `.git` on macOS)."""
    return "/".join(fold(p) for p in rel.split("/"))


@contextmanager
def approved_writes(rels: Iterable[str]) -> Iterator[None]:
    """Within the block (the call's task and the threads it starts), writes to these places
    (real paths below the root) were approved by a person."""
    token = _APPROVED.set(frozenset(key(r) for r in rels))
    try:
        yield
    finally:
        _APPROVED.reset(token)


def any_approved() -> bool:
    """Whether writes were approved for the call this runs in (or one it runs inside)."""
    return bool(_APPROVED.get())


def approved(rel: str) -> bool:
    return key(rel) in _APPROVED.get()
