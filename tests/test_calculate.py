"""Counting and arithmetic: the prompt tells a model with run_command to compute with it; one
without run_command is offered `calculate`, which works arithmetic out exactly and runs
nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reins import Agent, Guards, Message, SystemMessage, ToolResultMessage, ToolSpec
from reins.cli import app
from reins.events import EVENT, RunStarted
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import builtin_tools, calculate, grep, read_file, tool

from .helpers import call, reply

COMMANDS_NOTE = "add up numbers with run_command"
CALCULATE_NOTE = "average numbers with calculate"


@tool
def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: One.
        b: The other.
    """
    return a + b


async def prompt_and_tools(workspace: Path, **kw: Any) -> tuple[str, list[str]]:
    """The system prompt of a run of such an agent, and the tools its model was offered."""
    seen: list[tuple[str, list[str]]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> str:
        assert isinstance(messages[0], SystemMessage)
        seen.append((messages[0].content, [t.name for t in tools]))
        return "FINAL_ANSWER: ok"

    await Agent(model=FunctionModel(model), workspace=workspace, **kw).run("how many lines?")
    return seen[0]


async def test_with_run_command_the_prompt_says_to_compute_with_it(workspace: Path) -> None:
    prompt, tools = await prompt_and_tools(workspace)
    assert "run_command" in tools
    assert "calculate" not in tools
    assert COMMANDS_NOTE in prompt
    for example in ("`wc -l FILE`", "`wc -w FILE`", "awk", "python3 -c"):
        assert example in prompt
    assert CALCULATE_NOTE not in prompt


async def test_without_run_command_calculate_is_offered_and_the_prompt_names_it(
    workspace: Path,
) -> None:
    prompt, tools = await prompt_and_tools(workspace, tools=[read_file, grep])
    assert tools == ["read_file", "grep", "final_answer", "calculate"]
    assert CALCULATE_NOTE in prompt
    assert "run_command" not in prompt  # what the prompt says is true: it is not offered


@pytest.mark.parametrize("mode", ["explore", "plan"])
async def test_a_read_only_mode_refuses_commands_so_calculate_is_offered_instead(
    workspace: Path, mode: str
) -> None:
    prompt, tools = await prompt_and_tools(workspace, mode=mode)
    assert "run_command" in tools  # offered, and refused where it runs
    assert "calculate" in tools
    assert COMMANDS_NOTE not in prompt
    assert CALCULATE_NOTE in prompt


async def test_a_mode_that_runs_commands_is_given_no_calculate(workspace: Path) -> None:
    prompt, tools = await prompt_and_tools(workspace, mode="write-test")
    assert "calculate" not in tools
    assert COMMANDS_NOTE in prompt


@pytest.mark.parametrize("tools", [None, [read_file, grep]])
async def test_the_compute_guard_off_adds_no_tool_and_no_note(
    workspace: Path, tools: list[Any] | None
) -> None:
    kw: dict[str, Any] = {"guards": Guards().without("compute")}
    if tools is not None:
        kw["tools"] = tools
    prompt, offered = await prompt_and_tools(workspace, **kw)
    assert "calculate" not in offered
    assert COMMANDS_NOTE not in prompt
    assert CALCULATE_NOTE not in prompt


async def test_a_calculate_listed_by_name_is_kept_with_the_guard_off(workspace: Path) -> None:
    kw: dict[str, Any] = {"guards": Guards().without("compute")}
    _, offered = await prompt_and_tools(
        workspace, tools=builtin_tools(["read_file", "calculate"]), **kw
    )
    assert offered == ["read_file", "calculate", "final_answer"]


async def test_an_agent_of_other_tools_is_given_no_calculate(workspace: Path) -> None:
    prompt, tools = await prompt_and_tools(workspace, tools=[add])
    assert tools == ["add", "final_answer"]
    assert CALCULATE_NOTE not in prompt
    assert COMMANDS_NOTE not in prompt


async def test_calculate_works_out_the_sum_exactly_through_the_loop(workspace: Path) -> None:
    replies = [
        reply("", call("calculate", "c1", expression="sum([12, 7.5, 30]) / 3")),
        reply("", call("calculate", "c2", expression="0.1 + 0.2")),
        reply("", call("calculate", "c3", expression="round(17 / 3, 2) * 100 // 1")),
        "FINAL_ANSWER: 16.5",
    ]
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, tools=[read_file])
    result = await agent.run("what is the average of 12, 7.5 and 30?")
    results = {m.call_id: m for m in result.messages if isinstance(m, ToolResultMessage)}
    assert [results[c].content for c in ("c1", "c2", "c3")] == ["16.5", "0.3", "567"]
    assert not any(r.is_error for r in results.values())


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os').system('touch pwned')", "is not arithmetic"),
        ("__import__('os')", "__import__(...) is not one of the functions"),
        ("open('pwned', 'w')", "open(...) is not one of the functions"),
        ("(1).__class__", "is not arithmetic"),
        ("x + 1", "'x' is not a number"),
        ("9 ** 9 ** 9", "too large to work out"),
        ("1 / 0", "division by zero"),
        ("[1, 2]", "is a list, not a number"),
        ("True + 1", "True is not a number"),
        ("'a' * 3", "is not arithmetic"),
        ("1 +", "not an arithmetic expression"),
        ("1+" * 2000 + "1", "at most 2000"),
        ("1+" * 990 + "1", "nested too deeply"),
        ("", "expression is empty"),
    ],
)
async def test_calculate_refuses_what_is_not_arithmetic_and_runs_nothing(
    workspace: Path, expression: str, error: str
) -> None:
    replies = [reply("", call("calculate", "c1", expression=expression)), "FINAL_ANSWER: no"]
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, tools=[calculate])
    result = await agent.run("compute")
    shown = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert shown.is_error
    assert error in shown.content
    assert not (workspace / "pwned").exists()


def test_builtin_tools_knows_calculate_by_name() -> None:
    assert [t.name for t in builtin_tools(["read_file", "calculate"])] == ["read_file", "calculate"]
    assert "calculate" not in [t.name for t in builtin_tools()]


def test_cli_without_run_command_offers_calculate_and_a_resume_keeps_it(tmp_path: Path) -> None:
    steps = [
        {"tool_calls": [{"name": "calculate", "arguments": {"expression": "2 + 3"}}]},
        {"tool_calls": [{"name": "calculate", "arguments": {"expression": "5 * 4"}}]},
        "FINAL_ANSWER: 20",
    ]
    (tmp_path / "s.json").write_text(json.dumps(steps))
    store = str(tmp_path / "store")
    model = f"script:{tmp_path / 's.json'}"
    args = ["-m", model, "-w", str(tmp_path), "--tools", "read_file", "--store", store]
    done = CliRunner().invoke(app, ["run", "add", *args, "--max-steps", "1", "--json"])
    assert done.exit_code == 3, done.output  # the step cap, after the first call
    started = EVENT.validate_json(done.output.splitlines()[0])
    assert isinstance(started, RunStarted)
    assert started.config.tools == ("read_file", "final_answer", "calculate")
    assert '"content":"5"' in done.output
    again = ["resume", "last", "--max-steps", "5", "--json", "--store", store]
    resumed = CliRunner().invoke(app, again)
    assert resumed.exit_code == 0, resumed.output
    assert '"content":"20"' in resumed.output
