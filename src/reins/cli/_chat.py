"""`reins chat`: an interactive session. One input line stays at the bottom of the terminal,
with history (arrow keys); above it the runs print as `reins run` prints them. A line typed
while no run works is the session's next turn; while one works, it steers that run (or
answers the prompt that waits for an answer). Lines starting with / manage the session."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, cast

import typer
from rich.markup import escape

from ..core._errors import ReinsError, UsageError
from ..core._stop import StopReason
from . import _complete
from ._agent_choices import AgentChoices, _check_mode, _profile
from ._console import WARNINGS, _one_line_errors, err, out
from ._execute import _execute
from ._run_options import RunOptions, takes_run_options
from ._safe import visible
from ._short_ids import short

if TYPE_CHECKING:
    import asyncio

    from prompt_toolkit import PromptSession
    from rich.console import Console

    from ..agent._agent import Agent
    from ..agent._config import Config
    from ..agent._run import AgentRun
    from ..core._cancel import Cancel
    from ..store import IndexedLog

COMMANDS = {
    "/help": "what the commands do",
    "/model [NAME]": "the model; with NAME, the model of the turns from here on",
    "/compact": "compact the session's context now (its log keeps everything)",
    "/stop": "stop the run that works, as Ctrl-C does",
    "/new": "start a new session",
    "/sessions [ID]": "the latest runs; with ID (a unique prefix, or last), continue that session",
    "/exit": "leave, as Ctrl-D does",
}
URGENT = frozenset({"/stop", "/exit", "/quit", "/help"})
"""Commands taken even while a question waits for its answer (not taken as the answer)."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@takes_run_options
def chat(
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            "-s",
            autocompletion=_complete.sessions,
            help="Continue this session (a unique prefix, or last).",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile", "-p", metavar="NAME", help="A [profiles.NAME] table of the config."
        ),
    ] = None,
    *,
    options: RunOptions,
) -> None:
    """Talk with an agent, turn after turn, in one session: type a goal, and while the run
    works, type to steer it. /help lists the commands."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        with _one_line_errors():
            raise UsageError(
                "reins chat needs a terminal; from a script or a pipe, use reins run GOAL "
                "(--session to continue a session)"
            )
    from ..tools._workspace import Workspace

    config = options.config()
    choices = options.choices(config)  # each turn is a run, with the run's options
    with _one_line_errors():
        choices.profile, _ = _profile(config, "", profile)
        Workspace(options.workspace)  # a folder that is not there is said now, not after a goal
        _check_mode(options.mode)

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        import asyncio  # here, as the core: `reins --help` never needs it

        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        session_id = None
        if session is not None:
            from ..store import find_session

            session_id = find_session(await log.runs(), session)
        prompt: PromptSession[str] = PromptSession(history=FileHistory(_history_file(log)))
        talk = Chat(choices, config, log, prompt, session_id)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, talk.quit)
        WARNINGS.show_held()  # from here on a warning shows as it comes
        with patch_stdout(raw=True):
            out.print(
                f"[bold]reins chat[/] [dim]· model {escape(talk.spec)} · "
                f"{escape(str(options.workspace))} · Enter a goal; while it runs, a line steers "
                "it · /help[/]"
            )
            await talk.converse()
        return StopReason.END_TURN

    _execute(options.store, go, workspace=options.workspace)


def _history_file(log: IndexedLog) -> Path:
    """Where the lines typed are kept: beside the log, or for a log with no folder (a
    PostgreSQL store) in the current folder's store folder: they stay on this machine."""
    from ._execute import _store_of

    folder = getattr(log, "directory", None)
    if not isinstance(folder, Path):
        folder = _store_of(None)
        folder.mkdir(parents=True, exist_ok=True)
    return folder / "chat_history"


class WholeLines:
    """Where a turn's events print: a line goes to stdout once it is whole. Above the input
    line, stdout is patched so that the prompt is drawn again after each flush, over whatever
    part of a line was written (a reply streamed word by word would be lost but for its last
    words); the part held shows in the toolbar meanwhile."""

    def __init__(self) -> None:
        self.part = ""

    def write(self, text: str) -> int:
        whole, newline, self.part = (self.part + text).rpartition("\n")
        if newline:
            sys.stdout.write(whole + newline)
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.stdout.isatty()

    def shown_part(self) -> str:
        """The part line held, as it would show (its styles taken out)."""
        from rich.text import Text

        return visible(Text.from_ansi(self.part).plain.strip())

    def end(self) -> None:
        """The turn is over: a part line left (a reply cut short) shows, ended."""
        if self.part:
            self.write("\n")
        self.flush()


class ChatLines:
    """The chat's lines, for a prompt that waits for one (an approval, the offer at a cap)."""

    inline = False

    def __init__(self) -> None:
        self._waiting: asyncio.Future[str] | None = None
        self.before_prompt: Callable[[], None] = lambda: None
        """What `prompting` calls: the turn's renderer, which then leaves the saying to it."""

    @property
    def waiting(self) -> bool:
        return self._waiting is not None and not self._waiting.done()

    def prompting(self) -> None:
        self.before_prompt()

    async def line(self) -> str:
        import asyncio

        waiting: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting = waiting
        return await waiting

    def deliver(self, text: str) -> bool:
        """Give `text` to the prompt that waits, if one does."""
        waiting, self._waiting = self._waiting, None
        if waiting is None or waiting.done():
            return False
        waiting.set_result(text)
        return True


class Chat:
    """The session, its turns, and the one run that may be working."""

    def __init__(
        self,
        choices: AgentChoices,
        config: Config,
        log: IndexedLog,
        prompt: PromptSession[str],
        session_id: str | None,
    ) -> None:
        self.config, self.log, self.prompt = config, log, prompt
        self.lines = ChatLines()
        self.spec = choices.model_spec(config)
        self.agent: Agent = choices.agent(config, log, self.lines)
        self.session_id = session_id
        self.run: AgentRun | None = None
        self.cancel: Cancel | None = None
        self.working: asyncio.Task[None] | None = None
        self.since = 0.0
        self.step = 0
        self.leaving = False
        self.screen = WholeLines()

    async def converse(self) -> None:
        while not self.leaving:
            try:
                text = await self.prompt.prompt_async(
                    "› ", bottom_toolbar=self.toolbar, refresh_interval=0.25
                )
            except KeyboardInterrupt:  # Ctrl-C: stops the run, or leaves
                if self.working is not None:
                    self.stop()
                    continue
                break
            except EOFError:  # Ctrl-D
                break
            await self.take(text)
        await self.quit_and_wait()

    def toolbar(self) -> str:
        if self.lines.waiting:
            return " ? the run waits for your answer (above)"
        if self.working is not None:
            elapsed = time.monotonic() - self.since
            frame = SPINNER[int(elapsed * 8) % len(SPINNER)]
            if part := self.screen.shown_part():  # a line of the reply, as it comes
                return f" {frame} step {self.step} · {elapsed:.1f} s · …{part[-60:]}"
            return (
                f" {frame} working · step {self.step} · {elapsed:.1f} s — a line steers the "
                "run, /stop stops it"
            )
        where = f"session {short(self.session_id)}" if self.session_id else "new session"
        return f" {where} · model {self.spec} — /help"

    async def take(self, text: str) -> None:
        """One line typed: an answer, a command, a steer, or the next turn's goal."""
        command = text.split(maxsplit=1)[0] if text.strip() else ""
        if command not in URGENT and self.lines.deliver(text):
            return
        text = text.strip()
        if not text:
            return
        if text.startswith("/"):
            await self.command(*text.split(maxsplit=1))
        elif self.run is not None and self.working is not None:
            self.run.steer(text)
            out.print(f"[magenta]» steering:[/] {escape(text)} [dim](told before its next step)[/]")
        else:
            import asyncio

            self.working = asyncio.create_task(self.turn(text))

    async def turn(self, goal: str) -> None:
        from ..core._cancel import Cancel
        from ..core._events import ModelRequested, RunStarted
        from ._render import EventRenderer

        show = EventRenderer(self.console)
        self.lines.before_prompt = show.prompting
        self.cancel = Cancel()
        self.since, self.step = time.monotonic(), 0
        try:
            self.run = self.agent.iter(goal, session_id=self.session_id, cancel=self.cancel)
            async for event in self.run:
                if isinstance(event, RunStarted):
                    self.session_id = event.session_id
                elif isinstance(event, ModelRequested):
                    self.step = event.step
                show(event)
        except ReinsError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
        except Exception as exc:  # the chat goes on; the log ends at its last event
            err.print(f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}")
        finally:
            show.close()
            self.screen.end()
            self.run, self.cancel, self.working = None, None, None

    @property
    def console(self) -> Console:
        """A console as `out`, that prints whole lines (`WholeLines`)."""
        return type(out)(
            file=cast(IO[str], self.screen),
            color_system="auto" if out.color_system else None,
            force_terminal=out.is_terminal,
            highlight=False,
            emoji=False,
        )

    async def command(self, name: str, argument: str = "") -> None:
        busy = self.working is not None
        match name:
            case "/help":
                for usage, what in COMMANDS.items():
                    out.print(f"  [bold]{escape(usage)}[/]  {what}")
            case "/stop":
                if busy:
                    self.stop()
                else:
                    out.print("no run is working")
            case "/exit" | "/quit":
                self.leaving = True
            case "/new" | "/model" | "/compact" | "/sessions" if busy and (
                argument or name in ("/new", "/compact")
            ):  # what would change the session under the run
                out.print(f"a run is working: {name} is for between runs; /stop it, or wait")
            case "/new":
                self.session_id = None
                out.print("a new session starts with the next goal")
            case "/model":
                self.use_model(argument)
            case "/compact":
                await self.compact()
            case "/sessions":
                await self.sessions(argument)
            case _:
                out.print(f"no command {escape(name)}; /help lists them")

    def use_model(self, spec: str) -> None:
        if not spec:
            out.print(f"model {escape(self.spec)}")
            return
        from ..agent._resolve import resolve_model

        try:
            model = resolve_model(spec, self.config)
        except ReinsError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            return
        self.agent = self.agent._copy(model=model)
        self.spec = spec
        out.print(f"model {escape(spec)} from the next turn on")

    async def compact(self) -> None:
        from ._render import EventRenderer

        if self.session_id is None:
            out.print("nothing to compact: the session has not started")
            return
        try:
            EventRenderer(out)(await self.agent.compact(self.session_id))
        except ReinsError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")

    async def sessions(self, chosen: str) -> None:
        from ..store import find_session
        from ._render import render_runs

        runs = await self.log.runs()
        if not chosen:
            render_runs(out, sorted(runs, key=lambda r: r.started_at)[-10:])
            return
        try:
            self.session_id = find_session(runs, chosen)
        except UsageError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            return
        out.print(f"session {short(self.session_id)} goes on with the next goal")

    def stop(self) -> None:
        if self.cancel is not None:
            out.print("[yellow]stopping…[/]")
            self.cancel.cancel()

    def quit(self) -> None:
        """A signal: stop the run and leave."""
        self.leaving = True
        self.stop()
        if self.prompt.app.is_running:
            self.prompt.app.exit(exception=EOFError())

    async def quit_and_wait(self) -> None:
        self.stop()
        if self.working is not None:
            await self.working
