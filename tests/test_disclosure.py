"""Progressive tool disclosure: past `defer_tools_above` tools the model is offered the
built-ins and two meta-tools; what it loads joins the offer, in the log, across a resume."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from reins import Agent, AssistantMessage, Budgets, Message, SQLiteLog, StopReason, ToolSpec
from reins.events import ToolsChanged
from reins.mcp import MCPServerConfig
from reins.testing import FunctionModel
from reins.tools import BUILTIN_TOOLS, Tool
from reins.tools._tool import AnyArguments

from .helpers import call, reply
from .test_mcp import PEERS, results

BUILTINS = {t.name for t in BUILTIN_TOOLS}
META = {"tool_search", "tool_load"}


def generated(count: int) -> list[Tool]:
    """`count` tools described by JSON schemas, as an MCP server's would be."""
    topics = ["weather", "traffic", "invoice", "calendar", "stock"]

    def make(i: int) -> Tool:
        topic = topics[i % len(topics)]

        async def fn(**arguments: Any) -> str:
            return f"{topic} {i}: {arguments['subject']}"

        return Tool(
            name=f"{topic}_lookup_{i}",
            description=f"Look up {topic} record {i} for a subject.",
            fn=fn,
            args_model=AnyArguments,
            schema={
                "type": "object",
                "properties": {"subject": {"type": "string"}},
                "required": ["subject"],
            },
        )

    return [make(i) for i in range(count)]


class Recorder:
    """A scripted model that records the tool names of each request."""

    def __init__(self, *replies: AssistantMessage | str) -> None:
        self.replies = list(replies)
        self.offered: list[set[str]] = []

    def __call__(self, messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        self.offered.append({t.name for t in tools})
        turn = sum(1 for m in messages if m.role == "assistant")
        return self.replies[turn]


async def test_only_the_builtins_and_meta_tools_are_offered_until_loaded(workspace: Path) -> None:
    model = Recorder(
        reply("", call("tool_search", "c1", query="weather records", limit=20)),
        reply("", call("tool_load", "c2", names=["weather_lookup_5", "nope_7"])),
        reply("", call("weather_lookup_5", "c3", subject="Oslo")),
        "done",
    )
    agent = Agent(
        model=FunctionModel(model), tools=[*BUILTIN_TOOLS, *generated(100)], workspace=workspace
    )
    events = [e async for e in agent.iter("go")]
    assert model.offered[0] == BUILTINS | META
    assert model.offered[2] == BUILTINS | META | {"weather_lookup_5"}
    found = results(events)
    search = found["c1"][0]
    assert search.splitlines()[0] == "- weather_lookup_0: Look up weather record 0 for a subject."
    assert search.splitlines()[1].startswith("- weather_lookup_5: ")  # 5 before 10
    assert "weather_lookup_5: Look up weather record 5 for a subject." in search
    assert "traffic" not in search
    assert "Load the ones you need with tool_load" in search
    loaded, is_error = found["c2"]
    assert not is_error
    assert loaded.startswith("Loaded weather_lookup_5: they are in your tool list now")
    assert "Not found: nope_7; tools you can load: calendar_lookup_3, calendar_lookup_8" in loaded
    assert loaded.endswith(" and 69 more.")  # 99 not loaded, 30 named
    assert found["c3"] == ("weather 5: Oslo", False)
    changed = [e for e in events if isinstance(e, ToolsChanged)]
    assert [c.loaded for c in changed] == [("weather_lookup_5",)]


async def test_loading_only_unknown_names_is_an_error_observation(workspace: Path) -> None:
    model = Recorder(reply("", call("tool_load", "c1", names=["missing"])), "done")
    agent = Agent(model=FunctionModel(model), tools=generated(30), workspace=workspace)
    content, is_error = results([e async for e in agent.iter("go")])["c1"]
    assert is_error
    assert content.startswith(
        "no tool named 'missing' can be loaded; these can: calendar_lookup_3,"
    )
    assert "(or find one with tool_search)" in content


async def test_below_the_threshold_or_off_every_tool_is_offered(workspace: Path) -> None:
    model = Recorder("done")
    tools = generated(12)
    agent = Agent(model=FunctionModel(model), tools=tools, workspace=workspace)
    await agent.run("go")
    assert model.offered[0] == {t.name for t in tools} | {"final_answer"}
    model = Recorder("done")
    agent = Agent(
        model=FunctionModel(model),
        tools=generated(100),
        workspace=workspace,
        defer_tools_above=None,
    )
    await agent.run("go")
    assert len(model.offered[0]) == 101


async def test_a_resume_offers_what_the_run_loaded(workspace: Path, sqlite_log: SQLiteLog) -> None:
    model = Recorder(
        reply("", call("tool_load", "c1", names=["invoice_lookup_2"])),
        reply("", call("invoice_lookup_2", "c2", subject="ACME")),
        "done",
    )
    agent = Agent(
        model=FunctionModel(model),
        tools=generated(50),
        workspace=workspace,
        log=sqlite_log,
        budgets=Budgets(max_steps=1),
    )
    first = await agent.run("go")
    assert first.stop_reason is StopReason.MAX_STEPS
    state = await agent.state(first.run_id)
    assert state.loaded_tools == {"invoice_lookup_2"}
    resumed = await agent.resume(first.run_id, max_steps=5)
    assert resumed.stop_reason is StopReason.END_TURN
    assert "invoice_lookup_2" in model.offered[1]
    finished = [m for m in resumed.messages if m.role == "tool" and m.call_id == "c2"]
    assert finished[0].content == "invoice 2: ACME"  # type: ignore[union-attr]


async def test_an_mcp_server_with_a_hundred_tools_is_disclosed_on_demand(workspace: Path) -> None:
    server = MCPServerConfig(
        name="toy",
        command=sys.executable,
        args=(str(PEERS / "toy_server.py"),),
        env={"TOY_TOOLS": "100"},
    )
    model = Recorder(
        reply("", call("tool_search", "c1", query="tide")),
        reply("", call("tool_load", "c2", names=["toy__city_tide_3"])),
        reply("", call("toy__city_tide_3", "c3", city="Brest", day=1)),
        "done",
    )
    agent = Agent(
        model=FunctionModel(model),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        mcp_servers=[server],
        approval="allow",
    )
    events = [e async for e in agent.iter("go")]
    assert model.offered[0] == BUILTINS | META
    found = results(events)
    assert "- toy__city_tide_3: The tide report number 3 for a city" in found["c1"][0]
    assert "toy__city_tide_3" in model.offered[2]
    assert found["c3"] == ("tide report 3 for Brest, day 1: fine", False)
