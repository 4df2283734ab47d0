"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

from reins import AssistantMessage, ToolCall


def call(tool_name: str, call_id: str | None = None, /, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id or f"id_{tool_name}", name=tool_name, arguments=arguments)


def reply(text: str = "", *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(text=text, tool_calls=calls)
