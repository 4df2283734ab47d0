"""`reins eval SUITE`: a suite's tasks attempted, each in a fresh workspace, judged by its
checks and answer matchers; a table, and `--json` for machines. `reins eval list`, `show` and
`compare` read the evals the store recorded."""

from __future__ import annotations

import functools
import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich.markup import escape
from typer._click.core import Context
from typer.core import TyperGroup

from ..core._errors import UsageError
from ._agent_parts import _config, _served_agent
from ._console import _one_line_errors, err, out
from ._options import ModelOpt, StoreOpt, TrustProjectOpt

if TYPE_CHECKING:
    from ..agent._agent import Agent
    from ..agent._config import Config
    from ..core._events import Event
    from ..core._model import Model
    from ..eval import Attempt, EvalResult, Suite, Task
    from ..permissions import ApprovalMode
    from ..store import EventLog


class _SuiteFirst(TyperGroup):
    """`reins eval SUITE ...` is `reins eval run SUITE ...`: a first word that names no
    subcommand (a suite, or an option of `run`) goes to `run`."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, _bare_ray(args))


def _bare_ray(args: list[str]) -> list[str]:
    """`--ray` with no ADDRESS after it (last, or before another option) is `--ray=`: a Ray
    on this machine (click has no option whose value may be left out)."""
    return [
        "--ray=" if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")) else arg
        for i, arg in enumerate(args)
    ]


eval_app = typer.Typer(
    cls=_SuiteFirst,
    rich_markup_mode="markdown",
    no_args_is_help=True,
    help="Evaluate an agent: `reins eval SUITE` attempts a suite's tasks; `list`, `show` and "
    "`compare` read the evals recorded in the store.",
)


@eval_app.command("run")
def eval_suite(
    suite: Annotated[
        Path | None,
        typer.Argument(metavar="SUITE", help="A suite file (TOML, YAML) or a folder of them."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="EVAL",
            help="Run what an eval stopped before (its id, a prefix, or `last`).",
        ),
    ] = None,
    replay: Annotated[
        list[str] | None,
        typer.Option(
            "--replay",
            metavar="RUN",
            help="Drive a recorded run (its id, a prefix, `last`, or a .jsonl file of its "
            "events) again with its model's replies; say where today's harness first differs.",
        ),
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            metavar="DIR",
            help="With --replay: a copy of DIR is the workspace the replay starts in "
            "(else an empty folder).",
        ),
    ] = None,
    model: ModelOpt = None,
    repeat: Annotated[
        int, typer.Option("--repeat", "-k", min=1, help="Attempts per task (pass@k, pass^k).")
    ] = 1,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            metavar="N",
            help="Attempts going on at once, each of N worker processes running one at a "
            "time (an embedded model loads once in each).",
        ),
    ] = 1,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="[ADDRESS]",
            help="Run the attempts as tasks on a Ray cluster (reins[ray]): the one at ADDRESS "
            "(the head's HOST:PORT), else a Ray started on this machine. Each node's runs go to "
            "a PostgreSQL --store, else back to this machine's store.",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="Only the tasks with this tag.")
    ] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", metavar="FILE", help="Write the results as JSON.")
    ] = None,
    html_file: HtmlOpt = None,
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
    recorded in the store; the eval's record is in its evals/ folder. With --replay, drive
    recorded runs again instead (exit 1 if one differs)."""
    import asyncio

    from ..agent._resolve import default_model, resolve_model
    from ..eval import OnRay, WorkerDied, connected, load_suite, new_eval, read_record, run_eval
    from ..store import SQLiteLog, open_log
    from ._execute import _store_of

    config = _config(trust_project)
    with _one_line_errors():
        shared = _shared_store(store, ray_address, jobs, replay)
        directory = _store_of(None if shared else store, what="reins eval")
    if replay:
        with _one_line_errors():
            if suite is not None or resume is not None:
                raise UsageError("--replay replays runs: give no suite or --resume with it")
            if workspace is not None and not workspace.is_dir():
                raise UsageError(f"--workspace {workspace}: not a folder")
            files = {run: _events_in(Path(run)) for run in replay if run.endswith(".jsonl")}
            diverged = asyncio.run(_replayed(replay, files, workspace, directory, config))
        raise typer.Exit(1 if diverged else 0)
    with _one_line_errors():
        if resume is not None:
            if suite is not None or model is not None or tag or repeat != 1:
                raise UsageError(
                    "--resume goes on with the eval as it was asked: give no suite, --model, "
                    "--tag or --repeat with it"
                )
            started = read_record(directory, resume)
            suite, model, tag, repeat = (
                Path(started.suite),
                started.model,
                started.tags,
                started.repeat,
            )
        elif suite is None:
            raise UsageError("reins eval: name a SUITE (a file or folder), or --resume EVAL")
        loaded = load_suite(suite, tags=tuple(tag or ()), model=model)
        if resume is None:
            started = new_eval(loaded, repeat=repeat, tags=list(tag or ()), model=model)
        _trust(loaded, trust_suite)
        fallback = config.model or default_model()[0]
        for task in loaded.tasks:  # a model that cannot be had is said before any attempt
            resolve_model(task.model or fallback, config)
        policy = config.sandbox.policy()
    approval: ApprovalMode = "deny" if config.approval == "deny" else "allow"
    recipe = functools.partial(_attempt_agent, config, fallback, approval)

    async def go() -> EvalResult:
        log = open_log(shared) if shared else SQLiteLog(directory)
        try:
            if html_file is not None:
                _check_html()

            def make_agent(task: Task, workspace: Path) -> Agent:
                return recipe(task, workspace, log)

            done = await run_eval(
                loaded,
                started,
                make_agent,
                policy,
                directory,
                jobs=jobs,
                on_attempt=_Progress(len(loaded.tasks) * started.repeat, len(started.attempts)),
                recipe=recipe,  # -j N: N worker processes
                ray=None if ray_address is None else OnRay(home=log, shared_store=shared),
            )
            if html_file is not None:
                await _write_html(html_file, done, log)
            return done
        finally:
            await log.close()

    stopped = 0  # an eval cut short: its exit code (raised outside: _one_line_errors would
    # take typer.Exit, an Exception, for an internal error)
    with _one_line_errors():
        try:
            with connected(ray_address) if ray_address is not None else nullcontext():
                result = asyncio.run(go())
        except (KeyboardInterrupt, WorkerDied) as exc:
            cut = isinstance(exc, KeyboardInterrupt)
            stopped = 130 if cut else 1
            said = "[yellow]stopped[/]" if cut else f"[red]error:[/] {escape(str(exc))}"
            err.print(
                f"{said}: what finished is kept; `reins eval --resume {started.eval_id}` "
                "runs the rest"
            )
    if stopped:
        raise typer.Exit(stopped)
    _table(result)
    if json_file is not None:
        json_file.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    rate = result.pass_rate
    out.print(
        f"{sum(t.passed for t in result.tasks)} of {len(result.tasks)} tasks passed "
        f"({rate:.0%}); eval {result.eval_id}, recorded in {directory / 'evals'}"
    )
    raise typer.Exit(1 if fail_under is not None and rate < fail_under else 0)


def _shared_store(
    store: str | None, ray_address: str | None, jobs: int, replay: list[str] | None
) -> str | None:
    """The PostgreSQL store every Ray node writes its runs to (then the eval's record is in
    this project's store folder), if --ray and --store name one; bad pairings said first."""
    from ..eval import need_ray
    from ..store import is_postgres

    if ray_address is None:
        return None
    if jobs != 1 or replay:
        raise UsageError(
            "--ray runs as many attempts at once as the cluster has CPUs: "
            "give no --jobs or --replay with it"
        )
    need_ray()
    return store if is_postgres(store) else None


_LOADED: dict[str, Model] = {}
"""The embedded models this process loaded, by spec: their weights load once in a process."""


def _attempt_agent(
    config: Config,
    fallback: str,
    approval: ApprovalMode,
    task: Task,
    workspace: Path,
    log: EventLog,
) -> Agent:
    """The agent of an attempt at `task`: `run_eval`'s recipe, the config bound with
    functools.partial so that it pickles, for the worker processes of `-j N`."""
    spec = task.model or fallback
    agent = _served_agent(
        config,
        spec,
        workspace=workspace,
        log=log,
        max_steps=task.max_steps or config.max_steps or 30,
        approval=approval,
        time_budget=task.timeout,
        mode=task.mode,
        checkpoints=False,  # the attempt's workspace is thrown away
        memory=False,  # an attempt must not learn from the one before it
    )
    if spec.partition(":")[0] == "local":  # a fresh one would load its weights again
        agent.model = _LOADED.setdefault(spec, cast("Model", agent.model))
    return agent


def _events_in(path: Path) -> list[Event]:
    """A run's events from a file of them, one JSON event a line (`reins replay RUN --json`)."""
    from pydantic import ValidationError

    from ..core._events import EVENT

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--replay {path}: cannot be read: {exc}") from None
    events = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                events.append(EVENT.validate_json(line))
            except ValidationError as exc:
                first = str(exc.errors()[0]["msg"])
                raise UsageError(
                    f"--replay {path}: line {number} is not an event: {first}"
                ) from None
    return events


async def _replayed(
    runs: list[str],
    files: dict[str, list[Event]],
    workspace: Path | None,
    store: Path,
    config: Config,
) -> int:
    """Replay each run (from the store, or its events read from a file), saying whether it
    went as recorded or where it first differs; how many differed."""
    from ..eval import replay_events
    from ..store import SQLiteLog, find_run
    from ._agent_parts import _permissions

    log = SQLiteLog(store)
    diverged = 0
    try:
        for run in runs:
            if run in files:
                events = files[run]
            else:
                events = await log.events(find_run(await log.runs(), run).run_id)
            done = await replay_events(
                events, log, workspace=workspace, permissions=_permissions(config)
            )
            if done.divergence is None:
                out.print(f"[green]✓[/] {done.run_id}: as recorded ({done.compared} events)")
                continue
            diverged += 1
            gap = done.divergence
            out.print(
                f"[red]✗[/] {done.run_id}: first differs at seq {gap.seq} "
                f"(replay {done.replay_run_id})"
            )
            out.print(f"  before: {escape(json.dumps(gap.before))[:600]}")
            out.print(f"  after:  {escape(json.dumps(gap.after))[:600]}")
    finally:
        await log.close()
    return diverged


HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Write a report page: totals, charts, a row per task, each attempt's transcript "
        "(needs matplotlib: reins[eval]).",
    ),
]


def _check_html() -> None:
    """Said before the attempts, not after them."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--html draws its charts with matplotlib: pip install 'reins[eval]'")


async def _write_html(path: Path, result: EvalResult, log: EventLog) -> None:
    from ..eval import html_report, transcripts_of

    page = html_report(result, await transcripts_of(log, result))
    import asyncio

    await asyncio.to_thread(path.write_text, page, encoding="utf-8")
    err.print(f"report: {escape(str(path))}")


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


class _Progress:
    """Each attempt's line as it ends, with how far the eval is: attempts done of all, passes so
    far, the time left at the pace so far, and the cost so far."""

    def __init__(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.passed = 0
        self.cost = 0.0
        self.began = time.monotonic()
        self.counted = 0  # attempts this process ran: the pace

    def __call__(self, attempt: Attempt) -> None:
        self.done += 1
        self.counted += 1
        self.passed += attempt.passed
        self.cost += attempt.cost
        pace = (time.monotonic() - self.began) / self.counted
        left = round(pace * (self.total - self.done))
        mark = "[green]✓[/]" if attempt.passed else "[red]✗[/]"
        why = f"  [dim]{escape(attempt.failures[0])}[/]" if attempt.failures else ""
        err.print(
            f"{mark} {escape(attempt.task)} #{attempt.attempt}  {attempt.stop_reason or '-'}, "
            f"{attempt.steps} steps, {attempt.seconds:.1f} s{why}  [dim]({self.done}/"
            f"{self.total}, {self.passed} passed, ~{left // 60}m{left % 60:02d}s left, "
            f"${self.cost:.4f})[/]"
        )


def _table(result: EvalResult) -> None:
    from rich.table import Table

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


@eval_app.command("list")
def list_evals(store: StoreOpt = None) -> None:
    """The evals recorded in the store, the latest last."""
    from ..eval import list_records
    from ._execute import _store_of

    with _one_line_errors():
        evals = list_records(_store_of(store, what="reins eval"))
    from rich.table import Table

    table = Table()
    for name in ("eval", "started", "suite", "tasks", "passed", "attempts"):
        table.add_column(name, justify="right" if name in ("tasks", "passed") else "left")
    for result in evals:
        table.add_row(
            result.eval_id,
            result.started_at.replace("T", " ")[:19],
            escape(result.suite),
            str(len(result.tasks)),
            f"{sum(t.passed for t in result.tasks)} ({result.pass_rate:.0%})",
            f"{len(result.attempts)} of {len(result.tasks) * result.repeat or '?'}",
        )
    out.print(table if evals else "no evals in this store yet: `reins eval SUITE` runs one")


@eval_app.command("show")
def show_eval(
    eval_id: Annotated[str, typer.Argument(metavar="EVAL", help="Its id, a prefix, or `last`.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print it as JSON.")] = False,
    html_file: HtmlOpt = None,
    store: StoreOpt = None,
) -> None:
    """An eval's results, per task."""
    import asyncio

    from ..eval import read_record
    from ..store import SQLiteLog
    from ._execute import _store_of

    with _one_line_errors():
        directory = _store_of(store, what="reins eval")
        result = read_record(directory, eval_id)
        if html_file is not None:
            _check_html()

            async def write() -> None:
                log = SQLiteLog(directory)
                try:
                    await _write_html(html_file, result, log)
                finally:
                    await log.close()

            asyncio.run(write())
    if json_out:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
        return
    _table(result)
    out.print(
        f"{sum(t.passed for t in result.tasks)} of {len(result.tasks)} tasks passed "
        f"({result.pass_rate:.0%}, pass@{result.repeat} {result.pass_at_k:.0%})"
    )


@eval_app.command("compare")
def compare_evals(
    a: Annotated[str, typer.Argument(metavar="A", help="The eval before (id, prefix).")],
    b: Annotated[str, typer.Argument(metavar="B", help="The eval after.")],
    store: StoreOpt = None,
) -> None:
    """Which tasks flipped each way from A to B, the change in pass rate with McNemar's exact
    test on the flips, and the cost and time ratios (on the tasks both ran)."""
    from ..eval import compare, read_record
    from ._execute import _store_of

    with _one_line_errors():
        directory = _store_of(store, what="reins eval")
        seen = compare(read_record(directory, a), read_record(directory, b))
    out.print(
        f"{len(seen.shared)} tasks in both: pass rate {seen.rate_a:.0%} → {seen.rate_b:.0%} "
        f"({seen.rate_b - seen.rate_a:+.0%}); McNemar's exact p = {seen.p_value:.3g} "
        f"on {len(seen.gained) + len(seen.lost)} flips"
    )
    out.print(f"[green]now pass ({len(seen.gained)}):[/] {escape(', '.join(seen.gained) or '-')}")
    out.print(f"[red]now fail ({len(seen.lost)}):[/] {escape(', '.join(seen.lost) or '-')}")
    for what, ratio in (("cost", seen.cost_ratio), ("time", seen.time_ratio)):
        out.print(f"{what}: {'-' if ratio is None else f'{ratio:.2f} ×'} (B / A)")
