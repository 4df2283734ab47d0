"""`reins eval`'s own cost: what an attempt takes beyond its run (a fresh workspace, the
checks in the sandbox, the record), and how long a replay of a 200-step run takes.

100 scripted tasks (a write, then the answer; one check each), run by `run_eval` at -j 1 (in
this process) and -j 2 (two worker processes): per attempt, its seconds less its run's own
(first to last event); the workers' start is paid once each, in the wall time. Then a scripted
run of 200 steps (a write each) is recorded and replayed (`replay_events`). Goals (issue 31):
≤ 50 ms an attempt beyond its run; a 200-step replay ≤ 1 s. Medians; the store on /dev/shm.

    python benchmarks/eval.py [--tasks 100] [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from reins import Agent, Budgets
from reins.core._events import ToolCall
from reins.core._messages import AssistantMessage
from reins.eval import Task, load_suite, new_eval, replay_events, run_eval
from reins.sandbox import SandboxPolicy
from reins.store import EventLog, MemoryLog, SQLiteLog
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS


def _write(k: int) -> AssistantMessage:
    call = ToolCall(
        id=f"w{k}", name="write_file", arguments={"path": f"f{k}.txt", "content": "x\n"}
    )
    return AssistantMessage(text="", tool_calls=(call,))


def _agent(task: Task, workspace: Path, log: EventLog) -> Agent:
    """An attempt's agent, in this process or a worker's (`run_eval`'s recipe)."""
    from reins.agent._resolve import resolve_model

    assert task.model is not None
    return Agent(
        model=resolve_model(task.model),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        log=log,
        budgets=Budgets(max_steps=5),
        approval="allow",
    )


async def overhead(root: Path, tasks: int, jobs: int) -> list[float]:
    """Seconds per attempt beyond its run, for `tasks` one-write tasks at `jobs` at a time."""
    (root / "write.json").write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}
                    ]
                },
                "FINAL_ANSWER: written",
            ]
        )
    )
    lines = ['model = "script:write.json"\nmax_steps = 5\n']
    lines += [
        f'[[tasks]]\nid = "t{k}"\ngoal = "write a.txt"\nchecks = ["test -f a.txt"]\n'
        for k in range(tasks)
    ]
    suite_file = root / f"suite-{jobs}.toml"
    suite_file.write_text("\n".join(lines))
    suite = load_suite(suite_file)
    store = root / f"store-{jobs}"
    log = SQLiteLog(store)
    result = await run_eval(
        suite,
        new_eval(suite, repeat=1, tags=[], model=None),
        lambda task, workspace: _agent(task, workspace, log),
        SandboxPolicy(),
        store,
        jobs=jobs,
        recipe=_agent,  # -j 2: two worker processes
    )
    extra = []
    for attempt in result.attempts:
        events = await log.events(attempt.run_id)
        own = (events[-1].ts - events[0].ts).total_seconds()
        extra.append(attempt.seconds - own)
    await log.close()
    return extra


async def replay_time(root: Path, steps: int) -> tuple[int, float]:
    workspace = root / "replay-ws"
    workspace.mkdir()
    log = MemoryLog()
    replies = [_write(k) for k in range(steps)] + ["FINAL_ANSWER: all written"]
    agent = Agent(
        model=ScriptedModel(replies),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        log=log,
        budgets=Budgets(max_steps=steps + 5),
    )
    result = await agent.run("write the files")
    events = await log.events(result.run_id)
    empty = root / "replay-start"
    empty.mkdir()
    began = time.perf_counter()
    replayed = await replay_events(events, MemoryLog(), workspace=empty)
    took = time.perf_counter() - began
    assert replayed.divergence is None, replayed.divergence
    return result.steps, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reins-bench-eval-", dir="/dev/shm") as tmp:
        root = Path(tmp)
        rows = []
        for jobs in (1, 2):
            began = time.perf_counter()
            extra = asyncio.run(overhead(root, args.tasks, jobs))
            wall = time.perf_counter() - began
            rows.append((jobs, statistics.median(extra) * 1000, wall))
        steps, took = asyncio.run(replay_time(root, args.steps))
    print(f"\n{args.tasks} scripted tasks (one write, one check each), store on /dev/shm\n")
    print("| jobs | ms per attempt beyond its run (median) | wall s | attempts/s |")
    print("|---|---:|---:|---:|")
    for jobs, ms, wall in rows:
        print(f"| {jobs} | {ms:.1f} | {wall:.1f} | {args.tasks / wall:.1f} |")
    print(f"\nreplay of a {steps}-step run: {took:.2f} s")
    met = all(ms <= 50 for _, ms, _ in rows) and took <= 1.0
    said = "met" if met else "NOT met"
    print(f"goals (≤ 50 ms an attempt beyond its run, a 200-step replay ≤ 1 s): {said}")


if __name__ == "__main__":
    main()
