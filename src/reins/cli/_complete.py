"""Tab completion of option values and ids, for bash, zsh and fish: each function is the
`autocompletion=` of its options (typer's machinery; `reins --install-completion SHELL` installs
the script that asks it). A completer runs at each Tab: it imports what it needs then, reads the
log's index only, and offers nothing rather than fail (a traceback would land on the prompt)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ..store import RunInfo

Offers = list[tuple[str, str]]
"""(value, what it is): zsh and fish show the second beside the first."""

SANDBOX_MODES = {
    "read-only": "commands read the workspace, write nothing",
    "workspace-write": "commands write in the workspace only (default)",
    "danger-full-access": "no sandbox",
}


def _quiet(complete: Callable[[typer.Context, str], Offers]) -> Callable[..., Offers]:
    def offers(ctx: typer.Context, incomplete: str) -> Offers:
        try:
            return [o for o in complete(ctx, incomplete) if o[0].startswith(incomplete)]
        except Exception:  # never a traceback at the prompt: offer nothing instead
            return []

    offers.__name__ = complete.__name__
    return offers


@_quiet
def modes(ctx: typer.Context, incomplete: str) -> Offers:
    from ..context._modes import MODES

    return [(name, "read-only" if mode.folder else "writes") for name, mode in MODES.items()]


@_quiet
def sandbox_modes(ctx: typer.Context, incomplete: str) -> Offers:
    return list(SANDBOX_MODES.items())


@_quiet
def guards(ctx: typer.Context, incomplete: str) -> Offers:
    from ..core._guard_settings import GUARD_NAMES

    return [(name, "guard") for name in GUARD_NAMES]


@_quiet
def models(ctx: typer.Context, incomplete: str) -> Offers:
    from ..core._catalog import CATALOG
    from ..models._embedded import EMBEDDED

    offers = [("local", "the embedded model")]
    offers += [(f"local:{name}", "an embedded model") for name in EMBEDDED]
    for name in CATALOG:
        if name.startswith(("gpt-", "o3", "o4")):
            offers.append((f"openai:{name}", "OpenAI"))
        elif name.startswith("claude-"):
            offers.append((f"anthropic:{name}", "Anthropic"))
        elif name != "local":
            offers.append((f"ollama:{name}", "Ollama, on this machine"))
    return [*offers, ("script:", "a scripted model: script:FILE.json")]


@_quiet
def runs(ctx: typer.Context, incomplete: str) -> Offers:
    return _ids(ctx, lambda run: run.run_id, _described)


@_quiet
def sessions(ctx: typer.Context, incomplete: str) -> Offers:
    return _ids(ctx, lambda run: run.session_id, _described)


def _ids(
    ctx: typer.Context, key: Callable[[RunInfo], str], say: Callable[[RunInfo], str]
) -> Offers:
    """Each run's (session's) shortest unique prefix, the latest first, and `last`."""
    from ..core._paths import project_store
    from ..store import peek_runs, shown_ids

    given = ctx.params.get("store") or os.environ.get("REINS_STORE")
    listed = peek_runs(Path(given) if given else project_store(os.getcwd()))
    if not listed:
        return []
    short = shown_ids(listed)
    offers: dict[str, str] = {}
    for run in listed:  # the latest first: a session is told by its latest run
        offers.setdefault(short[key(run)], say(run))
    return [("last", say(listed[0])), *offers.items()]


def _described(run: RunInfo) -> str:
    goal = run.goal.splitlines()[0] if run.goal else ""
    return f"{run.started_at:%m-%d %H:%M} {goal[:50]}"
