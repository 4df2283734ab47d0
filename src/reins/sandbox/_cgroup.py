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
from collections.abc import Iterator
from pathlib import Path

_V1 = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")
_counter = itertools.count()
_leftovers: list[Path] = []
"""Cgroups whose last processes were still exiting when their command ended."""


class PidsCgroup:
    """One command's cgroup. The child joins it itself, before it execs (`attach`), so no
    process of the command is ever outside it."""

    def __init__(self, path: Path, limit: int | None) -> None:
        self.path = path
        os.mkdir(path)
        try:
            (path / "pids.max").write_text(str(limit) if limit else "max")
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
        for path in list(_leftovers):
            with contextlib.suppress(OSError):
                os.rmdir(path)
                _leftovers.remove(path)
        try:
            return cls(base / f"{os.getpid()}-{next(_counter)}", limit)
        except OSError:
            return None

    @property
    def can_enter(self) -> bool:
        """cgroup v1 moves single threads: this one can step in for the spawn."""
        return self.path.is_relative_to(_V1)

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """This thread in the cgroup, so that a child it starts is born in it; moved back out
        after (a v1 thread move costs microseconds, a fork of this process for a pre-exec
        hook milliseconds)."""
        tid = str(threading.get_native_id())
        (self.path / "tasks").write_text(tid)
        try:
            yield
        finally:
            (_home() / "tasks").write_text(tid)

    def attach(self) -> None:
        """Called in the child between fork and exec: it moves itself in ("0" is the writer)."""
        os.write(self._procs, b"0")

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]

    def kill(self) -> bool:
        """SIGKILL every process in it; True once none is left."""
        for _ in range(100):  # each round kills what forked during the last one
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        return not self.pids()

    def close(self) -> None:
        """Forget the cgroup: removed now, or by a later command once its last process is gone
        (or by the next process, if this one ends first)."""
        os.close(self._procs)
        try:
            os.rmdir(self.path)
        except OSError:
            _leftovers.append(self.path)


def available() -> bool:
    return _base() is not None


@functools.cache
def _home() -> Path:
    """This process's own v1 pids cgroup, to come back to."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            return _V1 / path.lstrip("/")
    return _V1


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
    else:
        _home()  # known before a thread ever steps out of it
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
