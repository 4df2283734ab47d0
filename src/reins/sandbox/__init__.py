"""The OS sandbox: one entry point, `run_process`, for every subprocess a tool starts.

On Linux a command runs in bubblewrap (read-only root, writable workspace and private /tmp,
protected paths read-only, new PID/IPC/network namespaces) with a seccomp filter, resource
limits, a pids cgroup, and a Landlock scope when the network is on; on macOS under a seatbelt
profile. The policy, not the tool, decides.
"""

from typing import TYPE_CHECKING, Any

from ..core._errors import SandboxUnavailable
from ._policy import ENV_ALLOWED, MODES, SandboxMode, SandboxPolicy

if TYPE_CHECKING:
    from ._run import MAX_OUTPUT, ProcessResult, run_process

__all__ = [
    "ENV_ALLOWED",
    "MAX_OUTPUT",
    "MODES",
    "ProcessResult",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "run_process",
]


def __getattr__(name: str) -> Any:
    """The runner loads on first use: importing a policy stays cheap."""
    if name in ("MAX_OUTPUT", "ProcessResult", "run_process"):
        from . import _run

        return getattr(_run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
