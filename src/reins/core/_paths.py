"""The user's own folders for reins, outside any project: the config and the data (each
project's event log, the key that signs the logs). A project cannot ship them, and commands and
the file tools never see them (the sandbox's hidden list holds both)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def config_home() -> Path:
    """$XDG_CONFIG_HOME/reins, else ~/.config/reins."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "reins"


def data_home() -> Path:
    """$XDG_DATA_HOME/reins, else ~/.local/share/reins."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "reins"


def project_store(workspace: str | Path) -> Path:
    """The default store of the project at `workspace`: one folder per real path, named by the
    folder's name (for a person listing them) and a hash of the whole path (unique)."""
    real = os.path.realpath(workspace)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(real)).strip("-.") or "root"
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:12]
    return data_home() / "projects" / f"{name[:40]}-{digest}"


def log_key_path() -> Path:
    """The secret that signs each event of the user's logs (see `store`)."""
    return data_home() / "log.key"
