"""Does the agent finish real tasks? The suite of tasks.py through reins' public API.

Each task runs in a fresh temporary workspace (its setup files written first), with the default
tools, an in-memory log, approvals allowed (`run_command` runs in the default sandbox:
workspace-write, no network) and `--max-steps` steps; then its check runs in the workspace with
the final answer in `$ANSWER`: exit 0 is a success. Configurations, A/B in one invocation and
interleaved per task (rotated), so a busy spell of the machine slows them alike:

- `on`:  reins as shipped, every default-on policy (the guards, the budget notices);
- `off`: every guard off (`GUARD_NAMES`: file-action, repeat-cache, loop, markup, goal-anchor,
         one-call, repetition, schema-echo, done-check, escapes, syntax-check, rereads,
         change-review, compute) and no budget notices;
- `no-escapes`: as `on`, but JSON escapes in patterns and paths are not read back;
- `syntax-refuse`, `syntax-off`: as `on`, but a write that breaks a JSON/TOML/YAML/Python/XML
  file is refused (the file kept), or not looked at (the default reports it);
- `before-29`: as `on`, without issue 29's changes (guards escapes, syntax-check, rereads,
  change-review and compute off; no prefix cache);
- peers (`peers.py`), on the same GGUF served by llama.cpp's `llama-server` (started once for the
  run, only when one is chosen; `--model` must be `local` or `local:NAME`):
  `reins-served` (reins' OpenAI-compatible provider, policies on), `pydantic-ai`,
  `openai-agents`, `smolagents` (each its normal way, with reins' own tools wrapped, reins'
  system prompt, temperature 0 and the same step cap);
- any of these with changes that differ by one thing: `on+guard.done-check=off`,
  `on+env.REINS_LOCAL_THREADS=1` (`configs.py` has the keys); `--set KEY=VALUE` makes a change
  in every reins config.

Each run's first action is timed too: the seconds from its start to the model's first reply
that calls a tool (`final_answer` included); for a peer, to its first call of a tool.

python benchmarks/tasks/run.py [--model local] [--limit N] [--only ID,...] [--max-steps 10]
    [--configs on,off,no-escapes,syntax-refuse,syntax-off,before-29,on+guard.NAME=off,reins-served,
    pydantic-ai,openai-agents,smolagents] [--set KEY=VALUE ...] [--tools a,b] [--details FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import configs
from configs import Config

import peers
from tasks import TASKS, Task

TASK_TIMEOUT_S = 300.0
"""A task's time cap (`--task-timeout`): at it, the task has failed with `timeout`."""
CHECK_TIMEOUT_S = 30.0


@dataclass(kw_only=True)
class Outcome:
    config: str
    task: str
    category: str
    success: bool
    steps: int
    seconds: float
    stop_reason: str
    answer: str | None
    first_action_s: float | None = None
    """Seconds from the start to the first tool call (None: it made none)."""
    changes: list[str] = field(default_factory=list[str])
    """The config's changes to its base (`KEY=VALUE`, `--set`'s included)."""
    tool_calls: int = 0
    tool_errors: int = 0
    check_output: str = ""
    error: str | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


def prepare(task: Task, folder: Path) -> None:
    for relative, content in task.setup.items():
        path = folder / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def check(task: Task, folder: Path, answer: str | None) -> tuple[bool, str]:
    env = {**os.environ, "ANSWER": answer or ""}
    try:
        done = subprocess.run(
            ["sh", "-c", task.check],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return False, "check timed out"
    return done.returncode == 0, (done.stdout + done.stderr)[-500:]


async def attempt(model: Any, model_id: str, config: Config, task: Task,
                  args: argparse.Namespace, base_url: str | None) -> Outcome:  # fmt: skip
    tools = args.tools.split(",") if args.tools else None
    run = peers.Run()
    with tempfile.TemporaryDirectory(prefix=f"task-{task.id}-") as name, config.environment():
        folder = Path(name)
        prepare(task, folder)
        if config.peer:
            assert base_url is not None
            driver = peers.drive(
                config.peer, base_url, task.goal, folder, tools, args.max_steps, run
            )
        else:
            if config.served:
                model = model_id = base_url  # reins' OpenAI-compatible provider on the server
            driver = reins(model, model_id, config, task, folder, tools, args.max_steps, run)
        start = time.perf_counter()
        try:
            await asyncio.wait_for(driver, args.task_timeout)
        except TimeoutError:
            run.stop_reason, run.error = "timeout", f"timed out after {args.task_timeout:.0f} s"
        except Exception as exc:  # a harness failure is a failed task, never the end of the run
            run.failed(exc)
        seconds = time.perf_counter() - start
        success, output = check(task, folder, run.answer)
    done = asdict(run)
    acted = done.pop("first_action_at")
    return Outcome(
        config=config.label,
        task=task.id,
        category=task.category,
        success=success,
        seconds=seconds,
        first_action_s=None if acted is None else acted - start,
        changes=config.changes,
        check_output=output,
        **done,
    )


async def reins(model: Any, model_id: str, config: Config, task: Task, folder: Path,
                tools: list[str] | None, max_steps: int, run: peers.Run) -> None:  # fmt: skip
    from reins import Agent, Budgets, MemoryLog, ToolResultMessage, resolve_model
    from reins.tools import builtin_tools

    options = dict(config.agent)
    if config.guards is not None:
        options["guards"] = config.guards
    if config.settings is not None:
        options["settings"] = config.settings
    agent = Agent(
        model=resolve_model(model) if isinstance(model, str) else model,
        workspace=folder,
        log=MemoryLog(),
        budgets=Budgets(max_steps=max_steps, **config.budgets),
        approval="allow",
        tools=builtin_tools(tools),
        **options,
    )._record(model_id=model_id)  # recorded as the command line named it
    stream = agent.iter(task.goal)
    try:
        async for event in stream:  # counted as it goes: a run cut by the timeout shows how far
            if event.kind == "model_response":
                run.steps = max(run.steps, event.step)
                if event.message.tool_calls:
                    run.acted()
            elif event.kind == "tool_call_finished":
                run.tool_calls += 1
                run.tool_errors += event.result.is_error
        result = await stream.result()
    except BaseException:  # cut short (the timeout): what it had said and been told so far
        with suppress(Exception):  # not started: nothing
            run.transcript = transcript(stream.state.messages)
        raise
    finally:
        if close := getattr(agent.model, "aclose", None):  # the served model's connections
            await close()
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    run.steps = result.steps
    run.stop_reason = result.stop_reason.value
    run.answer = result.final_answer
    run.tool_calls = len(results)
    run.tool_errors = sum(m.is_error for m in results)
    run.transcript = transcript(result.messages)


def transcript(messages: list[Any]) -> list[dict[str, Any]]:
    return [{"role": m.role, **m.model_dump(exclude_defaults=True)} for m in messages]


async def run_all(args: argparse.Namespace, tasks: list[Task]) -> list[Outcome]:
    chosen = configs.parse(args.configs.split(","), args.set)
    models = Models()
    outcomes: list[Outcome] = []
    on_server = any(c.peer or c.served for c in chosen)
    with peers.llama_server(args.model) if on_server else nullcontext() as base_url:
        for index, task in enumerate(tasks):
            shift = index % len(chosen)
            for config in chosen[shift:] + chosen[:shift]:
                model_id = config.model or args.model
                model = None if config.peer or config.served else models.get(model_id, config)
                outcome = await attempt(model, model_id, config, task, args, base_url)
                outcomes.append(outcome)
                # written as it goes, so an interrupted run still leaves its results
                save(args.details, outcomes)
                mark = "ok  " if outcome.success else "FAIL"
                first = "" if outcome.first_action_s is None else f"{outcome.first_action_s:5.1f}"
                print(
                    f"  {mark} {task.id:<20} {config.label[:40]:<40} {outcome.steps:>2} steps "
                    f"{outcome.seconds:6.1f} s  first {first or '  —  '} s  "
                    f"{outcome.stop_reason}",
                    file=sys.stderr,
                    flush=True,
                )
    return outcomes


class Models:
    """The models the configs run, each resolved once (with its config's environment set, so
    a variable read when a model loads takes effect): one per model string and environment."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}

    def get(self, name: str, config: Config) -> Any:
        from reins import resolve_model

        key = (name, tuple(sorted(config.env.items())))
        if key not in self._made:
            with config.environment():
                self._made[key] = resolve_model(name)
        return self._made[key]


def save(path: str, outcomes: list[Outcome]) -> None:
    Path(path).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))


HEADER = [
    "config",
    "tasks",
    "success %",
    "steps (median)",
    "s/task (median)",
    "first action s (median)",
    "s/step (median)",
    "tool errors %",
    "stop reasons",
]


def row(config: str, group: list[Outcome]) -> list[str]:
    n = len(group)
    per_step = [o.seconds / o.steps for o in group if o.steps]
    firsts = [o.first_action_s for o in group if o.first_action_s is not None]
    calls = sum(o.tool_calls for o in group)
    reasons: dict[str, int] = {}
    for o in group:
        reasons[o.stop_reason] = reasons.get(o.stop_reason, 0) + 1
    return [
        config,
        str(n),
        f"{100 * sum(o.success for o in group) / n:.0f} ({sum(o.success for o in group)}/{n})",
        f"{statistics.median(o.steps for o in group):.0f}",
        f"{statistics.median(o.seconds for o in group):.1f}",
        f"{statistics.median(firsts):.1f}" if firsts else "—",
        f"{statistics.median(per_step):.2f}" if per_step else "—",
        f"{100 * sum(o.tool_errors for o in group) / calls:.0f}" if calls else "—",
        ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])),
    ]


def table(outcomes: list[Outcome]) -> str:
    names = list(dict.fromkeys(o.config for o in outcomes))
    rows = [row(name, [o for o in outcomes if o.config == name]) for name in names]
    lines = [HEADER, ["---"] * len(HEADER), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def per_task(outcomes: list[Outcome]) -> str:
    names = list(dict.fromkeys(o.config for o in outcomes))
    tasks = list(dict.fromkeys(o.task for o in outcomes))
    header = ["task", *names]
    lines = [header, ["---"] * len(header)]
    for task in tasks:
        cells = [task]
        for name in names:
            o = next(o for o in outcomes if o.task == task and o.config == name)
            cells.append(f"{'✓' if o.success else '✗'} {o.steps} st, {o.seconds:.0f} s")
        lines.append(cells)
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="a model string (default: local)")
    parser.add_argument(
        "--configs",
        default="on,off",
        help="comma-separated: on, off, reins-served, pydantic-ai, openai-agents, smolagents, "
        "each may add +KEY=VALUE changes (on+guard.done-check=off; configs.py has the keys)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a change in every reins config (budget.notices=off); may be repeated",
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N tasks; 0 = all")
    parser.add_argument("--only", help="comma-separated task ids")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument(
        "--task-timeout", type=float, default=TASK_TIMEOUT_S, help="seconds a task may take"
    )
    parser.add_argument("--tools", help="comma-separated built-in tools (default: all of them)")
    parser.add_argument("--details", default="tasks-results.json", help="per-task JSON results")
    args = parser.parse_args()
    tasks = TASKS
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    if args.limit:
        tasks = tasks[: args.limit]
    started = time.perf_counter()
    changed = f", in every reins config {', '.join(args.set)}" if args.set else ""
    print(
        f"Tasks: {len(tasks)} on {args.model}, max {args.max_steps} steps{changed}:",
        file=sys.stderr,
    )
    outcomes = asyncio.run(run_all(args, tasks))
    save(args.details, outcomes)
    print(table(outcomes))
    print()
    print(per_task(outcomes))
    print(
        f"\nTotal {time.perf_counter() - started:.0f} s; {len(tasks)} tasks on {args.model}, "
        f"max {args.max_steps} steps{changed}; per-task results in {args.details}."
    )


if __name__ == "__main__":
    main()
