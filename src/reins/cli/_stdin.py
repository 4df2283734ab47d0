"""The one reader of stdin while a run runs: a line answers the prompt that waits for one (an
approval, the offer at a cap); any other line steers the run: one typed in a terminal, or one
piped with `--steer-stdin`."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio


class LineSource(Protocol):
    """Where a prompt's answer comes from: the next line the person types."""

    inline: bool
    """The answer is typed on the prompt's own line (a plain terminal), not on an input line
    of its own (the chat's), where a question left open on its line would be drawn over."""

    async def line(self) -> str:
        """The next line; "" at the end of input (nobody is there)."""
        ...

    def prompting(self) -> None:
        """A prompt is about to show: what draws over the terminal (a spinner) stops."""
        ...


class TerminalLines:
    """Reads stdin in a daemon thread, so the event loop (and Ctrl-C) go on meanwhile and a run
    that ends while a prompt waits does not wait for the person."""

    inline = True

    def __init__(self, *, piped_steers: bool = False) -> None:
        self._piped_steers = piped_steers
        """A stdin that is not a terminal steers too (`--steer-stdin`): else its lines (a file
        piped in for another reason) are dropped, with a notice."""
        self._dropped = False
        self._steer: Callable[[str], None] | None = None
        self.before_prompt: Callable[[], None] = lambda: None
        """What `prompting` calls: the run's screen sets it to stop its spinner."""
        self.on_steer: Callable[[str], None] = lambda text: None
        """What a line that steers calls too: the run's screen sets it to show the line,
        which the terminal did not echo (`hide_typing`)."""
        self._echo: tuple[int, list[Any], list[Any]] | None = None
        """While typing is hidden: stdin's terminal, its settings as they were and without echo."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: asyncio.Future[str] | None = None
        self._ended = False

    def start(self, steer: Callable[[str], None] | None = None) -> None:
        """Read from here on (called on the event loop); lines no prompt waits for go to
        `steer` (none: they are dropped)."""
        self._steer = steer
        if self._loop is None:
            import asyncio  # here: `reins --help` never needs it

            self._loop = asyncio.get_running_loop()
            threading.Thread(target=self._read, name="reins-stdin", daemon=True).start()

    def prompting(self) -> None:
        self.before_prompt()

    def hide_typing(self) -> None:
        """The terminal stops echoing what is typed while a run works: the echo would land on
        the spinner's line and be drawn over, and its Enter (or a Ctrl-C's ^C) would leave
        that line behind. What is typed is read all the same, edited as usual; a prompt's
        answer is echoed (`line`). `show_typing` puts the echo back."""
        if not sys.stdin.isatty():
            return
        import termios  # here: POSIX only, as the signal handlers that cancel a run are

        fd = sys.stdin.fileno()
        try:
            echoed = termios.tcgetattr(fd)
        except termios.error:  # a tty that has no settings to change: it echoes as it does
            return
        quiet = [*echoed[:3], echoed[3] & ~termios.ECHO, *echoed[4:]]
        self._echo = (fd, echoed, quiet)
        self._set_echo(on=False)

    def show_typing(self) -> None:
        self._set_echo(on=True)
        self._echo = None

    def _set_echo(self, *, on: bool) -> None:
        if self._echo is None:
            return
        import termios

        fd, echoed, quiet = self._echo
        with contextlib.suppress(termios.error):  # the terminal went away (a hangup)
            termios.tcsetattr(fd, termios.TCSANOW, echoed if on else quiet)

    async def line(self) -> str:
        """The next line typed, for a prompt; "" at the end of input (nobody is there)."""
        self.start(self._steer)
        if self._ended:
            return ""
        import asyncio

        waiting: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting = waiting
        self._set_echo(on=True)  # the answer is typed on the prompt's line, and seen there
        try:
            return await waiting
        finally:
            self._set_echo(on=False)

    def _read(self) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            try:
                line = sys.stdin.readline()
            except (OSError, ValueError):
                line = ""
            try:
                loop.call_soon_threadsafe(self._deliver, line)
            except RuntimeError:  # the event loop is closed: the command is over
                return
            if not line:
                return

    def _deliver(self, line: str) -> None:
        waiting, self._waiting = self._waiting, None
        if not line:
            self._ended = True
        if waiting is not None and not waiting.done():
            waiting.set_result(line)
        elif line.strip() and self._steer is not None:
            if not (self._piped_steers or sys.stdin.isatty()):
                self._drop()
                return
            self._steer(line.strip())
            self.on_steer(line.strip())

    def _drop(self) -> None:
        if not self._dropped:
            self._dropped = True
            from ._console import err

            err.print(
                "[yellow]stdin is not a terminal: its lines do not steer the run[/] (pass "
                "--steer-stdin for that; before 0.2 they did)"
            )
