"""pydantic-ai on the overhead workload: a zero-latency scripted model, a no-op tool, 10 rounds per
run (9 no-op tool calls, then a final text answer), no network.

The model is `pydantic_ai.models.function.FunctionModel` wrapping an async function (so it is not
pushed to a thread) that returns fixed token usage (so FunctionModel's test-only usage estimate,
which re-scans the whole history, is not counted). The tool is an async `noop()` returning "ok".

python benchmarks/peers/pydantic_ai_driver.py --runs N   -> one JSON line on stdout
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _report import report, turn

ROUNDS = 10
WARMUP = 5


async def measure(runs: int) -> list[float]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    calls = 0

    async def scripted(messages: list, info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        usage = RequestUsage(input_tokens=1, output_tokens=1)
        if calls < ROUNDS:
            part = ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{calls}")
            return ModelResponse(parts=[part], usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    async def noop() -> str:
        """Do nothing."""
        return "ok"

    agent = Agent(FunctionModel(scripted), tools=[noop])
    samples: list[float] = []
    for index in range(runs + WARMUP):
        turn(index)  # run.py interleaves the harnesses
        calls = 0
        start = time.perf_counter()
        result = await agent.run("benchmark")
        elapsed = time.perf_counter() - start
        tool_returns = sum(
            1
            for message in result.all_messages()
            for part in getattr(message, "parts", ())
            if getattr(part, "part_kind", "") == "tool-return" and part.content == "ok"
        )
        if calls != ROUNDS or tool_returns != ROUNDS - 1 or result.output != "done":
            sys.exit(f"pydantic-ai run did not do {ROUNDS} rounds: {calls=} {tool_returns=}")
        if index >= WARMUP:
            samples.append(elapsed / ROUNDS * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    try:
        import pydantic_ai  # noqa: F401
    except ImportError as exc:
        sys.exit(f"pydantic-ai is not installed (pip install pydantic-ai-slim): {exc}")
    import_s = time.perf_counter() - start
    samples = asyncio.run(measure(args.runs))

    note = (
        "FunctionModel(async fn, fixed usage); async noop() tool via Agent(tools=[...]); "
        "agent reused, fresh agent.run() per run"
    )
    report("pydantic-ai", "pydantic-ai-slim", import_s, samples, note)


if __name__ == "__main__":
    main()
