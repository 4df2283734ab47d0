"""macOS: the same tiers as a seatbelt profile for `sandbox-exec`. Untested in CI (no macOS
there); kept small: everything is allowed but writes outside the writable folders and, unless
the policy allows it, the network. No PID namespace: the process group is what gets killed."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from .._errors import SandboxUnavailable
from ._policy import SandboxPolicy

_PROFILE = """(version 1)
(allow default)
(deny file-write*
  (require-all
    (require-not (literal "/dev/null"))
    (require-not (subpath "/private/tmp"))
    (require-not (subpath "/private/var/folders"))
    {workspace}))
{protected}
{network}"""


def seatbelt_argv(*, root: Path, policy: SandboxPolicy, protected: Sequence[Path]) -> list[str]:
    """`sandbox-exec` and its profile, up to the command; paths go in as parameters."""
    exe = shutil.which("sandbox-exec") or "/usr/bin/sandbox-exec"
    if not Path(exe).exists():
        raise SandboxUnavailable(
            "commands run in a sandbox, and sandbox-exec is missing; choose the sandbox mode "
            "danger-full-access to run them unconfined"
        )
    writable = policy.mode == "workspace-write"
    paths = [root / ".git", root / ".reins", *protected]
    profile = _PROFILE.format(
        workspace='(require-not (subpath (param "WS")))' if writable else "",
        protected="\n".join(
            f'(deny file-write* (subpath (param "P{i}")))' for i in range(len(paths))
        ),
        network="" if policy.network else "(deny network*)",
    )
    params = [f"-DWS={root}", *(f"-DP{i}={p}" for i, p in enumerate(paths))]
    return [exe, "-p", profile, *params]
