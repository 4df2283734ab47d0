"""smolagents on the overhead workload: a zero-latency scripted model, a no-op tool, 10 rounds per
run (9 no-op tool calls, then a 10th round calling the built-in `final_answer` tool), no network.

The model subclasses `smolagents.models.Model` and overrides `generate()` to return a
`ChatMessage` with one tool call. The agent is a `ToolCallingAgent` (JSON tool calls, not
CodeAgent) with `verbosity_level=LogLevel.OFF`; the tool is a `@tool` `noop()` returning "ok".

python benchmarks/peers/smolagents_driver.py --runs N   -> one JSON line on stdout
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _report import report, turn

ROUNDS = 10
WARMUP = 5


def measure(runs: int) -> list[float]:
    from smolagents import LogLevel, ToolCallingAgent, tool
    from smolagents.memory import ActionStep
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import TokenUsage

    class ScriptedModel(Model):
        calls = 0

        def generate(self, messages, **kwargs) -> ChatMessage:
            self.calls += 1
            name, arguments = (
                ("noop", {}) if self.calls < ROUNDS else ("final_answer", {"answer": "done"})
            )
            call = ChatMessageToolCall(
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                id=f"c{self.calls}",
                type="function",
            )
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                content="",
                tool_calls=[call],
                token_usage=TokenUsage(input_tokens=1, output_tokens=1),
            )

    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    model = ScriptedModel(model_id="scripted")
    agent = ToolCallingAgent(tools=[noop], model=model, verbosity_level=LogLevel.OFF, max_steps=20)
    samples: list[float] = []
    for index in range(runs + WARMUP):
        turn(index)  # run.py interleaves the harnesses
        model.calls = 0
        start = time.perf_counter()
        output = agent.run("benchmark")
        elapsed = time.perf_counter() - start
        steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
        noop_results = sum(1 for s in steps if s.observations == "ok")
        rounds_ok = model.calls == len(steps) == ROUNDS and noop_results == ROUNDS - 1
        if not rounds_ok or output != "done":
            sys.exit(
                f"smolagents run did not do {ROUNDS} rounds: {model.calls=} {len(steps)=} "
                f"{noop_results=} {output=!r}"
            )
        if index >= WARMUP:
            samples.append(elapsed / ROUNDS * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    try:
        import smolagents  # noqa: F401
    except ImportError as exc:
        sys.exit(f"smolagents is not installed (pip install smolagents): {exc}")
    import_s = time.perf_counter() - start
    samples = measure(args.runs)

    note = (
        "Model subclass overriding generate() -> ChatMessage(tool_calls=[...]); ToolCallingAgent, "
        "@tool noop(), 10th round = built-in final_answer tool; LogLevel.OFF; agent reused, "
        "agent.run() (reset=True) per run"
    )
    report("smolagents", "smolagents", import_s, samples, note)


if __name__ == "__main__":
    main()
