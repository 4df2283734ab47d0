"""A tool call as an editor shows it: its kind (the icon), a title, the files it touches, and
its output; a todo list as the editor's plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    PlanEntryStatus,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

from ..core._events import TodoItem
from ..core._messages import ToolCall

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_files": "read",
    "load_skill": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "find_files": "search",
    "grep": "search",
    "tool_search": "search",
    "run_command": "execute",
    "plan": "think",
    "todo": "think",
}
"""The built-in tools' kinds; any other tool's is `other` (`fetch` if its name says so)."""

NOT_SHOWN = frozenset({"final_answer", "ask_user"})
"""Calls that are not shown as tool calls: the answer is the reply's text."""

TITLE_CHARS = 120

STATUSES: dict[str, PlanEntryStatus | None] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
    "cancelled": None,  # not in ACP's plan: left out
}


def kind_of(name: str) -> ToolKind:
    if name in KINDS:
        return KINDS[name]
    return "fetch" if "fetch" in name.lower() else "other"


def title_of(call: ToolCall) -> str:
    """One line: what the call does, as a person would say it."""
    args = call.arguments
    path = str(args.get("path") or ".")
    match call.name:
        case "run_command":
            title = str(args.get("command", ""))
        case "read_file":
            title = f"Read {path}"
        case "write_file":
            title = f"Write {path}"
        case "edit_file":
            title = f"Edit {path}"
        case "list_files":
            title = f"List {path}"
        case "find_files":
            title = f"Find {args.get('pattern', '')} in {path}"
        case "grep":
            title = f"Search {args.get('pattern', '')} in {path}"
        case "todo":
            title = "Todo list"
        case "plan":
            title = "Plan"
        case _:
            shown = json.dumps(args, ensure_ascii=False) if args else ""
            title = f"{call.name} {shown}".strip()
    title = " ".join(title.split()) or call.name
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def locations_of(call: ToolCall, workspace: Path) -> list[ToolCallLocation] | None:
    """The file the call reads or changes (where the editor can follow it)."""
    path = call.arguments.get("path")
    if call.name not in KINDS or not isinstance(path, str) or not path:
        return None
    line = call.arguments.get("start_line") if call.name == "read_file" else None
    where = workspace / path
    return [ToolCallLocation(path=str(where), line=line if isinstance(line, int) else None)]


ToolContent: TypeAlias = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent


def text_content(text: str) -> list[ToolContent]:
    block = TextContentBlock(type="text", text=text)
    return [ContentToolCallContent(type="content", content=block)]


def plan_of(items: Sequence[TodoItem]) -> list[PlanEntry]:
    """The todo list as ACP's plan: its steps not cancelled, in order."""
    entries = []
    for item in items:
        status = STATUSES[item.status]
        if status is not None:
            entries.append(PlanEntry(content=item.text, priority="medium", status=status))
    return entries
