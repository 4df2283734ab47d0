"""openai-agents on the overhead workload: a zero-latency scripted model, a no-op tool, 10 rounds
per run (9 no-op tool calls, then a final text answer), no network, tracing disabled.

Default model: the SDK's own test double `agents.testing.ScriptedModel`, refilled with the 10-step
script before each run. It deep-copies the whole input history twice per call (to record calls),
which is test-double cost a real model adapter does not have, so `--minimal-model` swaps in a
bare `agents.models.interface.Model` subclass that just returns the next scripted output.
The tool is an async `@function_tool noop()` returning "ok" (sync tools go to a thread).

python benchmarks/peers/openai_agents_driver.py --runs N [--minimal-model]   -> one JSON line
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


async def measure(runs: int, minimal: bool) -> list[float]:
    from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)
    script = [function_call("noop", {}, call_id=f"c{i}") for i in range(ROUNDS - 1)]
    script.append(assistant_message("done"))

    class MinimalModel(Model):
        def __init__(self) -> None:
            self.steps: list = []

        def extend(self, steps: list) -> None:
            self.steps.extend(steps)

        async def get_response(self, *args, **kwargs) -> ModelResponse:
            usage = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
            return ModelResponse(output=[self.steps.pop(0)], usage=usage, response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    tool_calls = 0

    @function_tool
    async def noop() -> str:
        """Do nothing."""
        nonlocal tool_calls
        tool_calls += 1
        return "ok"

    model = MinimalModel() if minimal else ScriptedModel()
    agent = Agent(name="bench", instructions="benchmark", model=model, tools=[noop])
    samples: list[float] = []
    for index in range(runs + WARMUP):
        turn(index)  # run.py interleaves the harnesses
        model.extend([[item] for item in script] if not minimal else script)
        tool_calls = 0
        start = time.perf_counter()
        result = await Runner.run(agent, "benchmark", max_turns=ROUNDS + 5)
        elapsed = time.perf_counter() - start
        rounds = len(result.raw_responses)
        if rounds != ROUNDS or tool_calls != ROUNDS - 1 or result.final_output != "done":
            sys.exit(f"openai-agents run did not do {ROUNDS} rounds: {rounds=} {tool_calls=}")
        if index >= WARMUP:
            samples.append(elapsed / ROUNDS * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--minimal-model",
        action="store_true",
        help="bare Model subclass instead of agents.testing.ScriptedModel",
    )
    args = parser.parse_args()
    start = time.perf_counter()
    try:
        import agents  # noqa: F401
    except ImportError as exc:
        sys.exit(f"openai-agents is not installed (pip install openai-agents): {exc}")
    import_s = time.perf_counter() - start
    samples = asyncio.run(measure(args.runs, args.minimal_model))

    model = (
        "minimal agents.models.interface.Model subclass"
        if args.minimal_model
        else "agents.testing.ScriptedModel (deep-copies history per call)"
    )
    note = (
        f"{model}; async @function_tool noop(); Runner.run() per run, agent reused; "
        "set_tracing_disabled(True)"
    )
    name = "openai-agents (minimal model)" if args.minimal_model else "openai-agents"
    report(name, "openai-agents", import_s, samples, note)


if __name__ == "__main__":
    main()
