"""`reins compact`: a session's context compacted now, its log keeping all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..core._stop import StopReason
from . import _complete
from ._agent_parts import _builtin_of, _config
from ._event_output import _printer
from ._execute import _execute
from ._options import StoreOpt, TrustProjectOpt

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..core._cancel import Cancel
    from ..store import IndexedLog


def compact(
    session: Annotated[
        str,
        typer.Argument(
            metavar="SESSION",
            autocompletion=_complete.sessions,
            help="Session id, a unique prefix of one, or `last`.",
        ),
    ],
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
) -> None:
    """Compact a session's context now: the middle of its history is summarized (by the
    compaction model, else a digest) and its next turn starts from there; the log keeps all."""
    from ..agent._agent import Agent
    from ..agent._resolve import resolve_model
    from ..core._state import RunState
    from ..store import find_session

    config = _config(trust_project, checks=False)

    async def go(log: IndexedLog, cancel: Cancel) -> StopReason:
        session_id = find_session(await log.runs(), session)
        last = (await log.runs(session_id))[-1]
        state = RunState.fold(await log.events(last.run_id))
        agent = Agent(
            model=resolve_model(state.config.model, config),
            tools=_builtin_of(state.config.tools),
            log=log,
            context=state.config.context or config.context.settings(),
        )
        _printer(False)(await agent.compact(session_id))
        return StopReason.END_TURN

    _execute(store, go, create=False)
