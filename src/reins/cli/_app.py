"""The `reins` command line: the typer app, its global options, and its commands, each in its
own module, registered here in the order `reins --help` lists them."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from ._acp import acp
from ._chat import chat
from ._compact import compact
from ._completion import SHELLS, install_completion, shell_named, shells, show_completion
from ._console import _silence_stdout, out
from ._doctor import doctor
from ._eval import eval_app
from ._fork import fork
from ._help import plain_help
from ._http import serve
from ._mcp import mcp_app
from ._memory import memory_app
from ._resume import resume
from ._run import run
from ._sessions import sessions_app
from ._show import replay, show
from ._store import store_app
from ._undo import diff, rewind, undo

app = typer.Typer(
    add_completion=False,  # ours name the shell (typer's took the one running reins, always)
    no_args_is_help=True,
    rich_markup_mode="markdown",  # a docstring's wrapped lines are one paragraph
    pretty_exceptions_enable=False,
    help="reins: run tool-calling agents with a log you can resume and replay.",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out.print(f"reins {version('reins')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Debug logging on stderr (reins and its SDKs)."),
    ] = False,
    install: Annotated[
        str | None,
        typer.Option(
            "--install-completion",
            metavar="SHELL",
            callback=install_completion,
            is_eager=True,
            expose_value=False,
            autocompletion=shells,
            help=f"Install Tab completion for SHELL ({', '.join(SHELLS)}; alone: the shell "
            "running reins).",
        ),
    ] = None,
    show: Annotated[
        str | None,
        typer.Option(
            "--show-completion",
            metavar="SHELL",
            callback=show_completion,
            is_eager=True,
            expose_value=False,
            autocompletion=shells,
            help="Print SHELL's completion script, to install it yourself (alone: the shell "
            "running reins).",
        ),
    ] = None,
) -> None:
    """reins: run tool-calling agents with a log you can resume and replay."""
    if verbose:
        logging.basicConfig(
            format="%(levelname)s %(name)s: %(message)s", level=logging.DEBUG, force=True
        )


# The commands, in the order `reins --help` lists them; the groups (sessions, mcp...) come after.
for command in (
    run,
    resume,
    show,
    diff,
    undo,
    fork,
    rewind,
    compact,
    replay,
    doctor,
    chat,
    serve,
    acp,
):
    app.command()(command)
app.add_typer(sessions_app, name="sessions")
app.add_typer(mcp_app, name="mcp")
app.add_typer(eval_app, name="eval")
app.add_typer(memory_app, name="memory")
app.add_typer(store_app, name="store")


def main() -> None:
    # A character the terminal cannot take (a lone surrogate from a file name, say) is shown
    # escaped, never a crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from ..core._threads import Watchdog

    # This process is ours: a tool that holds the interpreter past its timeout ends it, and
    # one still running when the command is done does not keep it alive.
    with Watchdog():
        try:
            command = typer.main.get_command(app)
            plain_help(command)
            command.main(args=shell_named(sys.argv[1:]), prog_name="reins")
        except BrokenPipeError:  # the reader went away from what no command handles (--version)
            _silence_stdout()
            sys.exit(141)  # as a tool stopped by SIGPIPE exits, quietly
