"""The Anthropic adapter's translation to the Messages API wire format (documented shape)."""

from __future__ import annotations

from reins import (
    AssistantMessage,
    ModelSettings,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from reins.models._anthropic import _params
from reins.tools import read_file

CALL_A = ToolCall(id="toolu_1", name="read_file", arguments={"path": "a.txt"})
CALL_B = ToolCall(id="toolu_2", name="read_file", raw_arguments='{"path": ')


def test_a_conversation_becomes_alternating_turns_of_blocks() -> None:
    messages = [
        SystemMessage(content="Be brief."),
        UserMessage(content="Read a.txt and b.txt"),
        AssistantMessage(text="Reading both.", tool_calls=(CALL_A, CALL_B)),
        ToolResultMessage(call_id="toolu_1", name="read_file", content="A"),
        ToolResultMessage(call_id="toolu_2", name="read_file", content="bad", is_error=True),
        UserMessage(content="Also say hi."),
        AssistantMessage(),
    ]
    params = _params("claude-sonnet-4-5", messages, [read_file.spec], ModelSettings())
    assert params == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a.txt and b.txt"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading both."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "read_file",
                        "input": {"path": "a.txt"},
                    },
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "A",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "bad",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Also say hi."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "(no reply)"}]},
        ],
        "tools": [
            {
                "name": "read_file",
                "description": read_file.spec.description,
                "input_schema": read_file.spec.parameters,
            }
        ],
        "tool_choice": {"type": "auto"},
    }


def test_settings_map_to_the_request() -> None:
    settings = ModelSettings(max_tokens=100, temperature=0.2, tool_choice="required")
    params = _params("m", [UserMessage(content="x")], [read_file.spec], settings)
    assert (params["max_tokens"], params["extra_body"], params["tool_choice"]) == (
        100,
        {"temperature": 0.2},
        {"type": "any"},
    )
    none = _params(
        "m", [UserMessage(content="x")], [read_file.spec], ModelSettings(tool_choice="none")
    )
    assert none["tool_choice"] == {"type": "none"}
    assert "system" not in none


def test_a_request_where_no_tool_may_be_called_still_defines_the_tools() -> None:
    """The summary at a cap: the API refuses tool_use and tool_result blocks without tools."""
    history = [
        UserMessage(content="Read a.txt"),
        AssistantMessage(tool_calls=(CALL_A,)),
        ToolResultMessage(call_id="toolu_1", name="read_file", content="A"),
        UserMessage(content="[CAP REACHED] Sum up."),
    ]
    tool = {
        "name": "read_file",
        "description": read_file.spec.description,
        "input_schema": read_file.spec.parameters,
    }
    for settings in (
        ModelSettings(tool_choice="none"),
        ModelSettings(tool_choice="none", max_tokens=4096, thinking_budget=2048),
    ):
        params = _params("m", history, [read_file.spec], settings)
        assert (params["tools"], params["tool_choice"]) == ([tool], {"type": "none"})
