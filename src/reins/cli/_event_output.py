"""How a command shows a run's events: rendered for a person, or as JSON lines (`_printer`);
`_drive` shows a live run's as they come."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, Callable
from typing import TYPE_CHECKING, Any

from ..core._stop import StopReason
from ._console import WARNINGS, _silence_stdout, out
from ._safe import json_visible
from ._stdin import TerminalLines

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..core._events import StreamEvent
    from ._render import EventRenderer


async def _drive(
    stream: AsyncIterable[StreamEvent], json_lines: bool, cancel: Cancel, lines: TerminalLines
) -> StopReason:
    """Show the run's events; a reader that goes away (`--json | head`) cancels the run,
    which ends as cancelled, quietly. A prompt (`lines`) stops the spinner first."""
    from ..core._events import RunFinished
    from ._render import EventRenderer

    printer = _printer(json_lines)
    show_event: Callable[[Any], None] | None = printer
    reason = StopReason.ERROR
    if isinstance(printer, EventRenderer):
        lines.before_prompt = printer.prompting  # the next event starts the spinner again
        lines.on_steer = printer.steering
        if out.is_terminal:  # it spins
            lines.hide_typing()
        _SHOWN.append(printer)
        printer.starting()
    try:
        async for event in stream:
            WARNINGS.show_held()  # the run has read its session: other damage is said now
            if show_event is not None:
                try:
                    show_event(event)
                except BrokenPipeError:
                    show_event = None
                    _silence_stdout()
                    cancel.cancel()
            if isinstance(event, RunFinished):
                reason = event.stop_reason
    finally:
        if isinstance(printer, EventRenderer):
            printer.close()
            _SHOWN.remove(printer)
            lines.show_typing()
    return reason


_SHOWN: list[EventRenderer] = []
"""The run `_drive` shows on the terminal, if one: a signal's line takes its spinner's place."""


def _printer(json_lines: bool) -> Callable[[Any], None]:
    from ..core._events import EVENT, SubagentEvent
    from ._render import EventRenderer

    if json_lines:

        def write(event: Any) -> None:
            if isinstance(event, SubagentEvent):  # {"subagent": [call ids], "event": {...}}
                inner = EVENT.dump_json(event.event).decode()
                line = f'{{"subagent": {json.dumps(list(event.path))}, "event": {inner}}}'
            else:
                line = EVENT.dump_json(event).decode()
            sys.stdout.write(json_visible(line) + "\n")
            sys.stdout.flush()

        return write
    return EventRenderer(out, spinner=True)
