"""`reins acp`: reins as an editor's agent, over the Agent Client Protocol on stdin and stdout
(`reins.acp`), until the editor closes them."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ._agent_parts import _config, _served_agent
from ._console import _one_line_errors, err
from ._options import (
    ModelOpt,
    NetworkOpt,
    PlanningOpt,
    SandboxOpt,
    StoreOpt,
    TrustProjectOpt,
    YesOpt,
)

if TYPE_CHECKING:
    from ..acp import SessionSetup
    from ..agent._agent import Agent
    from ..permissions import ApprovalMode
    from ..store import SQLiteLog

MISSING = "reins acp needs the Agent Client Protocol SDK: pip install 'reins[acp]'"


def acp(
    model: ModelOpt = None,
    max_steps: Annotated[
        int | None,
        typer.Option(
            "--max-steps",
            min=1,
            help="Cap on each prompt's model calls (default: the config's, else 30).",
        ),
    ] = None,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
    planning: PlanningOpt = None,
) -> None:
    """Be an editor's agent (Zed's Agent Client Protocol, over stdin and stdout): the editor
    starts `reins acp` and sends prompts; each session works in the editor's folder, its runs
    recorded in that folder's store (`--store`: one for all) as any other (`reins sessions`),
    its approvals asked in the editor."""
    import asyncio

    from ..agent._resolve import default_model, resolve_model
    from ..core._errors import UsageError
    from ..core._paths import project_store
    from ..store import SQLiteLog
    from ..store._placement import check_placement
    from ..tools._workspace import Workspace
    from ._execute import _store_of

    _one_line_logs()
    with _one_line_errors():
        if store:
            _store_of(store, what="reins acp")  # a PostgreSQL store is said now
        try:
            from ..acp import ACPAgent, serve_stdio
        except ImportError as exc:
            if (exc.name or "").partition(".")[0] != "acp":
                raise
            raise UsageError(MISSING) from None
        config = _config(trust_project)
        spec = model or config.model
        if not spec:
            spec, why = default_model()
            if why:
                err.print(f"[dim]{escape(why)}[/]")
        resolve_model(spec, config)  # a bad model is said now, not at each prompt
        config.sandbox.policy(mode=sandbox, network=network)
    cap = max_steps or config.max_steps or 30
    offer_plan = config.planning if planning is None else planning
    fixed: ApprovalMode | None = None  # nobody asked: --yes, or approval = "allow" / "deny"
    if yes or config.approval in ("allow", "deny"):
        fixed = "allow" if yes else config.approval
    logs: dict[Path, SQLiteLog] = {}

    def log_of(workspace: Path) -> SQLiteLog:
        """The store of the folder's runs: the one named, else the folder's own (where
        `reins sessions` in that folder reads)."""
        directory = _store_of(store, what="reins acp") if store else project_store(workspace)
        check_placement(directory, workspace)
        if directory not in logs:
            logs[directory] = SQLiteLog(directory)
        return logs[directory]

    def make_agent(setup: SessionSetup) -> Agent:
        Workspace(setup.workspace)  # not / nor the home folder: the editor is told why
        return _served_agent(
            config,
            spec,
            workspace=setup.workspace,
            log=setup.log,
            max_steps=cap,
            approval=fixed or setup.approval,
            sandbox=sandbox,
            network=network,
            planning=offer_plan,
            mcp_servers=setup.mcp_servers,
        )

    async def go() -> None:
        try:
            await serve_stdio(ACPAgent(make_agent, log_of))
        finally:
            for log in logs.values():
                await log.close()

    where = f"store {store}" if store is not None else "each folder's store"
    err.print(f"reins acp: serving over stdin and stdout (model {spec}, {where})")
    with _one_line_errors():
        asyncio.run(go())


class _OneLine(logging.Formatter):
    """A record as one line on stderr (the editor's log of the agent): an exception as its
    type and message, not a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return f"reins acp: {record.levelname.lower()}: {text}"


def _one_line_logs() -> None:
    """Warnings (reins' and the ACP SDK's) on stderr, one line each; unless -v asked for
    every record, as it comes."""
    root = logging.getLogger()
    if root.handlers:  # -v
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
