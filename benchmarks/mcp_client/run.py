"""MCP through reins. (1) What reins adds to a tool call: the same stdio server (the SDK's
own MCPServer, the toy server of the tests) called directly with the `mcp` SDK's Client,
through reins' tool executor (validation against the tool's JSON schema, permissions,
timeout, the observation), and as whole rounds of an agent run (a scripted model calls the
tool every round; the log in memory). Medians of per-call times; the ratio to the direct call
is the figure. (2) What the tool schemas cost each request with a server of 100 tools,
progressive disclosure on (the default, past 20 tools) and off: the tool list as the OpenAI
wire sends it, at three characters a token (reins' estimate).

    python benchmarks/mcp_client/run.py [--calls 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "mcp_peers" / "toy_server.py"


async def direct(calls: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(TOY)])
    times = []
    async with Client(params) as client:
        await client.call_tool("add", {"a": 0, "b": 0})  # warm
        for i in range(calls):
            start = time.perf_counter()
            result = await client.call_tool("add", {"a": i, "b": 1})
            times.append(time.perf_counter() - start)
            assert result.content[0].text == str(i + 1)  # type: ignore[union-attr]
    return times


async def through_executor(calls: int) -> list[float]:
    from reins import PermissionRules, Permissions, ToolCall, ToolContext, Workspace
    from reins.mcp import MCPServer, MCPServerConfig
    from reins.tools import ToolExecutor

    server = MCPServer(MCPServerConfig(name="toy", command=sys.executable, args=(str(TOY),)))
    times = []
    async with server:
        context = ToolContext(workspace=Workspace("."), session_id="s", run_id="r")
        executor = ToolExecutor(
            [],
            context=context,
            sources=[server],
            permissions=Permissions(user=PermissionRules(tools={"toy__*": "allow"})),
        )
        await executor.execute(ToolCall(id="w", name="toy__add", arguments={"a": 0, "b": 0}))
        for i in range(calls):
            call = ToolCall(id=f"c{i}", name="toy__add", arguments={"a": i, "b": 1})
            start = time.perf_counter()
            ruling = executor.judge(call, set())  # an allow rule: as the loop asks it
            assert ruling is not None
            assert ruling.decision == "allow"
            result = await executor.execute(call)
            times.append(time.perf_counter() - start)
            assert result.content == str(i + 1), result.content
        executor.close()
    return times


async def through_runs(calls: int) -> list[float]:
    """Per round of a run whose every round calls the MCP tool (model call, events, log)."""
    from reins import (
        Agent,
        AssistantMessage,
        Budgets,
        Guards,
        PermissionRules,
        Permissions,
        ToolCall,
        Usage,
    )
    from reins.mcp import MCPServer, MCPServerConfig
    from reins.testing import ScriptedModel

    script: list[AssistantMessage | str] = [
        AssistantMessage(
            tool_calls=(ToolCall(id=f"c{i}", name="toy__add", arguments={"a": i, "b": 1}),)
        )
        for i in range(calls)
    ]
    server = MCPServer(MCPServerConfig(name="toy", command=sys.executable, args=(str(TOY),)))
    agent = Agent(
        # A fixed usage: the double's own token estimate grows with the history.
        model=ScriptedModel([*script, "done, verified"], usage=Usage(input_tokens=1, requests=1)),
        tools=[],
        budgets=Budgets(max_steps=calls + 5),
        mcp_servers=[server],
        permissions=Permissions(user=PermissionRules(tools={"toy__*": "allow"})),
        guards=Guards(loop_threshold=calls + 1, anti_stall_threshold=calls + 1, goal_anchor=0),
    )
    times: list[float] = []
    async with agent:
        last = None
        async for event in agent.iter("add"):
            now = time.perf_counter()
            if event.kind == "model_request":
                if last is not None:
                    times.append(now - last)
                last = now
    return times[1:]


async def schema_tokens(defer: int | None) -> list[int]:
    """Tokens of the tool list of each request: search, load two tools, call one, answer."""
    from reins import Agent, AssistantMessage, ToolCall
    from reins.context import ContextSettings
    from reins.mcp import MCPServerConfig
    from reins.testing import FunctionModel
    from reins.tools import BUILTIN_TOOLS

    sent: list[int] = []
    calls = [
        ToolCall(id="c1", name="tool_search", arguments={"query": "tide"}),
        ToolCall(id="c2", name="tool_load", arguments={"names": ["toy__city_tide_3"]}),
        ToolCall(id="c3", name="toy__city_tide_3", arguments={"city": "Brest"}),
    ]

    def model(messages: list[Any], tools: list[Any]) -> AssistantMessage | str:
        wire = [{"type": "function", "function": t.model_dump(mode="json")} for t in tools]
        sent.append(len(json.dumps(wire)) // 3)
        turn = sum(1 for m in messages if m.role == "assistant")
        if defer is None and turn < 2:  # no meta-tools: the tool is offered from the start
            return AssistantMessage(tool_calls=(calls[2],)) if turn == 0 else "done, verified"
        return AssistantMessage(tool_calls=(calls[turn],)) if turn < 3 else "done, verified"

    server = MCPServerConfig(
        name="toy", command=sys.executable, args=(str(TOY),), env={"TOY_TOOLS": "100"}
    )
    agent = Agent(
        model=FunctionModel(model),
        tools=BUILTIN_TOOLS,
        mcp_servers=[server],
        defer_tools_above=defer,
        approval="allow",
        # Off, the schemas alone (~10,000 tokens) pass the 8,192 assumed of an unknown model.
        context=ContextSettings(window=128_000),
    )
    result = await agent.run("tide in Brest")
    assert result.final_answer == "done, verified", result.detail
    return sent


def summary(times: list[float]) -> dict[str, float]:
    return {"median_ms": statistics.median(times) * 1000, "calls": len(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    # Alternate the two per-call measurements, three times each: the median of medians.
    rounds: dict[str, list[float]] = {"direct": [], "executor": []}
    for _ in range(3):
        rounds["direct"].append(summary(asyncio.run(direct(args.calls)))["median_ms"])
        rounds["executor"].append(summary(asyncio.run(through_executor(args.calls)))["median_ms"])
    figures["direct_ms"] = statistics.median(rounds["direct"])
    figures["executor_ms"] = statistics.median(rounds["executor"])
    figures["run_round_ms"] = summary(asyncio.run(through_runs(args.calls)))["median_ms"]
    figures["executor_ratio"] = figures["executor_ms"] / figures["direct_ms"]
    figures["run_round_ratio"] = figures["run_round_ms"] / figures["direct_ms"]
    print(f"MCP tool call, stdio, {args.calls} calls x 3 (medians):")
    print(f"  direct, mcp SDK Client.call_tool    {figures['direct_ms']:.3f} ms")
    print(
        f"  through reins' executor             {figures['executor_ms']:.3f} ms"
        f"  ({figures['executor_ratio']:.2f}x)"
    )
    print(
        f"  a whole round of a reins run        {figures['run_round_ms']:.3f} ms"
        f"  ({figures['run_round_ratio']:.2f}x)"
    )
    on, off = asyncio.run(schema_tokens(20)), asyncio.run(schema_tokens(None))
    figures["schema_tokens_on"], figures["schema_tokens_off"] = on, off
    print("Tool schemas per request, a server of 100 tools + the built-ins (tokens):")
    print(f"  disclosure on  (search, load, call, answer)  {on}")
    print(f"  disclosure off (call, answer)                {off}")
    print(f"  first request: {on[0]} vs {off[0]} ({off[0] / on[0]:.1f}x fewer with disclosure)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
