"""What the agent never sees: credentials, shell histories, host secrets, the sockets of host
daemons, and reins's own folders (its config; its data: every project's log and the key that
signs them). One list for the two ways in: the command sandbox puts an empty folder or file
in their place, and the file tools refuse them and leave them out of listings and searches.

A folder that holds the workspace is left alone by both: the user chose to work in it."""

from __future__ import annotations

import os
from pathlib import Path

from ..core._paths import config_home, data_home

HIDDEN_IN_HOME = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".pgpass",
    ".pg_service.conf",
    ".local/share/keyrings",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
)
"""Credentials and histories, below the home folder."""
HIDDEN_IN_CONFIG = ("gcloud", "gh")
"""Credentials below $XDG_CONFIG_HOME as well, where those tools look when it is set."""
HIDDEN = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh",
    "/etc/ssl/private",
    "/run/user",
    "/run/dbus",
    "/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/crio",
    "/run/k3s",
    "/run/libvirt",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
    "/run/systemd/private",
    "/var/lib/lxd/unix.socket",
    "/var/snap/lxd/common/lxd/unix.socket",
)
"""Host secrets (root-owned files root may still read without capabilities) and the sockets of
host daemons: a Unix socket on a read-only mount still connects, and the Docker socket is the
host's root."""


def hidden_paths() -> tuple[str, ...]:
    """Every hidden path, absolute, as named (not resolved), for this process's environment:
    $HOME, $XDG_CONFIG_HOME and $XDG_DATA_HOME as they are now."""
    home = os.environ.get("HOME") or str(Path.home())
    paths = [os.path.join(home, name) for name in HIDDEN_IN_HOME]
    if config := os.environ.get("XDG_CONFIG_HOME"):
        paths += [os.path.join(config, name) for name in HIDDEN_IN_CONFIG]
    paths += [str(config_home()), str(data_home()), *HIDDEN]
    return tuple(dict.fromkeys(paths))  # in order, once each
