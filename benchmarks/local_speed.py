"""How fast the embedded model runs: decode rate with 1 and 2 threads, with and without the
action grammar, and what reusing the KV cache of a repeated prompt prefix saves.

    PYTHONPATH=src python benchmarks/local_speed.py [--threads 1 2] [--tokens 96] [--rounds 6]

Each figure is one request at temperature 0 (a fixed reply); rounds are LocalModel requests,
so the prompt is what `_json_actions.chat` renders in a run.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from reins import AssistantMessage, ModelSettings, SystemMessage, ToolCall, UserMessage
from reins.core._messages import Message, ToolResultMessage
from reins.core._model import ModelResponse, TextChunk
from reins.models import LocalModel
from reins.tools import final_answer, list_files, read_file, write_file

TOOLS = [write_file.spec, read_file.spec, list_files.spec, final_answer.spec]
GOAL = "Write a short poem about rivers into poem.txt"


async def timed(
    model: LocalModel, messages: list[Message], tokens: int
) -> tuple[float, float, int, int]:
    """Seconds to the first token, decode tokens/s after it, output and prompt tokens."""
    start = time.perf_counter()
    first = None
    response = None
    async for item in model.stream(messages, TOOLS, ModelSettings(max_tokens=tokens)):
        if isinstance(item, TextChunk) and first is None:
            first = time.perf_counter()
        elif isinstance(item, ModelResponse):
            response = item
    end = time.perf_counter()
    assert response is not None
    assert first is not None
    out = response.usage.output_tokens
    return first - start, (out - 1) / (end - first), out, response.usage.input_tokens


def conversation(rounds: int) -> list[Message]:
    """A run's history after `rounds` actions, each with its result."""
    messages: list[Message] = [
        SystemMessage(content="You are an agent."),
        UserMessage(content=GOAL),
    ]
    for k in range(rounds):
        call = ToolCall(id=f"c{k}", name="read_file", arguments={"path": f"notes{k}.txt"})
        messages.append(AssistantMessage(tool_calls=(call,)))
        result = f"line {k}: rivers run to the sea, " * 8
        messages.append(ToolResultMessage(call_id=call.id, name="read_file", content=result))
    return messages


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    start = [SystemMessage(content="You are an agent."), UserMessage(content=GOAL)]
    for threads in args.threads:
        for constrained in (False, True):
            model = LocalModel(threads=threads, constrained=constrained)
            model.load()
            await timed(model, start, 4)  # warm up
            model.load().reset()  # no cached prefix
            ttft, rate, out, _ = await timed(model, start, args.tokens)
            kind = "constrained" if constrained else "unconstrained"
            print(f"threads={threads} {kind:13} first token {ttft:.2f}s, {rate:.1f} tok/s ({out})")
    model = LocalModel(threads=args.threads[-1])
    if args.rounds:
        print(f"threads={args.threads[-1]}: time to first token, prefix reused vs cold")
    for rounds in range(args.rounds):
        messages = conversation(rounds)
        warm, *_ = await timed(model, messages, 8)  # the previous round's prompt is cached
        model.load().reset()
        cold, _, _, prompt = await timed(model, messages, 8)
        print(f"round {rounds + 1} ({prompt} prompt tokens): reused {warm:.2f}s, cold {cold:.2f}s")


if __name__ == "__main__":
    asyncio.run(main())
