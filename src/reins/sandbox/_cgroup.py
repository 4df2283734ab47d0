"""A pids cgroup per command: the process-count limit that holds for root, and a list of every
process of the command to kill, wherever it went (setsid, nohup, double fork).

RLIMIT_NPROC does not bind root's user, even inside a user namespace, so as root this is the
only process limit. cgroup v1's `pids` hierarchy is used where it is mounted and writable,
else v2 where `pids` can be enabled at its root; with neither, `available()` is False.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import threading
from pathlib import Path

_V1 = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")
_counter = itertools.count()
_leftovers: list[Path] = []
"""Cgroups whose last processes were still exiting when their command ended."""


class PidsCgroup:
    """One command's cgroup. Its first process is born in it: started by a thread that
    entered it beforehand (`enter`, cgroup v1), or moving itself in before it execs (`attach`)."""

    def __init__(self, path: Path, limit: int | None) -> None:
        self.path = path
        os.mkdir(path)
        try:
            self.set_limit(limit)
            self._procs = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            os.rmdir(path)
            raise

    @classmethod
    def create(cls, limit: int | None) -> PidsCgroup | None:
        """A new cgroup, or None where pids cgroups are not available."""
        base = _base()
        if base is None:
            return None
        remove_leftovers()
        try:
            return cls(base / f"{os.getpid()}-{next(_counter)}", limit)
        except OSError:
            return None

    def set_limit(self, limit: int | None) -> None:
        (self.path / "pids.max").write_text(str(limit) if limit else "max")

    def enter(self) -> None:
        """Move this thread in (cgroup v1 only), so that what it starts is born in it. A move
        waits for an RCU grace period, milliseconds: do it before the command is asked for."""
        (self.path / "tasks").write_text(str(threading.get_native_id()))

    def attach(self) -> None:
        """Called in the child between fork and exec: it moves itself in ("0" is the writer)."""
        os.write(self._procs, b"0")

    def pids(self) -> list[int]:
        """The processes in it, but this one (whose starting thread may not have left yet)."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [pid for pid in map(int, text.split()) if pid != os.getpid()]

    def kill(self) -> None:
        """SIGKILL every process in it; a few rounds, for what forks while it is swept."""
        killed: set[int] = set()
        for _ in range(10):
            fresh = set(self.pids()) - killed
            if not fresh:
                return
            for pid in fresh:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed |= fresh

    def close(self, *, later: bool = False) -> None:
        """Forget the cgroup: removed now, or `later` by `remove_leftovers` (also when its last
        processes are still exiting), or by the next process if this one ends first."""
        os.close(self._procs)
        if later:
            _leftovers.append(self.path)
            return
        try:
            os.rmdir(self.path)
        except OSError:
            _leftovers.append(self.path)


def remove_leftovers() -> None:
    """Remove the cgroups closed `later` whose processes are gone. An rmdir waits while any
    other cgroup operation runs (a thread move: milliseconds), so the spawner thread does it,
    when it makes the next cgroup."""
    for path in list(_leftovers):
        with contextlib.suppress(OSError, ValueError):
            os.rmdir(path)
            _leftovers.remove(path)


def threads_movable() -> bool:
    """cgroup v1: a single thread can be moved (v2 moves whole processes)."""
    base = _base()
    return base is not None and base.is_relative_to(_V1)


def available() -> bool:
    return _base() is not None


@functools.cache
def _base() -> Path | None:
    """This process's own folder of command cgroups, made on first use."""
    for root in (_V1, _V2):
        try:
            return _make_base(root)
        except OSError:
            continue
    return None


def _make_base(root: Path) -> Path:
    if root == _V2:
        if "pids" not in (root / "cgroup.controllers").read_text().split():
            raise OSError("no pids controller")
        (root / "cgroup.subtree_control").write_text("+pids")
    elif not (root / "cgroup.procs").is_file():
        raise OSError("no v1 pids hierarchy")

    parent = root / "reins"
    parent.mkdir(exist_ok=True)
    if root == _V2:
        (parent / "cgroup.subtree_control").write_text("+pids")
    _remove_stale(parent)
    base = parent / str(os.getpid())
    base.mkdir(exist_ok=True)
    if root == _V2:
        (base / "cgroup.subtree_control").write_text("+pids")
    if not os.access(base / "cgroup.procs", os.W_OK):
        raise OSError("not writable")
    return base


def _remove_stale(parent: Path) -> None:
    """Folders of processes that are gone (their commands were killed with them)."""
    for folder in parent.iterdir():
        if not folder.name.isdigit() or Path(f"/proc/{folder.name}").exists():
            continue
        with contextlib.suppress(OSError):
            for child in folder.iterdir():
                if child.is_dir():
                    child.rmdir()
            folder.rmdir()
