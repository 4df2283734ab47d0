"""`reins eval SUITE`: a suite's tasks attempted, each in a fresh workspace, judged by its
checks and answer matchers; a table, and `--json` for machines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..core._errors import UsageError
from ._agent_parts import _config, _served_agent
from ._console import _one_line_errors, err, out
from ._options import ModelOpt, StoreOpt, TrustProjectOpt

if TYPE_CHECKING:
    from ..agent._agent import Agent
    from ..eval import Attempt, EvalResult, Suite, Task
    from ..permissions import ApprovalMode


def eval_suite(
    suite: Annotated[
        Path, typer.Argument(metavar="SUITE", help="A suite file (TOML, YAML) or a folder of them.")
    ],
    model: ModelOpt = None,
    repeat: Annotated[
        int, typer.Option("--repeat", "-k", min=1, help="Attempts per task (pass@k, pass^k).")
    ] = 1,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="Only the tasks with this tag.")
    ] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", metavar="FILE", help="Write the results as JSON.")
    ] = None,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under",
            min=0.0,
            max=1.0,
            metavar="RATE",
            help="Exit 1 when fewer tasks than this share (0-1) passed (else 0 once it ran).",
        ),
    ] = None,
    trust_suite: Annotated[
        bool,
        typer.Option(
            "--trust-suite", help="Run the suite's setup and check commands without asking."
        ),
    ] = False,
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
) -> None:
    """Attempt a suite's tasks, each in a fresh temporary workspace, unattended: the agent's
    calls are allowed (unless the config's approval is "deny") inside the sandbox. Each run is
    recorded in the store; the eval's record is in its evals/ folder."""
    import asyncio

    from ..agent._resolve import default_model, resolve_model
    from ..eval import load_suite, run_eval
    from ..store import SQLiteLog
    from ._execute import _store_of

    config = _config(trust_project)
    with _one_line_errors():
        loaded = load_suite(suite, tags=tuple(tag or ()), model=model)
        _trust(loaded, trust_suite)
        fallback = config.model or default_model()[0]
        for task in loaded.tasks:  # a model that cannot be had is said before any attempt
            resolve_model(task.model or fallback, config)
        policy = config.sandbox.policy()
    directory = _store_of(store)
    approval: ApprovalMode = "deny" if config.approval == "deny" else "allow"

    async def go() -> EvalResult:
        log = SQLiteLog(directory)
        try:

            def make_agent(task: Task, workspace: Path) -> Agent:
                return _served_agent(
                    config,
                    task.model or fallback,
                    workspace=workspace,
                    log=log,
                    max_steps=task.max_steps or config.max_steps or 30,
                    approval=approval,
                    time_budget=task.timeout,
                    mode=task.mode,
                )

            return await run_eval(
                loaded, make_agent, policy, directory, repeat=repeat, on_attempt=_said
            )
        finally:
            await log.close()

    with _one_line_errors():
        result = asyncio.run(go())
    _table(result)
    if json_file is not None:
        json_file.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    rate = result.pass_rate
    out.print(
        f"{sum(t.passed for t in result.tasks)} of {len(result.tasks)} tasks passed "
        f"({rate:.0%}); eval {result.eval_id}, recorded in {directory / 'evals'}"
    )
    raise typer.Exit(1 if fail_under is not None and rate < fail_under else 0)


def _trust(suite: Suite, trusted: bool) -> None:
    """A suite's commands run on this machine (in the sandbox): as a project's checks, only
    once the user says so (`--trust-suite`, or yes at the terminal)."""
    commands = list(dict.fromkeys(c for t in suite.tasks for c in (*t.setup, *t.checks)))
    if trusted or not commands:
        return
    listed = "\n".join(f"  {c}" for c in commands[:20])
    more = f"\n  ... and {len(commands) - 20} more" if len(commands) > 20 else ""
    if not sys.stdin.isatty():
        raise UsageError(
            f"suite {suite.path} runs these commands (in the sandbox):\n{listed}{more}\n"
            "pass --trust-suite to run them"
        )
    err.print(f"suite {escape(str(suite.path))} runs these commands (in the sandbox):")
    err.print(escape(listed + more))
    if input("Run them? [y/N] ").strip().lower() not in ("y", "yes"):
        raise UsageError("the suite's commands were not trusted; nothing was run")


def _said(attempt: Attempt) -> None:
    mark = "[green]✓[/]" if attempt.passed else "[red]✗[/]"
    why = f"  [dim]{escape(attempt.failures[0])}[/]" if attempt.failures else ""
    err.print(
        f"{mark} {escape(attempt.task)} #{attempt.attempt}  {attempt.stop_reason or '-'}, "
        f"{attempt.steps} steps, {attempt.seconds:.1f} s{why}"
    )


def _table(result: EvalResult) -> None:
    table = Table(title=f"eval {result.eval_id}", title_justify="left")
    for name in ("task", "passed", "steps", "tokens in/out", "cost", "seconds"):
        table.add_column(name, justify="left" if name == "task" else "right")
    for task in result.tasks:
        attempts = task.attempts
        passed = sum(a.passed for a in attempts)
        table.add_row(
            escape(task.id),
            f"{passed}/{len(attempts)}",
            str(sum(a.steps for a in attempts)),
            f"{sum(a.input_tokens for a in attempts)}/{sum(a.output_tokens for a in attempts)}",
            f"${sum(a.cost for a in attempts):.4f}",
            f"{sum(a.seconds for a in attempts):.1f}",
        )
    out.print(table)
