"""`SandboxPolicy`: what a command a tool starts may do, and the environment it gets."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from ..core._errors import UsageError

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
"""The tiers, named as codex names them, strictest first."""
MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)

ENV_ALLOWED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ")
"""Passed through when set, with every `LC_*`; nothing else unless the policy names it."""
_SECRET = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|SESSION)(_|$)|"
    r"^(AWS|AZURE|GOOGLE|GCP|GCLOUD|CLOUDSDK|ARM|OCI|DIGITALOCEAN|HCLOUD)_",
    re.IGNORECASE,
)
"""Names that hold credentials: never passed, even when named (`*_API_KEY`, `*_TOKEN`, cloud
credentials...)."""

GiB = 1 << 30


@dataclass(frozen=True, kw_only=True)
class SandboxPolicy:
    """What a command a tool starts may do. The tools do not choose: the agent's policy does.

    `read-only`: reads anywhere except hidden credential folders, writes nowhere but a private
    /tmp; `workspace-write` (the default): also writes the workspace, except its protected paths
    (`.git`, `.reins`, the event log); `danger-full-access`: no OS sandbox at all (only the scrubbed
    environment, the limits, the timeout and the output cap still apply)."""

    mode: SandboxMode = "workspace-write"
    network: bool = False
    """May commands reach the network (and the host's loopback)?"""
    max_timeout: float = 600.0
    """Seconds; a longer timeout asked for by the model is cut to this."""
    env: tuple[str, ...] = ()
    """Extra environment variables passed through by name (never credentials)."""
    readable: tuple[str, ...] = ()
    """Folders commands may read even where the sandbox hides their surroundings (a skill's
    folder under ~/.config/reins, or in /tmp, which is private to each command)."""
    cpu_seconds: int | None = 600
    """CPU time of each process (RLIMIT_CPU); None: no limit."""
    address_space: int | None = 8 * GiB
    """Bytes of virtual memory of each process (RLIMIT_AS)."""
    file_size: int | None = 2 * GiB
    """Largest file a process may write, in bytes (RLIMIT_FSIZE)."""
    open_files: int | None = 4096
    """Open file descriptors of each process (RLIMIT_NOFILE)."""
    processes: int | None = 512
    """Processes and threads of one command together (a pids cgroup; RLIMIT_NPROC when not
    root)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(
                f"unknown sandbox mode {self.mode!r}; choose one of {', '.join(MODES)}"
            )
        if not self.max_timeout > 0:
            raise UsageError(f"sandbox max_timeout must be positive, not {self.max_timeout}")
        secret = [name for name in self.env if _SECRET.search(name)]
        if secret:
            raise UsageError(
                f"sandbox env {', '.join(secret)}: credentials are never passed to commands; "
                "remove them from the sandbox's env list"
            )
        for name in ("cpu_seconds", "address_space", "file_size", "open_files", "processes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"sandbox {name} must be at least 1 (or None for no limit)")

    def environment(self, source: Mapping[str, str] | None = None) -> dict[str, str]:
        """The allow-listed variables of `source` (default: this process's environment)."""
        source = os.environ if source is None else source
        wanted = {*ENV_ALLOWED, *self.env}
        return {
            name: value
            for name, value in source.items()
            if (name in wanted or name.startswith("LC_")) and not _SECRET.search(name)
        }

    def describe(self) -> str:
        """What a command may do under this policy, in a sentence for the model."""
        if self.mode == "danger-full-access":
            return "It runs unsandboxed, with a reduced environment."
        writes = (
            "it may not write files (only a private /tmp, discarded afterwards)"
            if self.mode == "read-only"
            else "it may write only inside the workspace (not .git, .reins or the run log) and a "
            "private /tmp, discarded afterwards"
        )
        network = "it may use the network" if self.network else "it has no network"
        return (
            f"It runs in a sandbox: {writes}; {network}; it sees a reduced environment; "
            "processes it leaves in the background are killed when it ends."
        )
