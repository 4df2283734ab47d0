"""The seccomp filter bubblewrap installs on the command: compiled once per process.

bubblewrap already gives the command a read-only root, its own PID, IPC and network
namespaces and no capabilities. The filter takes away what those leave open and a command has
no business using, each a known way out of a sandbox or into another process:

- ptrace, process_vm_readv/writev, pidfd_getfd: reading or driving another process;
- new namespaces (unshare, setns, clone with CLONE_NEW*; clone3 answers ENOSYS so libc falls
  back to clone, whose flags a filter can see): a user namespace hands back every
  capability, the first step of most container escapes;
- mount and the new mount API, pivot_root, chroot, open_by_handle_at: the file system view;
- the kernel keyring (add_key, keyctl, request_key): other sessions' secrets;
- bpf, perf_event_open, userfaultfd, kexec, kernel modules, reboot, swap, syslog, iopl: a
  large kernel attack surface, or the host itself;
- ioctl TIOCSTI/TIOCLINUX: typing into a terminal the command shares with the user.

Everything else is allowed: the filter is a deny list, so ordinary programs run unchanged.
Syscalls of other architectures (32-bit calls on x86-64) kill the process.
"""

from __future__ import annotations

import errno
import functools
import tempfile

from ..core._errors import SandboxUnavailable

_DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "add_key",
    "keyctl",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "iopl",
    "ioperm",
    "quotactl",
    "lookup_dcookie",
)
_CLONE_NEW = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C


@functools.cache
def seccomp_program() -> bytes:
    """The filter as a classic BPF program, as `bwrap --seccomp FD` reads it."""
    try:
        import pyseccomp as sc  # type: ignore[import-untyped]
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: no libseccomp found
        raise SandboxUnavailable(
            f"the command sandbox needs libseccomp ({exc}); install it, e.g. "
            "`apt-get install libseccomp2`"
        ) from None
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(sc.ALLOW)
    for name in _DENIED:
        try:
            flt.add_rule(deny, name)
        except OSError:  # not a syscall on this architecture (e.g. iopl on arm64)
            continue
    for flag in _CLONE_NEW:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for request in (_TIOCSTI, _TIOCLINUX):  # the kernel reads the request as 32 bits
        flt.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    with tempfile.TemporaryFile() as out:
        flt.export_bpf(out)
        out.seek(0)
        return out.read()
