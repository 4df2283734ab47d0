"""How much the log keeps per round: a scripted run of N rounds (a 76-character reply, streamed
in pieces as a model streams it, and one tool call), recorded by SQLiteLog; the journal's
bytes and lines per round, and how many deltas went to the stream.

    python benchmarks/journal_size.py [--rounds 50]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

TEXT = "I will look at the next part of the file, then decide what to change in it."


async def measure(rounds: int) -> None:
    from reins import Agent, AssistantMessage, Budgets, SQLiteLog, ToolCall, tool
    from reins.testing import ScriptedModel

    @tool(read_only=True)
    def part(n: int) -> str:
        """Read one part.

        Args:
            n: Which part.
        """
        return f"part {n}: fine"

    script: list[AssistantMessage | str] = [
        AssistantMessage(
            text=TEXT, tool_calls=(ToolCall(id=f"c{i}", name="part", arguments={"n": i}),)
        )
        for i in range(rounds)
    ]
    with tempfile.TemporaryDirectory() as folder:
        log = SQLiteLog(Path(folder) / "store")
        agent = Agent(
            model=ScriptedModel([*script, "FINAL_ANSWER: done"]),
            tools=[part],
            workspace=folder,
            log=log,
            budgets=Budgets(max_steps=rounds + 2),
        )
        events = [event async for event in agent.iter("go")]
        await log.close()
        [journal] = (Path(folder) / "store" / "sessions").glob("*.jsonl")
        size, lines = journal.stat().st_size, journal.read_bytes().count(b"\n")
    deltas = sum(1 for e in events if e.kind == "text_delta")
    steps = rounds + 1
    print(
        f"{steps} rounds: journal {size} bytes, {lines} lines: {size / steps:.0f} bytes and "
        f"{lines / steps:.1f} lines a round; {deltas} text deltas streamed"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    asyncio.run(measure(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
