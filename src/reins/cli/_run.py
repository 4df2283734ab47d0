"""`reins run`: an agent on a goal, its steps shown live."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core._errors import UsageError
from ..core._stop import StopReason
from . import _complete
from ._agent_choices import _profile
from ._console import _one_line_errors
from ._event_output import _drive
from ._execute import _execute
from ._options import JsonOpt, ServerOpt, SteerStdinOpt
from ._run_options import RunOptions, takes_run_options
from ._stdin import TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._messages import Goal
    from ..store import IndexedLog


@takes_run_options
def run(
    goal: Annotated[
        str, typer.Argument(help="What the agent should do; -: read it from stdin, to its end.")
    ],
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image",
            metavar="FILE",
            help="An image (PNG, JPEG, GIF, WebP) or a PDF given with the goal; repeatable.",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            "-s",
            autocompletion=_complete.sessions,
            help="Continue this session as a new turn.",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            metavar="NAME",
            help="A [profiles.NAME] table of the config (default: the one named after the kind "
            "of work the goal asks for, coding, research, writing or ops, if the config has it).",
        ),
    ] = None,
    *,
    options: RunOptions,
    json_lines: JsonOpt = False,
    steer_stdin: SteerStdinOpt = False,
    server: ServerOpt = None,
) -> None:
    """Run an agent on GOAL and show its steps live."""
    from ..tools._workspace import Workspace

    with _one_line_errors():
        goal = _goal(goal, steer_stdin)
    if server is not None:
        from ._remote import run_remote

        asked_for = {
            "session_id": session,
            "model": options.model,
            "max_steps": options.max_steps,
            "time_budget": options.time_budget,
            "mode": options.mode,
        }
        run_remote(server, goal, asked_for, json_lines)

    config = options.config()  # asked and settled before the log is opened
    choices = options.choices(config)
    with _one_line_errors():
        choices.profile, choices.profile_inferred = _profile(config, goal, profile)
        Workspace(options.workspace)  # one refused (missing, /, the home folder) is said first
        asked = _with_media(goal, image or [])  # a missing or unsupported file: said first

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        lines = TerminalLines(piped_steers=steer_stdin)  # a line answers a prompt, or steers
        agent = choices.agent(config, log, lines)
        if session is not None:  # `last`, or a unique prefix, as for every other id
            from ..store import find_session

            session_id: str | None = find_session(await log.runs(), session)
        else:
            session_id = None
        stream = agent.iter(asked, session_id=session_id, cancel=cancel)
        lines.start(stream.steer)
        return await _drive(stream, json_lines, cancel, lines)

    _execute(options.store, go, workspace=options.workspace)


def _goal(given: str, steer_stdin: bool) -> str:
    """The goal given, or with `-`, stdin's text to its end."""
    if given != "-":
        return given
    if steer_stdin:
        raise UsageError("reins run -: stdin is the goal, so it cannot steer too (--steer-stdin)")
    goal = sys.stdin.read().strip()
    if not goal:
        raise UsageError("reins run -: stdin held no goal (it was empty)")
    return goal


def _with_media(goal: str, files: list[Path]) -> Goal:
    """The goal, then the images and documents of `--image` (read from their bytes)."""
    from ..core._media import media_from_path

    if not files:
        return goal
    return [goal, *(media_from_path(f) for f in files)]
