"""The floor of the overhead workload: what a round costs reins' event log alone.

Each of the 10 rounds makes the four events a round of a run makes (model_request,
model_response, tool_call_started, tool_call_finished; the last round's answer and run_finished),
validated as the loop makes them, signs them (each line's chained MAC, `store/_chain.py`), and
journals them in the same two writes a round (one before
the tool runs, one after); the tool's arguments are validated and the tool is called. No
policies, context, executor, fold or index: `instructions.py` counts this beside a real run, to
show how much of a round is the events themselves.

python benchmarks/floor_driver.py --runs N   -> one JSON line on stdout
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from _report import report, turn
from reins_driver import ROUNDS, workload


async def measure(runs: int, folder: str) -> list[float]:
    from reins import ToolResultMessage, Usage
    from reins.core._events import (
        ModelRequested,
        ModelResponded,
        RunFinished,
        ToolCallFinished,
        ToolCallStarted,
    )
    from reins.store._chain import Chain

    noop, replies = workload()
    usage = Usage(input_tokens=1, output_tokens=1, requests=1)

    chain = Chain(b"k" * 32)

    async def run(fd: int) -> None:
        seq = 0
        batch: list[Any] = []
        head = chain.genesis("s")

        def event(kind: type[Any], **fields: Any) -> None:
            nonlocal seq
            seq += 1
            fields.update(session_id="s", run_id="r", seq=seq, ts=datetime.now(UTC))
            batch.append(kind.__pydantic_validator__.validate_python(fields))

        def commit() -> None:
            nonlocal head
            bodies = [e.__pydantic_serializer__.to_json(e) for e in batch]
            data, head = chain.seal(head, bodies)
            os.write(fd, data)
            batch.clear()

        for step, reply in enumerate(replies, 1):
            event(ModelRequested, step=step)
            finish = "tool_use" if reply.tool_calls else "end_turn"
            event(ModelResponded, step=step, message=reply, usage=usage, finish=finish, model="m")
            if not reply.tool_calls:
                event(RunFinished, stop_reason="end_turn", final_answer="done")
                commit()
                return
            call = reply.tool_calls[0]
            event(ToolCallStarted, step=step, call=call)
            commit()
            content = await noop.run(None, noop.validate(call.arguments))  # type: ignore[arg-type]
            result = ToolResultMessage(call_id=call.id, name=call.name, content=content)
            event(ToolCallFinished, step=step, result=result, duration_ms=0.0)
            commit()

    samples: list[float] = []
    for index in range(runs + 5):  # 5 warm-up runs
        turn(index)
        fd = os.open(os.path.join(folder, f"{index}.jsonl"), os.O_WRONLY | os.O_CREAT)
        start = time.perf_counter()
        await run(fd)
        elapsed = time.perf_counter() - start
        os.close(fd)
        if index >= 5:
            samples.append(elapsed / ROUNDS * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = parser.parse_args()
    start = time.perf_counter()
    import reins  # noqa: F401

    import_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        samples = asyncio.run(measure(args.runs, folder))
    if not samples and args.runs:
        sys.exit("floor: no runs measured")
    report(
        "reins' events alone (the floor)",
        "reins",
        import_s,
        samples,
        "4 events a round validated, serialized, signed, journaled in 2 writes; the tool "
        "validated and called; no policies, context, executor, fold or index",
    )


if __name__ == "__main__":
    main()
