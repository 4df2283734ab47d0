"""JSON escapes in patterns and paths (issue 29): a model writes the regex `\\b[0-9]+\\b` into a
JSON string as is, JSON reads `\\b` as a backspace, and grep searched for backspaces. Such a
control character in a regex, a glob or a path is read back as the escape meant, and the result
says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from reins import (
    Agent,
    AssistantMessage,
    Message,
    ToolCall,
    ToolContext,
    ToolResultMessage,
    ToolSpec,
    Workspace,
    tool,
)
from reins.models import _json_actions as json_actions
from reins.testing import FunctionModel
from reins.tools import BUILTIN_TOOLS, ArgKind, ToolExecutor, grep
from reins.tools._escapes import read_back

from .servers import SlowOpenAI

RAW = r'{"pattern": "\b[0-9]+\b", "path": "notes.txt"}'
"""A call's arguments as a model sends them: JSON that reads `\b` as a backspace."""
NOTE = r'[pattern: read a backspace (U+0008) as \b, the escape meant; in JSON, write "\\b"]'


def test_a_regex_gets_its_escapes_back_and_a_note_that_says_so() -> None:
    arguments = json.loads(RAW)
    assert arguments["pattern"] == "\x08[0-9]+\x08"
    fixed, note = read_back(arguments, patterns=("pattern",), paths=(), exists=_never)
    assert fixed == {"pattern": r"\b[0-9]+\b", "path": "notes.txt"}
    assert note == NOTE
    tabbed, note = read_back({"glob": "a\tb\n\x08"}, patterns=("glob",), paths=(), exists=_never)
    assert tabbed == {"glob": r"a\tb\n\b"}
    assert note == (
        r"[glob: read a tab as \t and a line break as \n and a backspace (U+0008) as \b, "
        r'the escape meant; in JSON, write "\\t", "\\n", "\\b"]'
    )


def test_what_is_not_a_pattern_or_holds_no_control_character_is_left_alone() -> None:
    arguments = {"pattern": r"\bx\b", "content": "a\tb\n", "count": 3}
    assert read_back(arguments, patterns=("pattern", "count"), paths=(), exists=_never) == (
        arguments,
        "",
    )
    content = {"content": "\x08"}  # a file's content may hold anything
    assert read_back(content, patterns=(), paths=("path",), exists=_never) == (content, "")


def test_a_path_that_names_a_file_as_it_is_is_left_alone() -> None:
    """list_files shows a name with a line break as a JSON string, for the model to send back
    so: that name is meant."""
    arguments = {"path": "a\nb.txt"}
    there = read_back(arguments, patterns=(), paths=("path",), exists=lambda p: True)
    assert there == (arguments, "")
    fixed, note = read_back(arguments, patterns=(), paths=("path",), exists=_never)
    assert fixed == {"path": r"a\nb.txt"}
    assert note.startswith(r"[path: read a line break as \n")


def test_a_parameter_declares_a_regex_a_glob_or_a_path_on_its_annotation() -> None:
    @tool
    def find(
        where: Annotated[str, ArgKind.PATH],
        regex: Annotated[str, ArgKind.REGEX],
        glob: Annotated[str, ArgKind.GLOB] | None = None,
        text: str = "",
    ) -> str:
        """Find.

        Args:
            regex: What to find.
        """
        return ""

    assert find.path_args == ("where",)
    assert find.pattern_args == ("regex", "glob")
    properties = find.spec.parameters["properties"]
    assert properties["regex"] == {
        "description": "What to find.",
        "format": "regex",
        "type": "string",
    }
    assert "format" not in json.dumps(properties["glob"]) + json.dumps(properties["where"])
    assert grep.spec.parameters["properties"]["pattern"]["format"] == "regex"
    assert grep.pattern_args == ("pattern", "glob")


def test_other_annotated_metadata_of_a_parameter_reaches_its_schema() -> None:
    """The markers are read from `Annotated`; pydantic's own metadata there applies too (it
    was dropped before)."""

    @tool
    def take(n: Annotated[int, Field(ge=0, description="How many.")]) -> str:
        return ""

    assert take.spec.parameters["properties"]["n"] == {
        "description": "How many.",
        "minimum": 0,
        "type": "integer",
    }
    assert take.pattern_args == take.path_args == ()


def test_an_mcp_schema_that_declares_a_regex_has_it_read_back() -> None:
    from reins.tools import Tool
    from reins.tools._tool import AnyArguments

    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "format": "regex"}, "n": {"type": "integer"}},
    }
    made = Tool(name="s", description="", fn=lambda: "", args_model=AnyArguments, schema=schema)
    assert made.pattern_args == ("q",)


async def _grep_through_executor(workspace: Path, arguments: dict[str, object]) -> str:
    context = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    executor = ToolExecutor(BUILTIN_TOOLS, context=context)
    result = await executor.execute(ToolCall(id="c", name="grep", arguments=arguments))
    return result.content


async def test_grep_finds_what_the_model_meant(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("total 42 items\nnone here\nid7x\n")
    found = await _grep_through_executor(workspace, json.loads(RAW))
    assert found == f"notes.txt:1: total 42 items\n[1 matching line]\n{NOTE}"
    missing = await _grep_through_executor(workspace, {"pattern": "\x08(", "path": "notes.txt"})
    assert missing.startswith(r"bad regular expression '\\b('")  # the pattern as it ran
    assert missing.endswith(NOTE.replace("[0-9]+", ""))  # and on an error, the note too


async def test_a_mistyped_path_is_read_back_and_a_real_odd_name_is_kept(workspace: Path) -> None:
    (workspace / "a\nb.txt").write_text("odd\n")
    (workspace / "a\\nb.txt").write_text("backslash\n")
    context = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    executor = ToolExecutor(BUILTIN_TOOLS, context=context)

    async def read(path: str) -> str:
        call = ToolCall(id="c", name="read_file", arguments={"path": path})
        return (await executor.execute(call)).content

    assert await read("a\nb.txt") == "odd\n\n[1 line in all]"
    (workspace / "a\nb.txt").unlink()
    assert await read("a\nb.txt") == (
        "backslash\n\n[1 line in all]\n"
        r'[path: read a line break as \n, the escape meant; in JSON, write "\\n"]'
    )


async def test_through_the_loop_the_model_s_raw_json_finds_the_numbers(workspace: Path) -> None:
    """The strict JSON action protocol (the embedded model's): the reply is the JSON text,
    parsed as the embedded provider parses it."""
    (workspace / "notes.txt").write_text("total 42 items\nnone here\n")
    answer = '{"name": "final_answer", "arguments": {"answer": "42"}}'
    texts = ['{"name": "grep", "arguments": ' + RAW + "}", answer]

    def act(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage:
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        return json_actions.reply(texts[turn], tools)

    model = FunctionModel(act)
    model.actions = "json"  # type: ignore[attr-defined]
    result = await Agent(model=model, workspace=workspace, tools=BUILTIN_TOOLS).run("numbers?")
    assert result.final_answer == "42"
    observed = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert observed[0].content == f"notes.txt:1: total 42 items\n[1 matching line]\n{NOTE}"


@pytest.mark.real_model  # an OpenAI-compatible server started here, not the internet
def test_over_the_wire_a_tool_call_s_raw_arguments_find_the_numbers(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("total 42 items\nnone here\n")
    replies: list[str | dict[str, object]] = [
        {"tool_calls": [{"name": "grep", "arguments": RAW}]},  # sent as this text
        "42",
    ]
    with SlowOpenAI(replies, gap=0) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        agent = Agent(model="openai:gpt-4o-mini", tools=BUILTIN_TOOLS, workspace=workspace)
        result = agent.run_sync("which numbers are in notes.txt?")
        sent = server.requests[1]["messages"][-1]
    assert result.final_answer == "42"
    assert sent["role"] == "tool"
    assert sent["content"] == f"notes.txt:1: total 42 items\n[1 matching line]\n{NOTE}"


def _never(path: str) -> bool:
    return False


@pytest.mark.real_model
async def test_a_small_model_s_backspace_in_a_regex_is_read_back_as_the_escape_it_typed(
    workspace: Path,
) -> None:
    # Qwen2.5-Coder-0.5B writes the regex the goal gives into its JSON as is: `\b` arrives as a
    # backspace (before the read-back, grep found nothing and the run stalled on that call).
    from reins import Budgets
    from reins.models import LocalModel

    (workspace / "notes.txt").write_text("total 42 items\nnone here\nabc123 no\n7 days\n")
    agent = Agent(
        model=LocalModel(embedded="qwen-0.5b", prefix_cache=False),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        budgets=Budgets(max_steps=1),
    )
    result = await agent.run(
        "Call grep on notes.txt with the regex \\b[0-9]+\\b to find the lines that hold a "
        "whole number"
    )
    [call] = [c for m in result.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert call.name == "grep"
    assert "\x08" in call.arguments["pattern"]  # what the model sent: a backspace
    [observed] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert NOTE in observed.content  # read back as `\b`, and said so
    assert "\x08" not in observed.content
