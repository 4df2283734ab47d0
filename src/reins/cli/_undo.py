"""`reins diff`, `reins undo`, `reins rewind`: what a run changed in its workspace, and the
way back, from the checkpoints it took (`reins.agent._undo`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from ..core._stop import StopReason
from . import _complete
from ._console import out
from ._execute import _execute
from ._options import StoreOpt

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._events import FilesRestored
    from ..store import IndexedLog

RunArg = Annotated[
    str,
    typer.Argument(
        metavar="RUN",
        autocompletion=_complete.runs,
        help="Run id, a unique prefix of one, or `last`.",
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="Put back files someone else changed since the run stopped, too."),
]


def diff(
    run_id: RunArg,
    step: Annotated[
        int | None,
        typer.Option("--step", metavar="N", min=1, help="Only what this step changed."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """What a run changed in its workspace (or one of its steps), as a unified diff: from the
    checkpoint before its first change to the files as it left them."""
    from ..agent._undo import run_diff
    from ..store import find_run

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        text = await run_diff(log, info.run_id, step=step)
        if not text:
            what = f"step {step} of run" if step is not None else "run"
            out.print(f"[dim]{what} {escape(info.run_id)} changed no files[/]")
        else:
            out.print(coloured(text), soft_wrap=True)
        return StopReason.END_TURN

    _execute(store, go, create=False)


def undo(
    run_id: RunArg,
    to_step: Annotated[
        int,
        typer.Option(
            "--to-step",
            metavar="N",
            min=0,
            help="Keep steps 1 to N's changes, undo the rest (default 0: all of them).",
        ),
    ] = 0,
    force: ForceOpt = False,
    store: StoreOpt = None,
) -> None:
    """Put the files a run changed back as they were before it (or as step N left them),
    recorded in its log. A file changed since by someone else is refused, with the list,
    unless --force."""
    from ..agent._undo import undo_run
    from ..store import find_run

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        restored = await undo_run(log, info.run_id, to_step=to_step, force=force)
        _say_restored(restored)
        return StopReason.END_TURN

    _execute(store, go, create=False)


def rewind(
    run_id: RunArg,
    step: Annotated[
        int,
        typer.Option("--step", metavar="N", min=1, help="Back to the end of this step."),
    ],
    force: ForceOpt = False,
    store: StoreOpt = None,
) -> None:
    """Fork a run after step N (`reins fork --step N`) and put its workspace's files back as
    that step left them; then `reins resume` the fork, or `reins run --session` a new turn."""
    from ..agent._undo import rewind_run
    from ..store import find_run

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        info = find_run(await log.runs(), run_id)
        session_id, forked, restored = await rewind_run(log, info.run_id, step=step, force=force)
        out.print(
            f"forked run {escape(info.run_id)} after step {step}: session "
            f"{escape(session_id)}, run {escape(forked)}"
        )
        if restored is None:
            out.print(f"[dim]no file changed after step {step}: the files are as it left them[/]")
        else:
            _say_restored(restored)
        out.print(
            f"`reins resume {escape(forked)}` goes on from there; "
            f"`reins run --session {escape(session_id)} GOAL` starts a new turn"
        )
        return StopReason.END_TURN

    _execute(store, go, create=False)


def _say_restored(restored: FilesRestored) -> None:
    to = f"as step {restored.to_step} left them" if restored.to_step else "as before the run"
    out.print(f"put back {len(restored.paths)} file(s) {to}:")
    for path in restored.paths:
        mark = " [yellow](changed since: overwritten)[/]" if path in restored.forced else ""
        out.print(f"  {escape(path)}{mark}")


STYLES = (("+++", "bold"), ("---", "bold"), ("+", "green"), ("-", "red"), ("@@", "cyan"))


def coloured(diff_text: str) -> Text:
    """A unified diff with its added lines green, removed red, hunk heads cyan."""
    text = Text()
    for line in diff_text.splitlines(keepends=True):
        style = next((s for start, s in STYLES if line.startswith(start)), None)
        if style is None and line.startswith(("diff ", "index ", "new file", "deleted file")):
            style = "bold"
        text.append(line, style=style)
    return text
