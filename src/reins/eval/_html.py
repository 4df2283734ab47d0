"""`reins eval --html FILE`: one self-contained page (no script, nothing fetched) with the
eval's totals, a row per task, charts drawn by matplotlib as inline SVG (pass rate by task and
by tag; tokens, seconds and steps per attempt), and each attempt's transcript, folded, as the
log has it. Everything from a run is shown as text (escaped), never as markup."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core._errors import RunNotFound, UsageError
from ..core._log import EventLog
from ..core._messages import AssistantMessage, Message, ToolResultMessage
from ..core._state import RunState
from ._results import EvalResult

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { padding: .25rem .6rem; }
th { text-align: left; border-bottom: 1px solid #999; } tr:nth-child(even) { background: #f4f4f4; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .pass { color: #17702a; }
.fail { color: #b3261e; } .charts { display: flex; flex-wrap: wrap; gap: 1rem; }
.charts figure { margin: 0; } pre { white-space: pre-wrap; background: #f7f7f7; padding: .5rem; }
details { margin: .3rem 0; } summary { cursor: pointer; }
"""


def html_report(result: EvalResult, transcripts: Mapping[str, Sequence[Message]]) -> str:
    """The page; `transcripts` by run id (an attempt whose run is gone shows none)."""
    attempts = result.attempts
    rows = "".join(_task_row(result, t.id) for t in result.tasks)
    passed = sum(t.passed for t in result.tasks)
    head = (
        f"<h1>eval {_e(result.eval_id)}</h1><p>{_e(result.suite)}, started {_e(result.started_at)}"
        f"{', model ' + _e(result.model) if result.model else ''}: <b>{passed} of "
        f"{len(result.tasks)} tasks passed ({result.pass_rate:.0%})</b>, pass@{result.repeat} "
        f"{result.pass_at_k:.0%}; {sum(a.input_tokens for a in attempts)} tokens in, "
        f"{sum(a.output_tokens for a in attempts)} out, ${sum(a.cost for a in attempts):.4f}, "
        f"{sum(a.seconds for a in attempts):.1f} s.</p>"
    )
    table = (
        "<table><tr><th>task</th><th>tags</th><th>passed</th><th>steps</th><th>tokens in/out"
        "</th><th>cost</th><th>seconds</th><th>first action</th><th>tool errors</th>"
        f"<th>guards</th><th>stop reasons</th><th>attempts</th></tr>{rows}</table>"
    )
    runs = "".join(
        _transcript(a.task, a.attempt, a.run_id, transcripts.get(a.run_id)) for a in attempts
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>eval {_e(result.eval_id)}"
        f"</title><style>{STYLE}</style></head><body>{head}<div class='charts'>"
        f"{_charts(result)}</div>{table}<h2>Attempts</h2>{runs}</body></html>"
    )


async def transcripts_of(log: EventLog, result: EvalResult) -> dict[str, list[Message]]:
    """Each attempt's transcript, as its run's log holds it (a run no longer there: none)."""
    found: dict[str, list[Message]] = {}
    for attempt in result.attempts:
        if attempt.run_id:
            try:
                events = await log.events(attempt.run_id)
            except RunNotFound:
                continue
            if events:
                found[attempt.run_id] = RunState.fold(events).transcript(whole=True)
    return found


def _task_row(result: EvalResult, task_id: str) -> str:
    task = next(t for t in result.tasks if t.id == task_id)
    attempts = task.attempts
    firsts = [a.first_action_s for a in attempts if a.first_action_s is not None]
    links = " ".join(
        f"<a href='#run-{_e(a.run_id or a.task + str(a.attempt))}' class="
        f"'{'pass' if a.passed else 'fail'}'>#{a.attempt}</a>"
        for a in attempts
    )
    stops = ", ".join(sorted({a.stop_reason or "not run" for a in attempts}))
    mark = "pass" if task.passed else "fail"
    return (
        f"<tr><td>{_e(task.id)}</td><td>{_e(', '.join(task.tags))}</td>"
        f"<td class='n {mark}'>{sum(a.passed for a in attempts)}/{len(attempts)}</td>"
        f"<td class='n'>{sum(a.steps for a in attempts)}</td>"
        f"<td class='n'>{sum(a.input_tokens for a in attempts)}/"
        f"{sum(a.output_tokens for a in attempts)}</td>"
        f"<td class='n'>${sum(a.cost for a in attempts):.4f}</td>"
        f"<td class='n'>{sum(a.seconds for a in attempts):.1f}</td>"
        f"<td class='n'>{f'{min(firsts):.1f} s' if firsts else '-'}</td>"
        f"<td class='n'>{sum(a.tool_errors for a in attempts)}</td>"
        f"<td class='n'>{sum(a.rejections + a.notices for a in attempts)}</td>"
        f"<td>{_e(stops)}</td><td>{links}</td></tr>"
    )


def _transcript(task: str, number: int, run_id: str, messages: Sequence[Message] | None) -> str:
    anchor = _e(run_id or task + str(number))
    if not messages:
        return (
            f"<details id='run-{anchor}'><summary>{_e(task)} #{number}: no run</summary></details>"
        )
    parts = []
    for message in messages:
        if message.role == "system":
            continue
        if isinstance(message, AssistantMessage):
            text = message.text
            calls = [
                f"→ {c.name} {json.dumps(c.arguments, ensure_ascii=False)}"
                for c in message.tool_calls
            ]
            text = "\n".join([text, *calls]).strip()
        elif isinstance(message, ToolResultMessage):
            text = ("error: " if message.is_error else "") + message.content
        else:
            text = message.content
        parts.append(f"<b>{_e(message.role)}</b><pre>{_e(text)}</pre>")
    return (
        f"<details id='run-{anchor}'><summary>{_e(task)} #{number}, run {_e(run_id)}</summary>"
        f"{''.join(parts)}</details>"
    )


def _charts(result: EvalResult) -> str:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(
            "--html draws its charts with matplotlib: pip install 'reins[eval]'"
        ) from None
    attempts = result.attempts
    figures = []

    def bars(title: str, labels: list[str], values: list[float]) -> None:
        figure = Figure(figsize=(6, max(2.0, 0.25 * len(labels) + 1)))
        axes = figure.subplots()
        axes.barh(labels[::-1], values[::-1], color="#3b7a57")
        axes.set_xlim(0, 1)
        axes.set_title(title)
        figure.tight_layout()
        figures.append(figure)

    def histogram(title: str, values: list[float]) -> None:
        figure = Figure(figsize=(4, 2.6))
        axes = figure.subplots()
        axes.hist(values or [0], bins=min(20, max(1, len(values))), color="#4a6fa5")
        axes.set_title(title)
        figure.tight_layout()
        figures.append(figure)

    bars(
        "pass rate by task",
        [t.id for t in result.tasks],
        [sum(a.passed for a in t.attempts) / max(1, len(t.attempts)) for t in result.tasks],
    )
    tags = sorted({tag for t in result.tasks for tag in t.tags})
    if tags:
        tagged = [[t for t in result.tasks if tag in t.tags] for tag in tags]
        bars("pass rate by tag", tags, [sum(t.passed for t in ts) / len(ts) for ts in tagged])
    histogram("tokens per attempt", [a.input_tokens + a.output_tokens for a in attempts])
    histogram("seconds per attempt", [a.seconds for a in attempts])
    histogram("steps per attempt", [a.steps for a in attempts])
    return "".join(f"<figure>{_svg(f)}</figure>" for f in figures)


def _svg(figure: Any) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg") :]  # without the XML prologue and doctype


def _e(text: str) -> str:
    return html.escape(text, quote=True)
