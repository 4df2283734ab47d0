"""Where a log on disk may lie relative to the workspace its runs' commands write."""

from __future__ import annotations

import os
from pathlib import Path

from ..core._errors import WorkspaceError


def check_placement(store: str | Path, workspace: str | Path) -> None:
    """Refuse a store that commands in `workspace` could rewrite or replace.

    The sandbox binds the store's own folder read-only, and the workspace is its mount
    point: neither can be renamed. A folder between them could be: a command would move it
    aside and plant a forged store in its place. So the store must lie outside the workspace,
    or directly in it (as `.reins`), and the workspace must not lie in the store."""
    log, root = Path(os.path.realpath(store)), Path(os.path.realpath(workspace))
    if root.is_relative_to(log):
        raise WorkspaceError(
            f"the workspace {root} is inside the event log's folder {log}, where the run's "
            "commands could rewrite its log; choose a workspace outside it"
        )
    if log.is_relative_to(root) and log.parent != root:
        between = root / log.relative_to(root).parts[0]
        raise WorkspaceError(
            f"the event log {log} is inside the workspace {root}, below {between}, a folder "
            "the run's commands may rename to plant another log in its place; keep the log "
            "out of the workspace (the default: the user's data folder) or directly in it "
            f"({root / '.reins'})"
        )
