"""One attempt at a task: a fresh workspace (its files, its fixture, its setup), the agent's run
on the goal, then the task's checks in the sandbox and its matchers on the answer."""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent import Agent
from ..core._events import Event, ModelResponded, Notice, ResponseRejected, ToolCallFinished
from ..sandbox import SandboxPolicy, run_process
from ._suite import Task

CHECK_TIMEOUT_S = 120.0
SHOWN = 300
"""Characters of a failed command's output kept in its reason."""

AgentFactory = Callable[[Task, Path], Agent]
"""Builds the agent of an attempt at a task in a workspace (its model, caps, tools): the front
end decides."""


@dataclass
class Attempt:
    """An attempt's record: `--json`'s items, one line each in the eval's file."""

    task: str
    attempt: int
    passed: bool
    run_id: str = ""
    session_id: str = ""
    stop_reason: str = ""
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    first_action_s: float | None = None
    """Seconds from the run's start to the first reply that called a tool (none: none did)."""
    tool_errors: int = 0
    """Tool calls whose result was an error."""
    rejections: int = 0
    """Replies a guard or policy refused (their calls not run; the model told why)."""
    notices: int = 0
    """Notes the guards and policies added for the model."""
    failures: list[str] = field(default_factory=list[str])
    """Why it did not pass: a setup that failed, each check that failed, each matcher missed."""
    worker: int | None = None
    """The process id of the worker process that ran it (`-j N`; `--ray`: a Ray worker's, on
    its node); None: the eval's own."""


async def attempt(
    task: Task, number: int, make_agent: AgentFactory, policy: SandboxPolicy
) -> Attempt:
    """Run attempt `number` at `task` in a temporary workspace, removed after its checks; one
    that raises is a failed attempt saying why (the eval goes on with the others)."""
    try:
        return await _attempted(task, number, make_agent, policy)
    except Exception as exc:
        return failed(task, number, exc)


def failed(task: Task, number: int, exc: BaseException) -> Attempt:
    """A failed attempt, its one-line reason the error it raised."""
    said = " ".join(f"{type(exc).__name__}: {exc}".split())[:SHOWN]
    return Attempt(task.id, number, False, failures=[f"error: {said}"])


async def _attempted(
    task: Task, number: int, make_agent: AgentFactory, policy: SandboxPolicy
) -> Attempt:
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"reins-eval-{task.id}-") as folder:
        workspace = Path(folder)
        _lay_out(task, workspace)
        for command in task.setup:
            if failure := await _fails(command, workspace, policy, "setup"):
                return Attempt(task.id, number, False, failures=[failure])
        agent = make_agent(task, workspace)
        async with agent:
            result = await agent.run(task.goal)
        events = await agent.log.events(result.run_id)
        said = f"export ANSWER={shlex.quote(result.final_answer or '')}; "  # for the checks
        failures = [
            failure
            for command in task.checks
            if (failure := await _fails(command, workspace, policy, "check", said))
        ]
    if task.answer is not None:
        failures += [f"answer {miss}" for miss in task.answer.misses(result.final_answer)]
    return Attempt(
        task=task.id,
        attempt=number,
        passed=not failures,
        run_id=result.run_id,
        session_id=result.session_id,
        stop_reason=result.stop_reason.value,
        steps=result.steps,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        cost=result.cost,
        seconds=round(time.perf_counter() - began, 3),
        failures=failures,
        **_counted(events),
    )


def _counted(events: Sequence[Event]) -> dict[str, Any]:
    """What the run's events say of how it went: its first action, errors and guards."""
    first: float | None = None
    for event in events:
        if isinstance(event, ModelResponded) and event.message.tool_calls:
            first = round((event.ts - events[0].ts).total_seconds(), 3)
            break
    return {
        "first_action_s": first,
        "tool_errors": sum(isinstance(e, ToolCallFinished) and e.result.is_error for e in events),
        "rejections": sum(isinstance(e, ResponseRejected) for e in events),
        "notices": sum(isinstance(e, Notice) and e.to_model for e in events),
    }


def _lay_out(task: Task, workspace: Path) -> None:
    if task.fixture is not None:
        shutil.copytree(task.fixture, workspace, dirs_exist_ok=True, symlinks=True)
    for name, text in task.files.items():
        path = workspace / name
        if name.endswith("/"):  # an empty folder
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def _fails(
    command: str, workspace: Path, policy: SandboxPolicy, what: str, before: str = ""
) -> str:
    """Why `command` failed in the workspace (none: it exited 0); `before` runs first."""
    done = await run_process(
        before + command, workspace=workspace, policy=policy, timeout=CHECK_TIMEOUT_S
    )
    if done.exit_code == 0:
        return ""
    how = "timed out" if done.timed_out else f"exited {done.exit_code}"
    said = " ".join(done.output.split())[-SHOWN:]  # one line: the end of what it said
    return f"{what} {how}: {command}" + (f" ({said})" if said else "")
