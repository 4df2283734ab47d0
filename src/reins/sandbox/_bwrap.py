"""The bubblewrap command line for one command (Linux), and whether bubblewrap works here."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..core._errors import SandboxUnavailable
from ._code_paths import COMMANDS_READ_ONLY, git_dir_of
from ._hidden import hidden_paths
from ._policy import SandboxPolicy

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install "
    "bubblewrap`, Arch: `pacman -S bubblewrap`), or, to run commands unconfined, choose the "
    "sandbox mode danger-full-access (`--sandbox danger-full-access`)"
)
PROTECTED_NAMES = COMMANDS_READ_ONLY
"""Read-only in the workspace and in its folders one level down (a repository kept inside
another), with the folder a `.git` file there points to, besides the workspace's own protected
paths (the event log's folder). One made by the command itself is not: it did not exist when
the sandbox was set up. The file tools ask before writing these and the other places that run
code later (`reins.sandbox._code_paths`)."""


def bwrap_path() -> str:
    """The bwrap binary, checked once to work here, or SandboxUnavailable saying what to do."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            f"commands run in a sandbox, and bwrap is not installed: {INSTALL_HINT}"
        )
    problem = _probe(found)
    if problem:
        raise SandboxUnavailable(
            f"commands run in a sandbox, and bubblewrap fails here ({problem}); user namespaces "
            "may be disabled (sysctl kernel.unprivileged_userns_clone, or an AppArmor profile "
            f"for bwrap); or {INSTALL_HINT.split(', or, ')[1]}"
        )
    return found


@functools.cache
def _probe(bwrap: str) -> str:
    """ "" if bwrap can build our kind of sandbox, else its complaint."""
    done = subprocess.run(
        [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--", "/bin/true"],
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if done.returncode == 0 else done.stderr.strip() or f"exit code {done.returncode}"


def bwrap_argv(
    bwrap: str,
    *,
    root: Path,
    policy: SandboxPolicy,
    protected: Sequence[Path],
    seccomp_fd: int,
) -> list[str]:
    """bwrap's options, up to and including `--`: the mounts first, later ones on top."""
    argv = [
        bwrap,
        "--die-with-parent",  # the whole sandbox dies with the process we started
        "--new-session",  # no terminal to push input into (TIOCSTI)
        "--unshare-pid",  # sees only its own processes; when it exits, they all die
        "--unshare-ipc",  # no System V shared memory of other processes
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",  # a minimal /dev: no disks to read raw
        "--proc",
        "/proc",  # this namespace's: no other process's environ
        "--tmpfs",
        "/tmp",
    ]
    if not policy.network:
        argv.append("--unshare-net")  # only its own loopback
    if policy.mode == "read-only":
        argv += ["--ro-bind", str(root), str(root)]  # visible even under the private /tmp
    else:
        argv += ["--bind", str(root), str(root)]
    # After the workspace, so that a workspace holding them hides them too (the file tools
    # hide the same list); one that holds the workspace is left alone.
    shown = [os.path.realpath(p) for p in policy.readable if os.path.isdir(p)]
    for hidden in hidden_paths():
        if not os.path.lexists(hidden):  # most are not there: one cheap check each
            continue
        real = os.path.realpath(hidden)
        if root.is_relative_to(real):
            continue
        if os.path.isdir(real):
            # What must stay readable inside is bound before the tmpfs turns read-only.
            inside = [p for p in shown if Path(p).is_relative_to(real)]
            argv += ["--tmpfs", real, *_ro_binds(inside), "--remount-ro", real]
            shown = [p for p in shown if p not in inside]
        elif os.path.exists(real):
            argv += ["--ro-bind", "/dev/null", real]
    argv += _ro_binds(shown)
    if policy.mode == "workspace-write":
        named = {Path(os.path.realpath(p)) for p in _named_paths(root)}
        for path in sorted({*named, *protected}):
            if path != root and path.is_relative_to(root) and path.exists():
                argv += ["--ro-bind", str(path), str(path)]
    argv += ["--chdir", str(root), "--seccomp", str(seccomp_fd), "--"]
    return argv


def _ro_binds(paths: Sequence[str]) -> list[str]:
    return [arg for path in paths for arg in ("--ro-bind", path, path)]


def _named_paths(root: Path) -> list[str]:
    """PROTECTED_NAMES at the root and one folder down (a scandir: cheap beside a spawn), and
    the folders `.git` files there point to (a worktree's, a submodule's)."""
    folders = [str(root)]
    try:
        with os.scandir(root) as entries:
            folders += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        pass
    named = [os.path.join(folder, name) for folder in folders for name in PROTECTED_NAMES]
    pointed = [git_dir_of(path) for path in named if os.path.basename(path) == ".git"]
    return named + [path for path in pointed if path is not None]
