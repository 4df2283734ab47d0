"""Where the commands write (`out`, `err`, the warnings) and how an error is said: one line
on stderr and an exit code, never a traceback."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

import typer
from rich.markup import escape

from ..core._errors import LogCorrupted, ReinsError, UsageError
from ._safe import SafeConsole, visible
from ._short_ids import short


class _Console(SafeConsole):
    """A reader that goes away (`reins run | head`) is a BrokenPipeError, as for a plain
    write, which the command handles (a run is cancelled and recorded, quietly); rich's own
    answer is SystemExit(1), which would end the process mid-run, the run left unfinished."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # what is left to print goes nowhere
        raise BrokenPipeError


# No emoji codes, no highlighting: what a tool or model wrote is shown as it is (our own markup
# is the only markup, and every text from outside is escaped), its control characters visible.
out = _Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 120)
err = SafeConsole(stderr=True, highlight=False, emoji=False, soft_wrap=True)  # one line an error


def _silence_stdout() -> None:
    """Nobody reads stdout any more: what is left to write (and Python's flush at exit) goes
    nowhere, instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class Warnings(logging.Handler):
    """The warnings on stderr. One about a damaged journal is held while `holding` (as the
    command opens the log and reads what it reads): a command that then fails on that damage
    says it once, as its error, naming the file, the line and `reins doctor`."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = False
        self.held: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if self.holding and any(isinstance(arg, LogCorrupted) for arg in args):
            self.held.append(record)
            return
        try:
            sys.stderr.write(visible(short.within(self.format(record)), lines=True) + "\n")
        except Exception:
            self.handleError(record)

    def show_held(self, said: ReinsError | None = None) -> None:
        """Stop holding: show what was held, but for what the error `said` says again."""
        self.holding = False
        held, self.held = self.held, []
        for record in held:
            if said is None or record.getMessage() != str(said):
                self.handle(record)


WARNINGS = Warnings()


@contextlib.contextmanager
def _one_line_errors() -> Iterator[None]:
    """Every error of ours becomes one line on stderr and its exit code; nothing else ever
    shows a traceback."""
    import asyncio  # for its CancelledError

    try:
        yield
    except UsageError as exc:
        WARNINGS.show_held(exc)
        err.print(f"[red]error:[/] {escape(short.within(str(exc)))}")
        raise typer.Exit(2) from None
    except ReinsError as exc:
        WARNINGS.show_held(exc)
        err.print(f"[red]error:[/] {escape(short.within(str(exc)))}")
        raise typer.Exit(1) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print("[yellow]interrupted[/]; the log ends at the last recorded event")
        raise typer.Exit(130) from None
    except BrokenPipeError:  # the reader went away (`reins replay --json | head`)
        _silence_stdout()
        raise typer.Exit(141) from None  # as a tool stopped by SIGPIPE exits, quietly
    except Exception as exc:
        if os.environ.get("REINS_DEBUG"):
            raise
        err.print(
            f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
            "(set REINS_DEBUG=1 for the traceback, and please report it)"
        )
        raise typer.Exit(1) from None
    finally:
        WARNINGS.show_held()
