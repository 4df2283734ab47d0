"""The options several commands share, as annotated types, and the guard flags read into what
`Guards.switched` takes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..core._errors import UsageError
from ..core._guard_settings import GUARD_NAMES
from ._console import _one_line_errors

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="REINS_STORE",
        help="Folder of the event log (SQLite + JSONL); default: the current folder's, in the "
        "user's data folder ($XDG_DATA_HOME/reins, else ~/.local/share/reins).",
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
        help="What commands may do: read-only, workspace-write (default) or danger-full-access "
        "(no sandbox).",
    ),
]
GuardOffOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--no-guard",
        metavar="NAME",
        help=f"Switch a guard off: {', '.join(GUARD_NAMES)} (repeatable).",
    ),
]
GuardOnOpt = Annotated[
    list[str] | None,
    typer.Option("--guard", metavar="NAME", help="Switch a guard on, e.g. one-call (repeatable)."),
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
