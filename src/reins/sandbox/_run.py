"""`run_process`: the one way a tool starts a subprocess. Sandboxed by policy, bounded in time,
processes and output, and the whole tree killed when it ends, times out or is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from ..core._errors import ToolError, UsageError
from . import _spawner
from ._bwrap import bwrap_argv, bwrap_path
from ._capture import CappedOutput
from ._cgroup import PidsCgroup
from ._policy import SandboxPolicy
from ._seatbelt import seatbelt_argv
from ._seccomp import seccomp_program

DEFAULT_POLICY = SandboxPolicy()
MAX_OUTPUT = 20_000
"""Bytes of output kept by default: the first and the last half."""
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_READ_SIZE = 1 << 20
_DRAIN_GRACE = 0.2
"""Seconds to read what is left after the tree is killed; a pipe still held open after that
(by a process that got out of reach) is abandoned rather than waited for."""


@dataclass(frozen=True, kw_only=True)
class ProcessResult:
    """What a sandboxed command did: its exit code, its output (capped while read), and
    whether it ran out of its timeout."""

    exit_code: int | None
    """The command's exit code (128 + N: killed by signal N); None if it was killed on timeout."""
    output: str
    """Standard output and error together, the middle cut if long (see `bytes_cut`); standard
    output alone with `stderr="separate"`."""
    bytes_cut: int
    timed_out: bool
    timeout: float
    """The timeout in force: the one asked for, clamped to the policy's maximum."""
    clamped: bool
    """True if the timeout asked for was longer than the policy allows."""
    stderr: str | None = None
    """Standard error, with `stderr="separate"` (capped as `output` is, see `stderr_cut`);
    None when it is merged into `output`."""
    stderr_cut: int = 0


async def run_process(
    command: str | Sequence[str],
    *,
    workspace: str | Path,
    policy: SandboxPolicy = DEFAULT_POLICY,
    timeout: float | None = None,  # noqa: ASYNC109 (clamped by the policy, then applied here)
    protected: Sequence[Path] = (),
    max_output: int = MAX_OUTPUT,
    stdin: bytes | None = None,
    stderr: Literal["merge", "separate"] = "merge",
) -> ProcessResult:
    """Run `command` (a shell command line, or an argv) in `workspace`, sandboxed by `policy`.

    `protected` paths inside the workspace are read-only, besides `.git` and `.reins`.
    `stdin` is what the command reads on its standard input (default: nothing).
    `stderr="separate"` reads standard error apart into `ProcessResult.stderr`, each stream
    capped at `max_output` bytes; by default it is merged into `output`, in the order written.
    Raises SandboxUnavailable where the policy needs a sandbox this machine lacks.
    Cancelling the task kills the whole tree at once and re-raises CancelledError."""
    limit = policy.max_timeout if timeout is None else min(timeout, policy.max_timeout)
    root = _directory(workspace)
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    env = policy.environment()
    env.setdefault("PATH", DEFAULT_PATH)
    env["PWD"] = str(root)
    linux = sys.platform == "linux"
    cgroup: PidsCgroup | None = None
    spawner: _spawner.Spawner | None = None
    if stderr not in ("merge", "separate"):
        raise UsageError(f'stderr={stderr!r}: say "merge" or "separate"')
    separate = stderr == "separate"
    launch, pass_fds = _launcher(policy, root, protected)
    try:
        # A spawner thread (module _spawner) starts it where it has a cgroup ready for it, or
        # must be in a Landlock scope (the network on); else this thread does, and the child
        # joins its cgroup itself (cgroup v2).
        spawner = _spawner.spawner(scoped=bool(launch) and policy.network) if linux else None
        if linux and (spawner is None or not spawner.cgroups):
            cgroup = PidsCgroup.create(policy.processes)
        counted = cgroup is not None or (spawner is not None and spawner.cgroups)
        limits, setup = _limits(policy, nproc=bool(launch) and not counted, attach=cgroup)
        full = [*launch, *limits, *argv]
        try:
            if spawner is None:
                process = _spawn(full, root, env, pass_fds, setup, stdin, separate)
            else:
                process, born_in = spawner.start(
                    policy.processes,
                    lambda: _spawn(full, root, env, pass_fds, setup, stdin, separate),
                )
                cgroup = cgroup or born_in
        finally:
            for fd in pass_fds:
                os.close(fd)
        output = CappedOutput(max_output)
        errors = CappedOutput(max_output) if separate else None
        sinks = [output] if errors is None else [output, errors]
        exit_code, timed_out = await _supervise(process, sinks, limit, cgroup)
    finally:
        if cgroup is not None:  # a spawner thread removes it, off this command's path
            cgroup.close(later=spawner is not None and spawner.cgroups)
    return ProcessResult(
        exit_code=exit_code,
        output=output.text(),
        bytes_cut=output.cut,
        timed_out=timed_out,
        timeout=limit,
        clamped=timeout is not None and timeout > policy.max_timeout,
        stderr=None if errors is None else errors.text(),
        stderr_cut=0 if errors is None else errors.cut,
    )


def _directory(workspace: str | Path) -> Path:
    root = Path(os.path.realpath(workspace))
    if not root.is_dir():
        raise UsageError(f"workspace {str(workspace)!r} is not an existing directory")
    return root


def _launcher(
    policy: SandboxPolicy, root: Path, protected: Sequence[Path]
) -> tuple[list[str], tuple[int, ...]]:
    """What goes before the command, and the descriptors the launcher reads."""
    if policy.mode == "danger-full-access":
        return [], ()
    if sys.platform == "darwin":
        return seatbelt_argv(root=root, policy=policy, protected=protected), ()
    bwrap = bwrap_path()
    program = seccomp_program()
    read, write = os.pipe()  # bwrap reads the filter from it; a few KB fit the pipe's buffer
    os.write(write, program)
    os.close(write)
    argv = bwrap_argv(bwrap, root=root, policy=policy, protected=protected, seccomp_fd=read)
    return argv, (read,)


def _limits(
    policy: SandboxPolicy, *, nproc: bool, attach: PidsCgroup | None
) -> tuple[list[str], Callable[[], None] | None]:
    """The resource limits as `prlimit`, run just before the command; and a pre-exec hook if
    one is needed: to join a cgroup (v2), or to set the limits where prlimit is missing. (A hook
    forks this whole process, milliseconds; an exec of prlimit costs less.)"""
    wanted = {
        "cpu": policy.cpu_seconds,
        "as": policy.address_space,
        "fsize": policy.file_size,
        "nofile": policy.open_files,
    }
    if nproc and os.geteuid() != 0:
        # Set inside the sandbox's user namespace, it counts the command's processes only.
        wanted["nproc"] = policy.processes
    settings = {name: _capped(name, value) for name, value in wanted.items() if value}
    prlimit = _prlimit()
    if prlimit and attach is None:
        return [prlimit, *(f"--{name}={value}" for name, value in settings.items()), "--"], None

    def setup() -> None:
        if attach is not None:
            attach.attach()
        for name, value in settings.items():
            resource.setrlimit(_RLIMITS[name], (value, value))

    return [], setup


_RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
}


def _capped(name: str, value: int) -> int:
    """No higher than our own hard limit, which an unprivileged process cannot raise."""
    _, hard = resource.getrlimit(_RLIMITS[name])
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


@functools.cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")


def _spawn(
    argv: list[str],
    root: Path,
    env: dict[str, str],
    pass_fds: tuple[int, ...],
    setup: Callable[[], None] | None,
    stdin: bytes | None = None,
    separate: bool = False,
) -> _Spawned:
    pipes = [_pipe()]
    if separate:
        pipes.append(_pipe())
    given: IO[bytes] | None = None
    if stdin is not None:  # an unnamed file: no writer to keep alive, no pipe to fill
        given = tempfile.TemporaryFile()  # noqa: SIM115 (closed once the child has it)
        given.write(stdin)
        given.seek(0)
    try:
        popen = subprocess.Popen(
            argv,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL if given is None else given,
            stdout=pipes[0][1],
            stderr=pipes[-1][1],
            pass_fds=pass_fds,
            start_new_session=True,  # its own process group, to kill in one call
            preexec_fn=setup,
        )
    except OSError as exc:  # only unconfined: in bwrap, the sandbox reports it as output
        for read, _ in pipes:
            os.close(read)
        raise ToolError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    except BaseException:
        for read, _ in pipes:
            os.close(read)
        raise
    finally:
        for _, write in pipes:
            os.close(write)
        if given is not None:
            given.close()
    return _Spawned(popen, tuple(read for read, _ in pipes))


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()  # close-on-exec, as Python makes every descriptor
    os.set_blocking(read, False)  # only our end: the command's writes must block, not fail
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux: fewer, larger reads (the default 64 KB works)
        with contextlib.suppress(OSError):
            fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, _READ_SIZE)
    return read, write


@dataclass
class _Spawned:
    popen: subprocess.Popen[bytes]
    fds: tuple[int, ...]
    """What we read: the command's output; then its standard error, if read apart."""


async def _supervise(
    spawned: _Spawned,
    sinks: Sequence[CappedOutput],
    limit: float,
    cgroup: PidsCgroup | None,
) -> tuple[int | None, bool]:
    """Read the output (into `sinks`, one per pipe) while waiting for the process; then kill
    what is left of its tree."""
    popen = spawned.popen
    streams = list(zip(spawned.fds, sinks, strict=True))
    eofs = [_read_into(fd, sink) for fd, sink in streams]
    timed_out = False
    try:
        try:
            async with asyncio.timeout(limit):
                await _exited(popen)
        except TimeoutError:
            timed_out = True
        _kill_tree(popen, cgroup)
        open_ = [eof for eof in eofs if not eof.done()]
        if open_:  # the killed tree closes the pipes; nothing else may keep us here
            await asyncio.wait(open_, timeout=_DRAIN_GRACE)
    finally:
        _kill_tree(popen, cgroup)  # on cancellation too: nothing outlives the call
        loop = asyncio.get_running_loop()
        for fd, _ in streams:
            loop.remove_reader(fd)
            os.close(fd)
        code = _reap(popen)
    return (None if timed_out else code), timed_out


def _read_into(fd: int, sink: CappedOutput) -> asyncio.Future[None]:
    """Feed what `fd` yields into `sink` as it comes; the future is done at its end."""
    loop = asyncio.get_running_loop()
    eof: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            sink.feed(data)
        else:
            loop.remove_reader(fd)
            if not eof.done():
                eof.set_result(None)

    loop.add_reader(fd, readable)
    return eof


async def _exited(popen: subprocess.Popen[bytes]) -> None:
    """Wait for the process to end without a thread: its pidfd becomes readable."""
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # macOS, Linux < 5.3: a thread waits (a kill ends it)
        await asyncio.to_thread(popen.wait)
        return
    done: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _kill_tree(popen: subprocess.Popen[bytes], cgroup: PidsCgroup | None) -> None:
    """SIGKILL the process group and every process in the cgroup. In bubblewrap, killing it is
    enough (its PID namespace dies with it); the cgroup also finds what left the group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill()


def _reap(popen: subprocess.Popen[bytes]) -> int:
    code = popen.wait()  # killed, or already gone: no wait to speak of
    return 128 - code if code < 0 else code
