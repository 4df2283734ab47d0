"""`reins run --server URL` and `reins sessions --server URL`: the same commands against a
`reins serve` instead of in this process. The run's events are shown as a local run's are;
an approval or a question it waits on is asked here when a person is at the terminal (else
the command ends `waiting`, exit 10, for the web page or the API to answer); Ctrl-C stops
the run on the server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from ..core._errors import UsageError
from ..core._stop import StopReason
from ._approve import TerminalApprover, TerminalAsker
from ._console import _one_line_errors, err, out
from ._event_output import _drive
from ._execute import EXIT_CODES
from ._stdin import TerminalLines

if TYPE_CHECKING:
    from ..client import Client, RemoteRun
    from ..core._events import StreamEvent


def run_remote(url: str, goal: str, fields: dict[str, Any], json_lines: bool) -> None:
    """Run `goal` on the server at `url`, shown here; exit with its stop reason's code."""

    async def go(client: Client) -> StopReason:
        run = client.run(goal, **{k: v for k, v in fields.items() if v is not None})
        lines = TerminalLines()
        from ..core._cancel import Cancel

        cancel = Cancel()  # the run is the server's: a Ctrl-C asks the server to stop it
        stopping: list[asyncio.Task[None]] = []

        def on_signal() -> None:
            if stopping:
                raise KeyboardInterrupt
            err.print("\n[yellow]stopping the run on the server…[/] (again to leave it)")
            stopping.append(asyncio.create_task(run.stop()))

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, on_signal)
        try:
            return await _drive(_answered(run, lines), json_lines, cancel, lines)
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    _with_client(url, go)


def list_remote(url: str, limit: int | None, json_out: bool) -> None:
    """The server's sessions, the latest active first."""
    import json

    async def go(client: Client) -> StopReason:
        page = await client.sessions(limit=limit or 50)
        if json_out:
            sys.stdout.write(json.dumps(page["sessions"], indent=2) + "\n")
            return StopReason.END_TURN
        for row in page["sessions"]:
            out.print(
                f"{escape(row['session_id'])}  [dim]{escape(row['started_at'][:19])}[/]  "
                f"{escape(row['last_status'])}  runs {row['runs']}  {escape(row['goal'][:80])}"
            )
        shown = len(page["sessions"])
        if shown < page["total"]:
            out.print(f"[dim]{shown} of {page['total']} sessions[/]")
        return StopReason.END_TURN

    _with_client(url, go)


async def _answered(run: RemoteRun, lines: TerminalLines) -> AsyncIterator[StreamEvent]:
    """The run's events; where it stops to wait, a person at the terminal answers (the
    server's stream goes on with the resumed run), else the events end there."""
    from ..core._approval import ApprovalRequest
    from ..core._events import ApprovalRequested, QuestionAsked, RunFinished
    from ..core._questions import QuestionRequest

    asked: dict[str, ApprovalRequested | QuestionAsked] = {}
    async for event in run:
        yield event
        if isinstance(event, ApprovalRequested | QuestionAsked):
            asked[event.call.id if isinstance(event, ApprovalRequested) else event.call_id] = event
        if not (isinstance(event, RunFinished) and event.stop_reason is StopReason.WAITING):
            continue
        if not sys.stdin.isatty():
            err.print(
                f"[dim]the run waits on the server: answer it there (the web page, or POST "
                f"{escape(run.client.url)}/api/runs/{escape(run.run_id)}/approvals/CALL)[/]"
            )
            return
        view = await run.client.view(run.run_id)
        for call_id in view["awaiting"]:
            match asked.get(call_id):
                case ApprovalRequested() as request:
                    arguments = request.call.arguments
                    approval = await TerminalApprover(err, lines)(
                        ApprovalRequest(
                            session_id=request.session_id,
                            run_id=request.run_id,
                            call=request.call,
                            rule=request.rule,
                            grant=request.grant,
                            command_arg="command"
                            if isinstance(arguments.get("command"), str)
                            else None,
                            each_time=not request.grant,
                        )
                    )
                    await run.approve(call_id, approval.allowed, always=approval.always)
                case QuestionAsked() as question:
                    text = await TerminalAsker(err, lines)(
                        QuestionRequest(
                            session_id=question.session_id,
                            run_id=question.run_id,
                            call_id=call_id,
                            question=question.question,
                            choices=question.choices,
                            default=question.default,
                        )
                    )
                    await run.answer(call_id, text)
                case None:
                    raise UsageError(
                        f"the run waits on call {call_id}, asked before this command started: "
                        "answer it on the web page or with the API"
                    )


def _with_client(url: str, go: Any) -> None:
    from ..client import TOKEN_VARIABLE

    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    with _one_line_errors():
        if not token:
            raise UsageError(
                f"--server {url}: set {TOKEN_VARIABLE} to the server's token (`reins serve` "
                "printed it, and keeps it in its store's server.token)"
            )
        from ..client import Client

        async def session() -> StopReason:
            async with Client(url, token) as client:
                reason: StopReason = await go(client)
                return reason

        reason = asyncio.run(session())
    raise typer.Exit(EXIT_CODES[reason])
