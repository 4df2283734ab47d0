"""reins on the overhead workload: a zero-latency scripted model, a no-op tool, 10 rounds per
run (9 tool calls, then a final answer), every event persisted to SQLite + JSONL.

python benchmarks/reins_driver.py --runs N   -> one JSON line on stdout
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from typing import Any

from _report import report, turn

ROUNDS = 10


def workload(read_only: bool = False) -> tuple[Any, list[Any]]:
    """The no-op tool and a run's replies: nine calls of it, then the answer."""
    from reins import AssistantMessage, ToolCall, tool

    @tool(read_only=read_only)
    async def noop(i: int = 0) -> str:
        """Do nothing."""
        return "ok"

    # Distinct arguments: nine identical calls would be a loop, and the guards would stop it.
    script = [
        AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="noop", arguments={"i": i}),))
        for i in range(ROUNDS - 1)
    ]
    script.append(AssistantMessage(text="FINAL_ANSWER: done"))
    return noop, script


async def measure(runs: int, store: str, read_only: bool = False) -> list[float]:
    from reins import Agent, SQLiteLog, StopReason, Usage
    from reins.testing import ScriptedModel

    noop, script = workload(read_only)
    log = SQLiteLog(os.path.join(store, "log"))  # in the workspace, not holding it
    model = ScriptedModel(script, usage=Usage(input_tokens=1, output_tokens=1, requests=1))
    agent = Agent(model=model, tools=[noop], workspace=store, log=log)
    samples: list[float] = []
    for index in range(runs + 5):  # 5 warm-up runs
        turn(index)  # run.py interleaves the harnesses
        start = time.perf_counter()
        result = await agent.run("benchmark")
        elapsed = time.perf_counter() - start
        if result.stop_reason is not StopReason.END_TURN or result.steps != ROUNDS:
            sys.exit(f"reins run did not do {ROUNDS} rounds: {result.stop_reason}, {result.steps}")
        if index >= 5:
            samples.append(elapsed / ROUNDS * 1e6)
    await log.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--read-only", action="store_true", help="declare the no-op tool read-only (it is)"
    )
    parser.add_argument(
        "--dir", default=os.environ.get("REINS_BENCH_DIR"), help="where the log goes (a temp dir)"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    import reins  # noqa: F401

    import_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(dir=args.dir) as store:
        samples = asyncio.run(measure(args.runs, store, args.read_only))

    name = "reins (read-only tool)" if args.read_only else "reins"
    report(
        f"{name}, log on {args.dir}" if args.dir else name,
        "reins",
        import_s,
        samples,
        "ScriptedModel, async no-op @tool, every event signed, journaled (JSONL) and indexed "
        "(SQLite); " + ("1 commit a round" if args.read_only else "2 commits a round"),
    )


if __name__ == "__main__":
    main()
