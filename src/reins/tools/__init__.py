"""Tools: `@tool`, the executor, the workspace and the built-ins."""

from ._ask_user import ASK_USER_TOOL
from ._builtin import (
    BUILTIN_TOOLS,
    builtin_tools,
    edit_file,
    final_answer,
    find_files,
    grep,
    list_files,
    read_file,
    run_command,
    write_file,
)
from ._calculate import calculate
from ._escapes import ArgKind
from ._executor import ToolExecutor
from ._tool import Tool, ToolContext, tool
from ._workspace import Workspace

__all__ = [
    "ASK_USER_TOOL",
    "BUILTIN_TOOLS",
    "ArgKind",
    "Tool",
    "ToolContext",
    "ToolExecutor",
    "Workspace",
    "builtin_tools",
    "calculate",
    "edit_file",
    "final_answer",
    "find_files",
    "grep",
    "list_files",
    "read_file",
    "run_command",
    "tool",
    "write_file",
]
