"""macOS: the same tiers as a seatbelt profile for `sandbox-exec`. Untested in CI (no macOS
there); kept small: everything is allowed but writes outside the writable folders, the hidden
paths (`reins.sandbox._hidden`, less the readable folders inside them) and, unless the policy allows
it, the network. No PID namespace: the process group is what gets killed. A later rule wins
over an earlier one it overlaps."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..core._errors import SandboxUnavailable
from ._code_paths import COMMANDS_READ_ONLY, git_dir_of
from ._hidden import hidden_paths
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
{hidden}
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
    paths = [root / name for name in COMMANDS_READ_ONLY]
    if (pointed := git_dir_of(str(root / ".git"))) is not None:
        paths.append(Path(pointed))
    paths += protected
    hidden = [
        real
        for real in dict.fromkeys(os.path.realpath(p) for p in hidden_paths())
        if os.path.lexists(real) and not root.is_relative_to(real)
    ]
    shown = [os.path.realpath(p) for p in policy.readable]
    profile = _PROFILE.format(
        workspace='(require-not (subpath (param "WS")))' if writable else "",
        protected="\n".join(
            f'(deny file-write* (subpath (param "P{i}")))' for i in range(len(paths))
        ),
        hidden="\n".join(
            [f'(deny file-read* file-write* (subpath (param "H{i}")))' for i in range(len(hidden))]
            + [f'(allow file-read* (subpath (param "R{i}")))' for i in range(len(shown))]
        ),
        network="" if policy.network else "(deny network*)",
    )
    params = [
        f"-DWS={root}",
        *(f"-DP{i}={p}" for i, p in enumerate(paths)),
        *(f"-DH{i}={p}" for i, p in enumerate(hidden)),
        *(f"-DR{i}={p}" for i, p in enumerate(shown)),
    ]
    return [exe, "-p", profile, *params]
