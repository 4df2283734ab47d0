"""Checkpoints: snapshots of a workspace in a shadow git repository kept in the store, so that
what a run changed can be shown (`changes`, `diff`) and put back (`restore`).

`Shadow(store, workspace).snapshot(ref)` commits the workspace as it is onto `refs/reins/<ref>`;
the harness takes one before a step's first change. Needs git on PATH.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._git import CheckpointError
    from ._shadow import Change, Shadow

__all__ = ["Change", "CheckpointError", "Shadow"]


def __getattr__(name: str) -> Any:
    """Loaded on first use: importing the package costs nothing."""
    if name == "CheckpointError":
        from . import _git

        return _git.CheckpointError
    if name in ("Change", "Shadow"):
        from . import _shadow

        return getattr(_shadow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
