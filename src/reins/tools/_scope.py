"""A read-only mode's scope: tools that change things are refused, but writes under one
folder (where the mode's notes or plan go)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core._errors import ToolError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._tool import Tool
    from ._workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class ReadOnlyScope:
    mode: str
    folder: str
    """Relative to the workspace: the one place writes go (`docs/plan`)."""

    def check(self, tool: Tool, args: BaseModel, workspace: Workspace) -> None:
        """Raise the observation that refuses a call this mode does not allow."""
        if tool.read_only:
            return
        if not tool.path_args:
            raise ToolError(
                f"{tool.name} is not available in {self.mode} mode: the run is read-only "
                f"(files may be written only under {self.folder}/)"
            )
        allowed = workspace.root / self.folder
        for name in tool.path_args:
            path = str(getattr(args, name))
            if not workspace.resolve(path).is_relative_to(allowed):
                raise ToolError(
                    f"{tool.name} may not change {path!r} in {self.mode} mode: the run is "
                    f"read-only, but for files under {self.folder}/"
                )
