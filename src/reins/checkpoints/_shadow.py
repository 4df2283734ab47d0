"""A workspace's shadow git repository: snapshots as commits, their changes, putting files back.

The shadow is a bare-style git directory in the store (`<store>/checkpoints/<name>`, `<name>`
from a hash of the workspace's real path, and its file `workspace` naming it), never in the
workspace; git reads the workspace through `GIT_WORK_TREE`. Its index keeps each file's stat
data, so a snapshot re-hashes only what changed, and content addressing stores each version of
a file once.

What a snapshot holds: every file git would track, untracked ones included, except
- files ignored by the workspace's `.gitignore` files or its `.git/info/exclude` (copied into
  the shadow; the user's global excludes file is not read, so snapshots do not depend on who
  takes them);
- the workspace's own `.git`, and the store's folder when it lies inside the workspace;
- nested git repositories (a folder with its own `.git`): their files belong to their own
  repository, and a snapshot neither records them nor, on restore, touches them;
- a new or changed file over `max_file_bytes`: left out, as if absent (a tracked file that
  grows over it drops out of the snapshot).

Restore writes back what a commit holds; it removes a path the commit lacks only when a snapshot
could have held it, so ignored files, nested repositories and files over the size limit are left
as they are.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from ._git import CheckpointError, exclusive, git_env, run_git

_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_COMMIT = re.compile(r"[0-9a-f]{4,64}")
_STATUS: dict[bytes, Literal["added", "modified", "deleted"]] = {
    b"A": "added",
    b"M": "modified",
    b"T": "modified",  # a file became a symlink, or the other way
    b"D": "deleted",
}
_CONFIG = """\
[core]
\tautocrlf = false
\tsafecrlf = false
\tfsmonitor = false
\thooksPath = /dev/null
\texcludesFile = /dev/null
\tattributesFile = /dev/null
\tquotePath = false
[index]
\tversion = 4
[gc]
\tauto = 0
[user]
\tname = reins
\temail = reins@localhost
[advice]
\taddEmbeddedRepo = false
"""
# Bytes in, bytes out: no end-of-line conversion, filter or encoding from the workspace's
# .gitattributes, so a restore gives back exactly what was there.
_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"


@dataclass(frozen=True)
class Change:
    """A path that differs between two snapshots."""

    path: str
    """Relative to the workspace, '/'-separated."""
    status: Literal["added", "modified", "deleted"]


class Shadow:
    """A workspace's shadow git repository, kept in the store (`<store>/checkpoints/<name>`),
    never in the workspace."""

    def __init__(
        self, store: str | Path, workspace: str | Path, *, max_file_bytes: int = 10 * 2**20
    ) -> None:
        if not Path(workspace).is_dir():
            raise CheckpointError(
                f"the workspace {workspace} does not exist: checkpoints need a folder"
            )
        self.workspace = Path(os.path.realpath(workspace))
        self.max_file_bytes = max_file_bytes
        store = Path(os.path.realpath(store))
        name = hashlib.sha256(os.fsencode(self.workspace)).hexdigest()[:16]
        self.path = store / "checkpoints" / name
        self._left_out: list[str] = []  # the store, relative to the workspace, when inside it
        if store.is_relative_to(self.workspace):
            inside = store if store != self.workspace else self.path.parent
            self._left_out.append(inside.relative_to(self.workspace).as_posix())

    async def snapshot(self, ref: str, message: str = "") -> str:
        """The workspace as it is now, as a commit on `refs/reins/<ref>` (whose previous commit
        becomes its parent, so a run's checkpoints chain); returns the commit's sha.

        Four or five git processes: ls-files and diff-files (side by side) list what is new or
        changed, update-index hashes only those (none when nothing changed), write-tree and
        commit-tree; the ref file is written here."""
        if not _REF.fullmatch(ref) or ref.endswith(".lock"):
            raise CheckpointError(f"{ref!r} cannot name a checkpoint: use letters, digits, ._-")
        async with exclusive(self.path):
            if not (self.path / "workspace").exists():
                await self._create()
            self._copy_excludes()
            await self._stage(self._env(), None)
            tree = (await self._git("write-tree")).strip().decode()
            parent = self._read_ref(ref)
            args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
            commit = (await self._git(*args, stdin=(message or ref).encode())).strip().decode()
            self._write_ref(ref, commit)
        return commit

    async def changes(self, old: str, new: str) -> list[Change]:
        """What differs between two commits, sorted by path (a rename is a delete and an add)."""
        out = await self._git(
            "diff-tree", "-r", "-z", "--no-renames", "--name-status", _commit(old), _commit(new)
        )
        fields = out.split(b"\0")
        found = [
            Change(os.fsdecode(path), _STATUS[status])
            for status, path in zip(fields[0::2], fields[1::2], strict=False)
            if status in _STATUS
        ]
        return sorted(found, key=lambda change: change.path)

    async def diff(self, old: str, new: str, paths: Sequence[str] | None = None) -> str:
        """The unified diff between two commits (binary files said as such), optionally of
        `paths` only."""
        args = ["diff-tree", "-r", "-p", "--no-color", "--no-renames", "--no-ext-diff"]
        args += ["--no-textconv", _commit(old), _commit(new), "--", *_literal(paths or [])]
        return (await self._git(*args)).decode("utf-8", "replace")

    async def modified_since(self, commit: str, paths: Sequence[str]) -> list[str]:
        """Those of `paths` (files or folders) whose content in the workspace now differs from
        `commit`. Works on a copy of the shadow's index: no ref moves, no snapshot is touched."""
        commit, specs = _commit(commit), _literal(paths)
        if not specs:
            return []
        with tempfile.TemporaryDirectory(prefix="reins-index-") as folder:
            index = Path(folder) / "index"
            if (self.path / "index").exists():  # copy2 keeps the mtime git's racy check reads
                shutil.copy2(self.path / "index", index)
            env = self._env(index)
            await self._stage(env, specs)
            out = await self._git(
                "diff-index", "--cached", "-z", "--name-only", "--no-renames", commit, "--",
                *specs, env=env,
            )  # fmt: skip
        changed = {os.fsdecode(name) for name in out.split(b"\0") if name}
        return [path for path in paths if any(_under(name, _clean(path)) for name in changed)]

    async def restore(self, commit: str, paths: Sequence[str]) -> None:
        """Each path back to its content, exec bit or symlink in `commit`, or removed when the
        commit lacks it; folders a removal leaves empty and the commit lacks go too."""
        commit, specs = _commit(commit), _literal(paths)
        if not specs:
            return
        listing = await self._git("ls-tree", "-r", "-t", "-z", "--full-tree", commit, "--", *specs)
        files: dict[str, bytes] = {}  # path -> its ls-tree line, which update-index reads back
        folders: set[str] = set()  # folders the commit holds (-t: those on the way included)
        for line in filter(None, listing.split(b"\0")):
            meta, _, name = line.partition(b"\t")
            kind = meta.split()[1]
            if kind == b"tree":
                folders.add(os.fsdecode(name))
            elif kind == b"blob":
                files[os.fsdecode(name)] = line
        present = await self._git("ls-files", "-z", "-c", "-o", "--exclude-standard", "--", *specs)
        removed = []
        for name in filter(None, present.split(b"\0")):
            path = os.fsdecode(name)
            if path not in files and self._is_file(path) and not self._too_big(path):
                (self.workspace / path).unlink()
                removed.append(path)
        self._prune(removed, folders)
        if files:
            with tempfile.TemporaryDirectory(prefix="reins-index-") as folder:
                env = self._env(Path(folder) / "index")
                entries = b"\0".join(files.values()) + b"\0"
                await self._git("update-index", "-z", "--index-info", stdin=entries, env=env)
                await self._git("checkout-index", "-a", "-f", env=env)

    async def _stage(self, env: dict[str, str], specs: list[str] | None) -> None:
        """Bring an index up to the workspace (all of it, or `specs`), leaving out nested
        repositories and new or changed files over the size limit.

        Only what git lists is hashed: the untracked files, and the tracked ones whose stat data
        differs from the index (diff-files lists a touched but unchanged file too, so that its
        entry is refreshed and not compared again on every snapshot)."""
        untracked, changed = await asyncio.gather(
            self._git("ls-files", "-z", "-o", "--exclude-standard", "--", *(specs or []), env=env),
            self._git("diff-files", "-z", "--name-only", "--", *(specs or []), env=env),
        )
        kept: list[str] = []
        dropped: list[str] = []
        for name in filter(None, changed.split(b"\0")):
            path = os.fsdecode(name)
            # out: gone, now a folder or behind a symlink, or grown over the limit
            (kept if self._is_file(path) and not self._too_big(path) else dropped).append(path)
        for name in filter(None, untracked.split(b"\0")):
            path = os.fsdecode(name)
            # git lists a nested repository as its folder; the store only if a rule un-ignores it
            nested = path.endswith("/")
            if not nested and not self._in_store(path) and not self._too_big(path):
                kept.append(path)
        if kept:
            update = ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"]
            await self._git(*update, stdin=_nul(kept), env=env)
        if dropped:
            update = ["update-index", "--force-remove", "-z", "--stdin"]
            await self._git(*update, stdin=_nul(dropped), env=env)

    async def _create(self) -> None:
        """A new shadow: `git init`, then the settings that keep it deterministic."""
        env = {k: v for k, v in git_env(self.path, self.workspace).items() if k != "GIT_WORK_TREE"}
        await run_git("init", "-q", "--bare", "--template=", env=env, cwd=self.workspace)
        with (self.path / "config").open("a", encoding="utf-8") as config:
            config.write(_CONFIG)
        (self.path / "info").mkdir(exist_ok=True)
        (self.path / "info" / "attributes").write_text(_ATTRIBUTES, encoding="utf-8")
        (self.path / "workspace").write_text(f"{self.workspace}\n", encoding="utf-8")

    def _copy_excludes(self) -> None:
        """The workspace's .git/info/exclude, and the store, as the shadow's ignore rules (the
        rules also keep git from walking the store at all)."""
        own = self.workspace / ".git" / "info" / "exclude"
        text = own.read_text("utf-8", "replace") if own.is_file() else ""
        text += "".join(f"\n/{_escape(path)}/\n" for path in self._left_out)
        target = self.path / "info" / "exclude"
        if not target.exists() or target.read_text("utf-8", "replace") != text:
            target.write_text(text, encoding="utf-8")

    def _read_ref(self, ref: str) -> str | None:
        loose = self.path / "refs" / "reins" / ref
        if loose.exists():
            return loose.read_text().strip()
        packed = self.path / "packed-refs"  # only if someone ran git gc by hand
        if packed.exists():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name == f"refs/reins/{ref}":
                    return sha
        return None

    def _write_ref(self, ref: str, commit: str) -> None:
        loose = self.path / "refs" / "reins" / ref
        loose.parent.mkdir(parents=True, exist_ok=True)
        staged = self.path / f"ref-{ref}.tmp"
        staged.write_text(f"{commit}\n")
        os.replace(staged, loose)

    def _in_store(self, path: str) -> bool:
        return any(_under(path, store) for store in self._left_out)

    def _is_file(self, path: str) -> bool:
        """A file or a symlink there, reached through real folders only (a run may have put a
        symlink where a folder was: nothing is written or removed through it)."""
        full = self.workspace / path
        if os.path.realpath(full.parent) != str(full.parent):
            return False
        try:
            return not stat.S_ISDIR(full.lstat().st_mode)
        except OSError:
            return False

    def _too_big(self, path: str) -> bool:
        try:
            info = (self.workspace / path).lstat()
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size > self.max_file_bytes

    def _prune(self, removed: list[str], keep: set[str]) -> None:
        """Remove the folders that the removals left empty and the commit does not hold."""
        for path in removed:
            folder = PurePosixPath(path).parent
            while folder != PurePosixPath(".") and str(folder) not in keep:
                try:
                    (self.workspace / folder).rmdir()
                except OSError:  # not empty: it holds more than the run's files
                    break
                folder = folder.parent

    def _env(self, index: Path | None = None) -> dict[str, str]:
        return git_env(self.path, self.workspace, index)

    async def _git(
        self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        if not (self.path / "HEAD").exists():
            raise CheckpointError(f"no checkpoints of {self.workspace} yet: take a snapshot first")
        return await run_git(*args, env=env or self._env(), cwd=self.workspace, stdin=stdin)


def _commit(commit: str) -> str:
    if not _COMMIT.fullmatch(commit):
        raise CheckpointError(f"{commit!r} is not a checkpoint: give a commit's hex id")
    return commit


def _clean(path: str) -> str:
    """A path relative to the workspace, '/'-separated; anything reaching out is refused."""
    clean = PurePosixPath(path)
    if clean.is_absolute() or ".." in clean.parts:
        raise CheckpointError(f"{path!r} is not a path inside the workspace")
    return str(clean)


def _literal(paths: Sequence[str]) -> list[str]:
    """Pathspecs that mean just these paths: a file named `*` or `:x` is that file."""
    return [f":(literal){_clean(path)}" for path in paths]


def _under(name: str, path: str) -> bool:
    return path == "." or name == path or name.startswith(f"{path}/")


def _nul(items: list[str]) -> bytes:
    return b"".join(os.fsencode(item) + b"\0" for item in items)


def _escape(path: str) -> str:
    """A path as a gitignore pattern that matches only it."""
    return re.sub(r"([\\*?\[\]!# ])", r"\\\1", path)
