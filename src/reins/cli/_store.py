"""`reins store`: what is done to a whole store; `copy` moves sessions between stores."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ._console import _one_line_errors, out

store_app = typer.Typer(
    rich_markup_mode="markdown", help="Work on a whole store: copy its sessions to another."
)


@store_app.command("copy")
def copy(
    source: Annotated[
        str,
        typer.Argument(metavar="SRC", help="The store to copy from: a folder, or postgresql://…"),
    ],
    target: Annotated[
        str,
        typer.Argument(
            metavar="DST",
            help="The store to copy into (made if need be): a folder, or postgresql://…",
        ),
    ],
    sessions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[SESSION]...", help="Only these sessions (ids or unique prefixes)."
        ),
    ] = None,
) -> None:
    """Copy every session of SRC (every run, every event, as recorded) into DST: a folder's
    SQLite + JSONL log or a PostgreSQL database, either way. A session DST holds already is
    refused, and then nothing is copied."""
    import asyncio  # here, as the core: `reins --help` never needs it

    from ..store import is_postgres, open_log
    from ..store._copy import copy_sessions
    from ._execute import _folder

    async def go() -> str:
        from_ = source if is_postgres(source) else _folder(source, False, None)
        into = target if is_postgres(target) else _folder(target, True, None)
        origin = open_log(from_, create=False)
        try:
            destination = open_log(into)
            try:
                copied = await copy_sessions(origin, destination, sessions or ())
                return (
                    f"copied {copied.sessions} session(s), {copied.runs} run(s), "
                    f"{copied.events} event(s) from {origin.where} to {destination.where}"
                )
            finally:
                await destination.close()
        finally:
            await origin.close()

    with _one_line_errors():
        said = asyncio.run(go())
    out.print(escape(said), soft_wrap=True)
