"""Does a long run stay inside its window? Tokens sent per round over a 500-round session whose
every tool result is 20 KB, in reins with compaction, reins without, and the peers as they come.

The model is each harness's own scripted double (no network, no latency): it calls the tool with
a new argument every round and answers at the end. What is measured is what each harness sends:
the characters of the request it builds each round, at three characters a token (reins' own
estimate, applied alike to all), so the figures compare harnesses, not tokenizers.

    python benchmarks/context/run.py [--rounds 500] [--window 128000] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUTPUT_BYTES = 20_000
CHECKPOINTS = (1, 10, 50, 100, 200, 300, 400, 500)


def report_text(part: int) -> str:
    line = f"part {part:04d}: a line of a long tool output, as a build log or a listing\n"
    return (line * (OUTPUT_BYTES // len(line) + 1))[:OUTPUT_BYTES]


def reins_run(rounds: int, window: int, compaction: bool) -> dict[str, Any]:
    from reins import Agent, AssistantMessage, Budgets, SQLiteLog, StopReason, ToolCall, Usage, tool
    from reins.context import ContextSettings
    from reins.context._tokens import estimate
    from reins.core._events import ContextCompacted
    from reins.testing import ScriptedModel

    @tool(read_only=True)
    def report(part: int) -> str:
        """Print one part of a long report.

        Args:
            part: Which part.
        """
        return report_text(part)

    sent: list[int] = []

    class Counting(ScriptedModel):
        async def request(self, messages, tools, settings):  # type: ignore[no-untyped-def]
            sent.append(estimate(messages, tools))
            return await super().request(messages, tools, settings)

    script: list[AssistantMessage | str] = [
        AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="report", arguments={"part": i}),))
        for i in range(rounds - 1)
    ]
    script.append("FINAL_ANSWER: read")
    # Without compaction, a window no request reaches: the curve of what would be sent.
    context = ContextSettings(window=window if compaction else 10**12, compaction=compaction)

    async def go(folder: str) -> dict[str, Any]:
        log = SQLiteLog(os.path.join(folder, "log"))  # in the workspace, not holding it
        # No provider count (input_tokens 0): reins estimates every request at chars/3, as
        # this table measures them; a real provider's count would replace the estimate.
        model = Counting(script, usage=Usage(input_tokens=0, output_tokens=1, requests=1))
        agent = Agent(
            model=model,
            tools=[report],
            workspace=folder,
            log=log,
            budgets=Budgets(max_steps=rounds + 10),
            context=context,
        )
        start = time.perf_counter()
        result = await agent.run("read every part of the report")
        elapsed = time.perf_counter() - start
        events = await log.events(result.run_id)
        await log.close()
        if result.stop_reason is not StopReason.END_TURN or len(sent) != rounds:
            sys.exit(f"reins did not do {rounds} rounds: {result.stop_reason} {result.detail}")
        costs = [
            (e.ts - events[i - 1].ts).total_seconds() * 1e3
            for i, e in enumerate(events)
            if isinstance(e, ContextCompacted)
        ]
        return {"seconds": elapsed, "compactions": len(costs), "compaction_ms": costs}

    with tempfile.TemporaryDirectory() as folder:
        extra = asyncio.run(go(folder))
    return {"sent": sent, **extra}


def pydantic_ai_run(rounds: int, keep: int | None = None) -> dict[str, Any]:
    """`keep`: with a history processor (`ProcessHistory`, what a user writes) that sends
    the first message and the last `keep`; None: pydantic-ai as it comes."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    sent: list[int] = []

    def chars(messages: list[Any]) -> int:
        total = 0
        for message in messages:
            for part in message.parts:
                content = getattr(part, "content", None)
                args = getattr(part, "args", None)
                total += len(str(content)) if content is not None else 0
                total += len(json.dumps(args)) if args is not None else 0
        return total

    async def scripted(messages: list[Any], info: AgentInfo) -> ModelResponse:
        sent.append(-(-chars(messages) // 3))
        usage = RequestUsage(input_tokens=1, output_tokens=1)
        if len(sent) < rounds:
            call = ToolCallPart(
                tool_name="report", args={"part": len(sent)}, tool_call_id=f"c{len(sent)}"
            )
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart("read")], usage=usage)

    async def report(part: int) -> str:
        """Print one part of a long report."""
        return report_text(part)

    from pydantic_ai.usage import UsageLimits

    def recent(messages: list[Any]) -> list[Any]:
        return messages if len(messages) <= keep + 1 else [messages[0], *messages[-keep:]]

    capabilities: list[Any] = []
    if keep is not None:
        from pydantic_ai.capabilities.process_history import ProcessHistory

        capabilities.append(ProcessHistory(recent))
    agent = Agent(FunctionModel(scripted), tools=[report], capabilities=capabilities)
    start = time.perf_counter()
    limits = UsageLimits(request_limit=rounds + 10)
    result = agent.run_sync("read every part of the report", usage_limits=limits)
    elapsed = time.perf_counter() - start
    if len(sent) != rounds or result.output != "read":
        sys.exit(f"pydantic-ai did not do {rounds} rounds: {len(sent)}")
    return {"sent": sent, "seconds": elapsed, "compactions": 0, "compaction_ms": []}


def smolagents_run(rounds: int) -> dict[str, Any]:
    from smolagents import LogLevel, ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import TokenUsage

    sent: list[int] = []

    def chars(messages: list[Any]) -> int:
        total = 0
        for m in messages:
            content = m.content if hasattr(m, "content") else m.get("content")
            if isinstance(content, list):
                total += sum(len(str(c.get("text", ""))) for c in content)
            elif content:
                total += len(str(content))
        return total

    class Scripted(Model):
        def generate(self, messages, **kwargs) -> ChatMessage:  # type: ignore[no-untyped-def]
            sent.append(-(-chars(messages) // 3))
            done = len(sent) >= rounds
            name, arguments = (
                ("final_answer", {"answer": "read"}) if done else ("report", {"part": len(sent)})
            )
            call = ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                id=f"c{len(sent)}",
                type="function",
            )
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                content="",
                tool_calls=[call],
                token_usage=TokenUsage(input_tokens=1, output_tokens=1),
            )

    @tool
    def report(part: int) -> str:
        """Print one part of a long report.

        Args:
            part: Which part.
        """
        return report_text(part)

    agent = ToolCallingAgent(
        tools=[report],
        model=Scripted(model_id="scripted"),
        verbosity_level=LogLevel.OFF,
        max_steps=rounds + 10,
    )
    start = time.perf_counter()
    output = agent.run("read every part of the report")
    elapsed = time.perf_counter() - start
    if len(sent) != rounds or output != "read":
        sys.exit(f"smolagents did not do {rounds} rounds: {len(sent)} {output!r}")
    return {"sent": sent, "seconds": elapsed, "compactions": 0, "compaction_ms": []}


def row(name: str, data: dict[str, Any], window: int) -> str:
    sent = data["sent"]
    points = " | ".join(f"{sent[c - 1]:,}" for c in CHECKPOINTS if c <= len(sent))
    costs = data["compaction_ms"]
    cost = f"{statistics.median(costs):.1f}" if costs else "–"
    over = sum(s > window for s in sent)
    return (
        f"| {name} | {points} | {max(sent):,} | {over} | {sum(sent):,} | "
        f"{data['compactions']} | {cost} | {data['seconds']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--window", type=int, default=128_000, help="the model's window (tokens)")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args()
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "reins, compaction on": lambda: reins_run(args.rounds, args.window, True),
        "reins, compaction off": lambda: reins_run(args.rounds, args.window, False),
        "pydantic-ai (no history processor)": lambda: pydantic_ai_run(args.rounds),
        "pydantic-ai, a processor keeping the last 10": lambda: pydantic_ai_run(args.rounds, 10),
        "smolagents": lambda: smolagents_run(args.rounds),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        try:
            results[name] = run()
        except ImportError as exc:
            print(f"  {name}: not installed ({exc})", file=sys.stderr)
    marks = [c for c in CHECKPOINTS if c <= args.rounds]
    print(
        f"\nTokens sent per round, {args.rounds} rounds of {OUTPUT_BYTES // 1000} KB tool "
        f"results, window {args.window:,} (chars/3 for every harness):\n"
    )
    print(
        "| harness | "
        + " | ".join(f"round {c}" for c in marks)
        + " | peak | rounds over the window | total sent | compactions | ms a compaction "
        "(median) | seconds |"
    )
    print("| --- " * (len(marks) + 7) + "|")
    for name, data in results.items():
        print(row(name, data, args.window))
    on = results.get("reins, compaction on")
    if on and on["compactions"]:
        first = next(i for i, s in enumerate(on["sent"]) if i and s < on["sent"][i - 1])
        after = on["sent"][first:]
        print(
            f"\nreins with compaction, after its first compaction (round {first + 1}): "
            f"median {statistics.median(after):,.0f} tokens a round, "
            f"min {min(after):,}, max {max(after):,}"
        )
    if args.json:
        args.json.write_text(json.dumps({k: v["sent"] for k, v in results.items()}))


if __name__ == "__main__":
    main()
