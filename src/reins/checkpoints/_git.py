"""Running git on a shadow repository: a fixed environment, one error type, one lock.

The environment keeps the user's configuration and the workspace's contents from running
anything: no system or global config (so no hooks, fsmonitor, filters or credential helpers of
the user's), no prompts, the C locale, and none of the caller's `GIT_*` variables.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from ..core._errors import ReinsError


class CheckpointError(ReinsError):
    """A snapshot of the workspace could not be taken, read or put back."""


def git_env(git_dir: Path, work_tree: Path, index: Path | None = None) -> dict[str, str]:
    """The environment of every git process on a shadow (`index`: a temporary index)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(git_dir),
        GIT_WORK_TREE=str(work_tree),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_OPTIONAL_LOCKS="0",  # a read never rewrites the shared index behind a snapshot
        LC_ALL="C",
    )
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


async def run_git(*args: str, env: dict[str, str], cwd: Path, stdin: bytes | None = None) -> bytes:
    """git's stdout; a missing git, a missing workspace or a failure is a CheckpointError."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
    except FileNotFoundError:
        raise _not_started(cwd) from None
    try:
        out, err = await process.communicate(stdin)
    except BaseException:  # cancelled: no git left running on its own
        with suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    if process.returncode:
        detail = err.decode("utf-8", "replace").strip() or f"exit status {process.returncode}"
        raise CheckpointError(f"git {args[0]} failed on the checkpoints of {cwd}: {detail}")
    return out


def _not_started(cwd: Path) -> CheckpointError:
    if not cwd.is_dir():
        return CheckpointError(f"the workspace {cwd} is gone: checkpoints need the folder")
    return CheckpointError("git is not installed: checkpoints need git on PATH")


_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Path, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def exclusive(shadow: Path) -> AsyncIterator[None]:
    """Hold the shadow's index alone: an asyncio lock in this process, a flock across
    processes (polled, so that a wait neither blocks the event loop nor outlives a cancel)."""
    locks = _locks.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(shadow, asyncio.Lock()):
        os.makedirs(shadow, exist_ok=True)
        fd = os.open(shadow / "reins.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            delay = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.05)
            yield
        finally:
            os.close(fd)  # releases the flock
