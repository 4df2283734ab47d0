"""Rendering events and transcripts for a person at a terminal."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, assert_never, cast

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from ..core._catalog import lookup
from ..core._events import (
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    Checkpoint,
    ContextCompacted,
    Event,
    FilesRestored,
    ForkedFrom,
    MemoryUpdated,
    ModelRequested,
    ModelResponded,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    Reflected,
    ResponseRejected,
    RunConfig,
    RunFinished,
    RunResumed,
    RunStarted,
    Steered,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..core._state import STEERING
from ..core._stop import StopReason
from ..store import RunInfo
from ._safe import shown, visible
from ._short_ids import short

if TYPE_CHECKING:
    from ..store._doctor import Finding, RunAccount

MAX_OBSERVATION_LINES = 12
OFFERED = "; offered to continue: "
"""In the loop's notice at a cap when someone is asked to go on (`RunLoop._at_cap`)."""


class EventRenderer:
    """Prints a run's events as they come: steps, thoughts, tool calls, observations, answer."""

    def __init__(self, console: Console, *, spinner: bool = False) -> None:
        self.console = console
        self._spinner = spinner and console.is_terminal
        """Show a spinner with the time elapsed while the model or a tool works."""
        self._live: Live | None = None
        self._running: dict[str, str] = {}
        """The tool calls under way, by call id: what the spinner names."""
        self._calls: dict[str, ToolCall] = {}
        """The last response's calls, by id: each is shown once, when it starts or, one that
        never runs (answered from the cache, refused, denied), before what is said of it."""
        self._shown: set[str] = set()
        """The ids of those shown."""
        self._steers: list[str] = []
        """Lines typed that steer the run, not told to the model yet: the spinner shows them
        (the terminal did not echo them), until their `steered` line."""
        self._streamed = False  # text of the current step already printed from deltas
        self._open_line = False
        self._tokens = [0, 0]
        self._cost = 0.0
        self._children: dict[tuple[str, ...], EventRenderer] = {}
        self._held = ""
        """Streamed text not shown yet: it may be a JSON action, shown as its call instead."""
        self._said = ""
        """The step's reply text as shown (a final answer in it is not shown again)."""
        self._asked_at: datetime | None = None
        self._window: int | None = None
        self._held_ask: str | None = None
        self._questions: set[str] = set()
        """The calls of questions asked and not answered yet."""
        self._approvals: set[str] = set()
        """The calls that ask for approval and have no verdict yet."""
        """An approval request's line, or the notice of the offer to go on at a cap, held:
        the prompt that asks it says it (`prompting` drops it), or else the next event shows
        it (a run that pauses for the answer, a replay)."""

    def __call__(self, event: StreamEvent) -> None:
        self._show_held_ask()
        if isinstance(event, SubagentEvent):
            self._idle()  # a child's console writes past the spinner's
            self._end_line()
            self._child(event.path)(event.event)
            return
        for child in self._children.values():
            child._end_line()
        self._render(event)

    def _child(self, path: tuple[str, ...]) -> EventRenderer:
        """The renderer of a subagent's events: indented under the call that started it."""
        child = self._children.get(path)
        if child is None:
            out = self.console
            indent = "  │ " * len(path)
            console = type(out)(  # as the parent's (a reader gone away: see cli._console)
                file=cast(IO[str], _Indented(out.file, indent)),
                width=max(40, out.width - len(indent)),
                color_system="auto" if out.color_system else None,
                force_terminal=out.is_terminal,
                highlight=False,
                emoji=False,
            )
            child = self._children[path] = EventRenderer(console)
        return child

    def _render(self, event: Event) -> None:
        out = self.console
        match event:
            case RunStarted():
                config = event.config
                self._window = (config.context.window if config.context else None) or (
                    lookup(config.model).context_window if lookup(config.model).known else None
                )
                out.print(
                    f"[bold]run[/] {short(event.run_id)}  [dim]session {short(event.session_id)} · "
                    f"model {escape(config.model)} · workspace {escape(config.workspace)}[/]"
                )
                out.print(f"[bold]goal[/] {escape(event.goal)}{_given(event.messages[-1])}")
                if config.profile is not None:
                    out.print(f"[dim]{escape(_profile_line(config))}[/]", soft_wrap=True)
                if config.guards is not None and (changes := config.guards.changes()):
                    out.print(f"[dim]guards: {', '.join(changes)}[/]")
            case RunResumed():
                more = ""
                if event.guards is not None:  # the guards changed
                    more = f" · guards: {', '.join(event.guards.changes()) or 'the defaults'}"
                run = short(event.run_id)
                out.print(f"[bold]resumed[/] {run}  [dim]step cap {event.max_steps}{more}[/]")
            case BudgetExtended():
                out.print(f"[yellow]continued[/] {escape(event.choice)} ({escape(event.source)})")
            case ForkedFrom():
                out.print(
                    f"[cyan]⑂ forked from run {short(event.from_run_id)} at seq "
                    f"{event.from_seq}[/] [dim](session {short(event.from_session_id)})[/]"
                )
            case Checkpoint():
                pass  # a way back, said by `reins diff` and `reins undo` when asked
            case FilesRestored():
                to = f"step {event.to_step}" if event.to_step else "the run's start"
                out.print(f"[yellow]↶ {len(event.paths)} file(s) put back as at {to}[/]")
            case MemoryUpdated():
                for change in event.changes:
                    what = {"add": "remembered", "update": "updated", "invalidate": "forgot"}
                    out.print(
                        f"[magenta]◆ {what[change.op]}[/] [dim]({change.scope})[/] "
                        f"{escape(visible(change.text))}",
                        soft_wrap=True,
                    )
                if event.left_out:
                    out.print(f"[dim]◆ not kept: {escape(visible(', '.join(event.left_out)))}[/]")
            case ModelRequested():
                self._streamed, self._held, self._said = False, "", ""
                self._asked_at = event.ts
                self._idle()  # the wait before it (the start, a tool) is over
                out.rule(f"[dim]step {event.step}[/]", style="dim", align="left")
                self._busy("thinking")
            case ThinkingDelta():
                self._idle()
                self._write(shown(event.text, "dim italic"))
            case TextDelta():
                self._idle()
                text = event.text
                if not self._streamed:
                    text = self._held + text
                    if text.lstrip()[:1] in ("{", ""):  # maybe a JSON action: held, and
                        self._held = text  # shown as its call if it is one
                        return
                    self._held = ""
                self._streamed = True
                self._said += text
                self._write(shown(text))  # as sent: a chunk is not markup to escape
            case ModelResponded():
                self._idle()
                self._end_line()
                self._tokens[0] += event.usage.input_tokens
                self._tokens[1] += event.usage.output_tokens
                self._cost += event.cost or 0.0
                message = event.message
                if message.thinking and not self._streamed:
                    out.print(f"[dim italic]{escape(message.thinking)}[/]")
                if self._held and not message.tool_calls:
                    out.print(shown(self._held))  # it was not an action after all
                    self._said = self._held
                elif message.text and not self._streamed:
                    out.print(shown(message.text, "dim" if message.tool_calls else ""))
                    self._said = message.text
                self._step_line(event)
                self._calls = {call.id: call for call in message.tool_calls}
                self._shown = set()
            case ToolCallStarted():
                self._show_call(event.call.id, event.call)
                self._running[event.call.id] = event.call.name
                self._busy("running " + ", ".join(self._running.values()))
            case ToolCallFinished():
                result = event.result
                self._show_call(result.call_id)
                if self._running.pop(result.call_id, None) is not None:
                    if self._running:
                        self._busy("running " + ", ".join(self._running.values()))
                    else:
                        self._idle()
                style = "red" if result.is_error else "green"
                output = _clip(result.content.rstrip()).replace("\n", "\n  ")  # under its call
                out.print(f"[{style}]← {escape(result.name)}[/] {escape(output)}")
                if event.diff and not result.is_error:  # what a write or an edit changed
                    out.print(_diff(event.diff), highlight=False)
                if event.usage is not None:  # a subagent's spending is the run's
                    self._tokens[0] += event.usage.input_tokens
                    self._tokens[1] += event.usage.output_tokens
                    self._cost += event.cost or 0.0
            case ApprovalRequested():
                self._idle()  # a prompt may follow
                self._show_call(event.call.id, event.call)
                self._approvals.add(event.call.id)
                rule = escape(event.rule)
                self._held_ask = (
                    f"[yellow]? {escape(event.call.name)} asks for approval[/] [dim]({rule})[/]"
                )
            case PermissionDecided():
                self._show_call(event.call_id)
                self._approvals.discard(event.call_id)
                verdict = "[green]✓ allowed[/]" if event.allowed else "[red]✗ denied[/]"
                scope = f", always for {escape(event.grant)!r}" if event.always else ""
                out.print(
                    f"{verdict} {escape(event.tool)} "
                    f"[dim](by {event.by}{scope}: {escape(event.rule)})[/]"
                )
            case ResponseRejected(source=source) if source == STEERING:
                out.print("[magenta]↺ calls not run: a steer came after they were chosen[/]")
            case ResponseRejected():
                out.print(
                    f"[yellow]✗ response rejected by {escape(event.source)}:[/] "
                    + escape(event.observation)
                )
            case AnswerRejected():
                out.print(
                    f"[yellow]✗ answer rejected by {escape(event.source)}:[/] "
                    + escape(event.observation)
                )
            case Reflected():
                self._tokens[0] += event.usage.input_tokens
                self._tokens[1] += event.usage.output_tokens
                self._cost += event.cost or 0.0
                style = _ASSESSMENT_STYLE[event.assessment]
                out.print(
                    f"[{style}]◆ reflection on step {event.step}: {event.assessment}[/], "
                    f"next: {event.next_action.replace('_', ' ')} — {escape(event.reasoning)}"
                )
                if event.revised_approach:
                    out.print(f"  [dim]revised approach:[/] {escape(event.revised_approach)}")
            case Steered():
                if event.text in self._steers:
                    self._steers.remove(event.text)
                out.print(f"[magenta]» steered:[/] {escape(event.text)}")
            case ContextCompacted():
                self._end_line()
                self._tokens[0] += event.usage.input_tokens
                self._tokens[1] += event.usage.output_tokens
                self._cost += event.cost or 0.0
                how = "summarized" if event.method == "summary" else "digested (no model)"
                out.print(
                    f"[cyan]⇣ context compacted[/] [dim]({how}): {event.messages_before} → "
                    f"{event.messages_after} messages, about {event.tokens_before} → "
                    f"{event.tokens_after} tokens[/]"
                )
                if event.detail:
                    out.print(f"  [dim]{escape(event.detail)}[/]")
            case Notice() if OFFERED in event.text:  # its prompt says the cap
                self._held_ask = _notice(event)
            case Notice():
                self._end_line()  # it may come while a reply streams
                out.print(_notice(event))
            case QuestionAsked():
                self._idle()
                self._end_line()
                self._shown.add(event.call_id)  # the question is shown, not its call
                self._questions.add(event.call_id)
                offered = f" ({' / '.join(event.choices)})" if event.choices else ""
                out.print(
                    f"[magenta]? asks:[/] {escape(event.question)}{escape(offered)} "
                    f"[dim](default: {escape(event.default)})[/]"
                )
            case QuestionAnswered():
                self._questions.discard(event.call_id)
                told = escape(event.answer) if event.answer is not None else f"[dim]({event.by})[/]"
                out.print(f"[magenta]» answer:[/] {told}")
            case ToolsChanged():
                self._end_line()
                signed = (
                    ("+", event.added),
                    ("-", event.removed),
                    ("~", event.changed),
                    ("loaded", event.loaded),
                )
                parts = [f"{sign} {', '.join(names)}" for sign, names in signed if names]
                out.print(f"[cyan]⚙ tools changed:[/] [dim]{escape('; '.join(parts))}[/]")
            case RunFinished():
                self._idle()
                self._running.clear()
                self._steers.clear()  # one not told yet starts the next turn
                self._end_line()
                answer = event.final_answer
                if (
                    event.stop_reason is StopReason.END_TURN
                    and answer
                    and answer.strip() in self._said
                ):
                    out.print("[green]✓ final answer[/] [dim](above)[/]")  # shown once
                else:
                    render_finish(out, event.stop_reason, answer, event.detail)
                if event.stop_reason is StopReason.WAITING:
                    out.print(self._how_to_answer(event))
                spent = f"tokens {self._tokens[0]} in, {self._tokens[1]} out"
                out.print(f"[dim]{spent}" + (f", ${self._cost:.4f}" if self._cost else "") + "[/]")
            case _:
                assert_never(event)

    def _how_to_answer(self, event: RunFinished) -> str:
        """What a run that waits needs, and the command that gives it: an answer to its
        question (`--answer`), a verdict on its calls (`--approve`, `--deny`), or both."""
        questions, approvals = bool(self._questions), bool(self._approvals)
        if not (questions or approvals):  # asked before this process (a resumed run)
            questions = event.detail.startswith("awaiting an answer")
            approvals = not questions
        run = short(event.run_id)
        ways = []
        if questions:
            ways.append(f"`reins resume {run} --answer TEXT`")
        if approvals:
            ways.append(f"`reins resume {run} --approve CALL` (or `all`), or `--deny CALL`")
        return f"answer with {' and '.join(ways)}; in a terminal, `reins resume {run}` asks"

    def _step_line(self, event: ModelResponded) -> None:
        """After each reply: its time, tokens and cost, and how full the context is."""
        usage = event.usage
        parts = []
        if self._asked_at is not None:
            parts.append(f"{(event.ts - self._asked_at).total_seconds():.1f} s")
        parts.append(f"{usage.input_tokens} in, {usage.output_tokens} out")
        if event.cost:
            parts.append(f"${event.cost:.4f}")
        if self._window and usage.input_tokens:
            parts.append(f"context {min(100, round(100 * usage.input_tokens / self._window))}%")
        self.console.print(f"[dim]  {' · '.join(parts)}[/]")

    def starting(self) -> None:
        """Spin until the first model call: loading an embedded model takes seconds."""
        self._busy("starting")

    def close(self) -> None:
        """Stop the spinner, if it spins: the run's events ended."""
        self._show_held_ask()
        for child in self._children.values():
            child._show_held_ask()
        self._idle()

    def _show_call(self, call_id: str, call: ToolCall | None = None) -> None:
        """The call's line, unless it was shown."""
        call = call or self._calls.get(call_id)
        if call is None or call_id in self._shown:
            return
        self._shown.add(call_id)
        self.console.print(f"[cyan]→ {escape(call.name)}[/]({escape(_args(call.arguments))})")

    def prompting(self) -> None:
        """A prompt is about to ask on this terminal: the spinner stops, and the approval
        request or cap offer held is not shown (the prompt says it), nor a subagent's."""
        self._held_ask = None
        for child in self._children.values():
            child.prompting()
        self._idle()

    def steering(self, text: str) -> None:
        """A line typed steers the run: the spinner shows it until the run tells it."""
        self._steers.append(text)

    def interrupted(self) -> bool:
        """A signal's line is about to be printed: what this screen draws stops first (the
        spinner is erased, a streamed line ended), so that line starts one of its own. False
        if this screen drew nothing there: what is on the line (a prompt) is not its own."""
        drawn = self._live is not None or self._open_line
        self._idle()
        self._end_line()
        return drawn

    def _show_held_ask(self) -> None:
        if self._held_ask is not None:
            self.console.print(self._held_ask)
            self._held_ask = None

    def _busy(self, label: str) -> None:
        if not self._spinner:
            return
        if self._live is not None:
            self._live.update(_Working(label, self._steers, self._live.renderable))
            return
        self._live = Live(
            _Working(label, self._steers),
            console=self.console,
            transient=True,
            refresh_per_second=8,
        )
        self._live.start()

    def _idle(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _write(self, text: Text) -> None:
        self.console.print(text, end="")
        self._open_line = True

    def _end_line(self) -> None:
        if self._open_line:
            self.console.print()
            self._open_line = False


class _Working:
    """The spinner's line: what is being waited for, and for how long (from when the wait
    began, through a change of what is waited for), and the steers typed meanwhile."""

    def __init__(self, label: str, steers: list[str], before: object = None) -> None:
        self.label = label
        self.steers = steers  # the renderer's: one typed shows at the next refresh
        self.since: float = before.since if isinstance(before, _Working) else time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> Spinner:
        elapsed = time.monotonic() - self.since
        text = shown(f"{self.label} · {elapsed:.1f} s", "dim")
        for steer in self.steers:
            text.append(f" · » {visible(steer)} (queued)", style="magenta")
        self.spinner.update(text=text)
        return self.spinner


class _Indented:
    """A text file that starts each line with `prefix` (a subagent's output, indented)."""

    def __init__(self, file: IO[str], prefix: str) -> None:
        self.file, self.prefix = file, prefix
        self._at_start = True

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self._at_start:
                self.file.write(self.prefix)
            self.file.write(piece)
            self._at_start = piece.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.file.flush()

    def isatty(self) -> bool:
        return self.file.isatty()


_ASSESSMENT_STYLE = {
    "success": "green",
    "failure": "red",
    "partial": "yellow",
    "unknown": "dim",
}


def _profile_line(config: RunConfig) -> str:
    """The profile a run was made from and what it sets that a person would miss: its step
    cap, its tools, its mode. One inferred from the goal says so, and how to choose."""
    how = " (inferred from the goal; --profile NAME chooses one)" if config.profile_inferred else ""
    parts = [f"profile {config.profile}{how}", f"at most {config.max_steps} steps"]
    parts.append(f"tools: {', '.join(config.tools) or 'none'}")
    if config.mode:
        parts.append(f"mode {config.mode}")
    return " · ".join(parts)


def _given(message: Message) -> str:
    """The images and documents a user message holds, after its text: ` [+ image NAME (...)]`
    (a tool's result says what it returned in its own text)."""
    media = message.media if isinstance(message, UserMessage) else ()
    return "".join(f" [dim]\\[+ {escape(m.describe())}][/]" for m in media)


def _notice(event: Notice) -> str:
    text = escape(event.text.rstrip()).replace("\n", "\n  ")  # under its mark
    return f"[yellow]! {text}[/] [dim]({escape(event.source)})[/]"


def render_finish(out: Console, reason: StopReason, answer: str | None, detail: str) -> None:
    if reason is StopReason.END_TURN:
        out.print(Panel(escape(answer or ""), title="final answer", border_style="green"))
    else:
        if answer is not None:  # summarized at a cap
            out.print(Panel(escape(answer), title="partial answer", border_style="yellow"))
        style = "red" if reason is StopReason.ERROR else "yellow"
        out.print(
            f"[{style}]stopped: {reason.value}[/]" + (f" — {escape(detail)}" if detail else "")
        )


def render_transcript(out: Console, messages: list[Message]) -> None:
    for message in messages:
        match message:
            case SystemMessage():
                out.print(f"[dim]system: {escape(_clip(message.content, 3))}[/]")
            case UserMessage():
                out.print(f"[bold]user:[/] {escape(message.content)}{_given(message)}")
            case AssistantMessage():
                if message.thinking:
                    out.print(f"[dim italic]{escape(message.thinking)}[/]")
                if message.text:
                    out.print(f"[bold]assistant:[/] {escape(message.text)}")
                for call in message.tool_calls:
                    out.print(f"[cyan]→ {escape(call.name)}[/]({escape(_args(call.arguments))})")
            case ToolResultMessage():
                style = "red" if message.is_error else "green"
                out.print(f"[{style}]← {escape(message.name)}[/] {escape(_clip(message.content))}")
            case _:
                assert_never(message)


def render_runs(out: Console, runs: list[RunInfo], *, running: Collection[str] = ()) -> None:
    """One line a run (`running`: those going on now, in another process). Ids are shown as
    their shortest unique prefix and never cut: in a narrow terminal the goal, the model and
    the start go first, and narrower still each run takes three lines."""
    if not runs:
        out.print("no runs yet; start one with `reins run GOAL`")
        return
    short.know(runs)  # with the log's others, if a command opened one
    rows = [
        {
            "session": short(run.session_id),
            "run": short(run.run_id),
            "stop": _stop(run, running),
            "started (UTC)": f"{run.started_at:%m-%d %H:%M:%S}",
            "model": run.model,
            "goal": run.goal.splitlines()[0] if run.goal else "",
        }
        for run in runs
    ]
    natural = {name: max(len(name), *(len(row[name]) for row in rows)) for name in rows[0]}
    natural["model"] = min(natural["model"], 28)
    for dropped in ((), ("goal",), ("goal", "model"), ("goal", "model", "started (UTC)")):
        names = [name for name in rows[0] if name not in dropped]
        widths = {name: natural[name] for name in names}
        shrinking = [name for name in ("model", "goal") if name in names]
        room = (
            out.width
            - sum(width for name, width in widths.items() if name not in shrinking)
            - 2 * (len(names) - 1)
        )
        if room >= 12 * len(shrinking):  # each keeps 12 columns, cut with an ellipsis
            if "model" in widths:
                widths["model"] = min(natural["model"], room - 12 * ("goal" in widths))
            if "goal" in widths:
                widths["goal"] = min(natural["goal"], room - widths.get("model", 0))
            break
    else:
        for row in rows:
            out.print(f"session {row['session']}", soft_wrap=True)
            out.print(f"  run {row['run']}", soft_wrap=True)
            out.print(f"  {row['stop']}", soft_wrap=True)
        return
    table = Table(box=None, pad_edge=False)
    for name in names:
        table.add_column(name, overflow="ellipsis", no_wrap=True, width=widths[name])
    for row in rows:
        cells = [escape(row[name]) for name in names]
        if "stop" in names and row["stop"] in ("unfinished", "running"):
            cells[names.index("stop")] = f"[yellow]{row['stop']}[/]"
        table.add_row(*cells)
    out.print(table)


def _stop(run: RunInfo, running: Collection[str]) -> str:
    if run.stop_reason is not None:
        return run.stop_reason.value
    return "running" if run.run_id in running else "unfinished"  # else its process died


def render_findings(out: Console, findings: list[Finding], *, repairing: bool) -> None:
    """What `reins doctor` found, and for each damaged session what was kept and what moved
    (`repairing`: what was, else what would be)."""
    if not findings:
        out.print("the log is sound: every journal reads to its end")
        return
    out = type(out)(file=out.file, highlight=False, emoji=False, soft_wrap=True)  # no wrapping
    for f in findings:
        out.print(f"[bold]{escape(str(f.path))}[/]: {escape(f.problem)}")
        if f.busy:
            out.print("  being written by another process: left alone; run doctor when it ends")
            continue
        if f.unverified:
            out.print(
                "  left as it is: it is read (show, replay), never continued; "
                "`reins sessions rm` removes it"
            )
            continue
        kept = f"lines 1-{f.kept_lines}" if f.kept_lines else "nothing"
        verb = "kept" if f.repaired else "would keep"
        out.print(f"  {verb}: {kept} ({f.kept_bytes} bytes)")
        if f.moved_bytes:
            verb = "moved aside" if f.repaired else "would move aside"
            last = f.kept_lines + f.moved_lines
            where = f" to {escape(str(f.aside))}" if f.aside else ""
            out.print(f"  {verb}: lines {f.kept_lines + 1}-{last} ({f.moved_bytes} bytes){where}")
        for run in f.runs:
            out.print("  " + escape(_account(run)))
        if not f.repaired and repairing:  # the journal could not be opened (said above)
            out.print("  [yellow]not repaired[/]: nothing of it was changed")
        elif not f.repaired:
            out.print("  [yellow]not repaired[/]: run `reins doctor` to set the damage aside")


def _account(run: RunAccount) -> str:
    parts = [f"run {short(run.run_id)}:"]
    if run.kept:
        parts.append(f"events 1-{run.kept} kept,")
        if run.stop_reason is not None:
            parts.append(f"finished ({run.stop_reason})")
        else:
            parts.append(f"unfinished (`reins resume {short(run.run_id)}` continues it)")
        if run.moved:
            parts.append(f"; {run.moved} later events moved aside")
    else:
        parts.append(f"{run.moved} events, all moved aside (they are in the file above)")
    return " ".join(parts).replace(" ;", ";")


def _args(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 200 else text[:197] + "..."


def _clip(text: str, lines: int = MAX_OBSERVATION_LINES) -> str:
    parts = text.splitlines() or [""]
    if len(parts) <= lines:
        return text if len(parts) == 1 else "\n".join(parts)
    return "\n".join(parts[:lines]) + f"\n… ({len(parts) - lines} more lines)"


_MORE = re.compile(r"… (\d+) more lines?")
"""The last line of a diff the file tool cut (`reins.tools._diff`)."""


def _diff(diff: str, lines: int = MAX_OBSERVATION_LINES) -> str:
    """A file tool's diff under its call, coloured, cut to `lines` (what is not shown counted
    with what the tool cut already)."""
    parts = diff.split("\n")
    more = 0
    if parts and (cut := _MORE.fullmatch(parts[-1])):
        more = int(cut[1])
        parts.pop()
    more += max(len(parts) - lines, 0)
    shown = []
    for n, line in enumerate(parts[:lines]):
        head = "---" if n == 0 else "+++" if n == 1 else ""  # not a line that starts so
        style = "dim" if head and line.startswith(head) else _DIFF_STYLES.get(line[:1], "")
        shown.append(f"  [{style}]{escape(line)}[/]" if style else f"  {escape(line)}")
    if more:
        shown.append(f"  [dim]… ({more} more line{'s' if more > 1 else ''})[/]")
    return "\n".join(shown)


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan", "\\": "dim"}
