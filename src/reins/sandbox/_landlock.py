"""Landlock scopes, for what bubblewrap leaves open when a command may use the network.

Without `--unshare-net` the command shares the host's network namespace, and with it the
host's *abstract* Unix sockets (named `@...`, no file to hide: a desktop's D-Bus and X11, some
container shims'). Landlock (ABI 6, Linux 6.12) can scope a process so that it may connect only
to abstract sockets made inside its own domain, and signal only processes inside it. Both are
applied to a helper thread that starts such commands (`_spawner`): a child inherits its
thread's domain, and our other threads stay free. Mount operations (bubblewrap's set-up) are
not restricted by a domain that handles no file-system access. Where Landlock is missing, or
older, nothing changes.
"""

from __future__ import annotations

import ctypes
import functools
import platform

_CREATE_RULESET, _RESTRICT_SELF = 444, 446  # the same on every architecture (generic numbers)
_VERSION = 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1
_SCOPE_SIGNAL = 2
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


def available() -> bool:
    """Can a thread be scoped here (Linux >= 6.12 with Landlock on)?"""
    return platform.system() == "Linux" and _abi() >= 6


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def _abi() -> int:
    return int(
        _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    )


def restrict_this_thread() -> None:
    """Scope this thread (and all it starts from now on), for good."""
    libc = _libc()
    attr = _RulesetAttr(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    fd = libc.syscall(
        _CREATE_RULESET,
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
    )
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        # Needed without CAP_SYS_ADMIN; a thread's own flag, inherited by what it starts.
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        libc.close(fd)
