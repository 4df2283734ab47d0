"""The options several commands share, as annotated types, and the guard flags read into what
`Guards.switched` takes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..core._errors import UsageError
from ..core._guard_settings import GUARD_NAMES
from . import _complete
from ._console import _one_line_errors

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="REINS_STORE",
        help="Folder of the event log (SQLite + JSONL), or a PostgreSQL database "
        "(postgresql://USER@HOST:PORT/DATABASE, with reins[postgres]); default: the current "
        "folder's, in the user's data folder ($XDG_DATA_HOME/reins, else ~/.local/share/reins).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Approve every call the permission rules ask about (the sandbox still holds; "
        "writes to files that run code later, such as .git/ or .envrc, are still denied: "
        "only a yes at the prompt allows one).",
    ),
]
SandboxOpt = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        metavar="MODE",
        autocompletion=_complete.sandbox_modes,
        help="What commands may do: read-only, workspace-write (default) or danger-full-access "
        "(no sandbox).",
    ),
]
GuardOffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--no-guard",
        metavar="NAME",
        autocompletion=_complete.guards,
        help=f"Switch a guard off: {', '.join(GUARD_NAMES)} (repeatable).",
    ),
]
GuardOnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--guard",
        metavar="NAME",
        autocompletion=_complete.guards,
        help="Switch a guard on, e.g. one-call (repeatable).",
    ),
]
LoopThresholdOpt = Annotated[
    str | None,
    typer.Option(
        "--loop-threshold",
        metavar="N",
        help="A loop: the same call N rounds in a row, or two calls alternating N times "
        "(default 3; at least 2).",
    ),
]
StallThresholdOpt = Annotated[
    str | None,
    typer.Option(
        "--stall-threshold",
        metavar="N",
        help="A stall: N rounds with no change and no new result (default 8).",
    ),
]
GoalAnchorOpt = Annotated[
    str | None,
    typer.Option(
        "--goal-anchor", metavar="N", help="Restate the goal every N rounds (default 5; 0: never)."
    ),
]
NetworkOpt = Annotated[
    bool | None,
    typer.Option("--network/--no-network", help="Let commands use the network (default: no)."),
]
TokenBudgetOpt = Annotated[
    int | None,
    typer.Option("--token-budget", min=1, help="Cap on tokens (input + output) of the run."),
]


def _positive(value: float | None) -> float | None:
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value:g} is not a positive number")
    return value


TimeBudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--time-budget", callback=_positive, metavar="SECONDS", help="Cap on wall-clock time."
    ),
]
CostBudgetOpt = Annotated[
    float | None,
    typer.Option("--cost-budget", callback=_positive, metavar="USD", help="Cap on cost."),
]
TrustProjectOpt = Annotated[
    bool,
    typer.Option(
        "--trust-project",
        help="Use what the project's reins.toml sets that acts for it: its checks and stop "
        "hooks (they run unasked when the agent says it is done) and its provider settings and "
        "model (where the model's requests go, with which key); without it, the terminal asks, "
        "and with no terminal they are refused.",
    ),
]
McpConfigOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers from a JSON file ({"mcpServers": {...}}, as Claude Desktop writes '
        "it), beside the config's; repeatable.",
    ),
]


def _guard_flags(
    off: list[str] | None,
    on: list[str] | None,
    loop_threshold: str | None,
    stall_threshold: str | None,
    goal_anchor: str | None,
) -> dict[str, Any]:
    """The guard flags, as `Guards.switched` takes them (a bad number: one error line)."""
    with _one_line_errors():
        if both := sorted(set(off or ()) & set(on or ())):
            raise UsageError(f"--guard and --no-guard both name {', '.join(both)}; say one")
        return {
            "off": off or (),
            "on": on or (),
            "loop_threshold": _whole("--loop-threshold", loop_threshold, 2),
            "anti_stall_threshold": _whole("--stall-threshold", stall_threshold, 1),
            "goal_anchor": _whole("--goal-anchor", goal_anchor, 0),
        }


def _whole(flag: str, value: str | None, least: int) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = least - 1
    if number < least:
        raise UsageError(f"{flag} {value!r}: say a whole number, {least} or more")
    return number


# The options of a run, defined once: `run` takes them all, `chat` those that make sense for a
# turn of a chat (each turn is a run), `resume` and `mcp serve` some.

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar="REINS_MODEL",
        autocompletion=_complete.models,
        help="e.g. openai:gpt-4o-mini, script:FILE.json (default: the config's, else local)",
    ),
]
WorkspaceOpt = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-w",
        help="Folder the tools work in: a project's, not / or your home folder (refused).",
    ),
]
ServedMaxStepsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-steps",
        min=1,
        help="Cap on each run's model calls (default: the config's, else 30); a client may "
        "ask for fewer, not more.",
    ),
]
MaxStepsOpt = Annotated[
    int | None, typer.Option("--max-steps", min=1, help="Cap on model calls (default 30).")
]
AtCapOpt = Annotated[
    str | None,
    typer.Option(
        "--at-cap",
        metavar="stop|summarize",
        help="At a cap: stop (default), or summarize the partial work as the answer.",
    ),
]
BudgetNoticesOpt = Annotated[
    bool | None,
    typer.Option(
        "--budget-notices/--no-budget-notices",
        help="Tell the model what is left of its budgets (default: yes).",
    ),
]
ToolsOpt = Annotated[
    str | None,
    typer.Option(
        "--tools",
        help="Built-in tools to offer, comma-separated (default: all): read_file, "
        "write_file, edit_file, list_files, find_files, grep, run_command; calculate "
        "(offered by itself when run_command is not).",
    ),
]
CheckOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--check",
        metavar="COMMAND",
        help="A command that must pass (in the sandbox) before the answer stands; "
        "repeatable, after the config's `checks`.",
    ),
]
ReflectOpt = Annotated[
    bool | None,
    typer.Option(
        "--reflect/--no-reflect",
        help="After each step with tool calls, have the model judge it and choose what "
        "comes next (default: the config's `reflect`, else off).",
    ),
]
ReflectMaxRetriesOpt = Annotated[
    int | None,
    typer.Option(
        "--reflect-max-retries",
        min=1,
        metavar="N",
        help="Reflections in a row judging a step failed that stop the run (default 3).",
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help="A `reins serve` to do it on (e.g. http://127.0.0.1:8765), with the token in "
        "$REINS_SERVER_TOKEN; else in this process.",
    ),
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        autocompletion=_complete.modes,
        help="explore/plan: read-only (writes only under docs/explore/ or docs/plan/); "
        "write-test: answer only after the tests ran since the last change; "
        "write-no-test: change without running tests (default: no mode).",
    ),
]
ContextWindowOpt = Annotated[
    int | None,
    typer.Option(
        "--context-window",
        min=256,
        metavar="TOKENS",
        help="The model's context window, where the catalog does not know it (default: "
        "the config's [context] window, the endpoint's context_window, the catalog's).",
    ),
]
PlanningOpt = Annotated[
    bool | None,
    typer.Option(
        "--planning/--no-planning",
        help="Offer plan (an analysis, then steps that become the todo list) and todo "
        "(default: the config's `planning`).",
    ),
]
SubagentsOpt = Annotated[
    bool | None,
    typer.Option(
        "--subagents/--no-subagents",
        help="Offer spawn_agent: the model hands a subtask to a child run, a copy of "
        "itself or a config profile by name (default: the config's `subagents`).",
    ),
]
SteerStdinOpt = Annotated[
    bool,
    typer.Option(
        "--steer-stdin",
        help="Take the lines of a stdin that is not a terminal (a pipe, a file) as steers "
        "(in a terminal, a line typed always steers).",
    ),
]
