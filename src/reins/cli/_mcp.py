"""`reins mcp list` (the configured servers, started, with their state and tools) and
`reins mcp serve` (reins as an MCP server over stdio)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ._agent_parts import _config, _mcp_servers, _served_agent
from ._console import _one_line_errors, err, out
from ._options import (
    CostBudgetOpt,
    McpConfigOpt,
    ModelOpt,
    NetworkOpt,
    SandboxOpt,
    ServedMaxStepsOpt,
    StoreOpt,
    TimeBudgetOpt,
    TokenBudgetOpt,
    TrustProjectOpt,
    WorkspaceOpt,
    YesOpt,
)

if TYPE_CHECKING:
    from ..mcp import MCPServer

mcp_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode="markdown",
    help="MCP: the servers whose tools runs are offered, and reins as one.",
)


@mcp_app.command("list")
def list_servers(
    json_out: Annotated[bool, typer.Option("--json", help="Print the servers as JSON.")] = False,
    trust_project: TrustProjectOpt = False,
    mcp_config: McpConfigOpt = None,
) -> None:
    """Start each configured server, list its tools, stop it: what a run would be offered."""
    from ..agent._config import load_config
    from ..mcp import MCPServer, start_all, stop_all

    with _one_line_errors():
        loaded = load_config()
    config = loaded.trusting_project() if trust_project else loaded.distrusting_project()
    servers = [MCPServer(c) for c in _mcp_servers(config, mcp_config)]
    held = {} if trust_project or loaded.untrusted is None else loaded.untrusted.mcp_servers

    async def check() -> None:
        await start_all(servers)
        await stop_all(servers)

    import asyncio  # here, as the core: `reins --help` never needs it

    with _one_line_errors():
        asyncio.run(check())
    rows = [_row(s) for s in servers]
    rows += [
        {"name": name, "transport": c.transport, "state": "not trusted", "tools": [], "error": ""}
        for name, c in held.items()
    ]
    if json_out:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        out.print(
            "no MCP servers configured: add \\[mcp_servers.NAME] to the config, or a .mcp.json "
            "to the project"
        )
        return
    table = Table(box=None)
    for column in ("server", "transport", "state", "tools"):
        table.add_column(column, overflow="fold")
    for row in rows:
        state = row["state"] if not row["error"] else f"{row['state']}: {row['error']}"
        table.add_row(
            escape(row["name"]), row["transport"], escape(state), escape(", ".join(row["tools"]))
        )
    out.print(table)
    if held:
        out.print(
            "[yellow]the project's servers are not started until you trust it[/] "
            "(--trust-project, or trusted_projects in your config)"
        )


def _row(server: MCPServer) -> dict[str, Any]:
    state = server.state if server.state in ("failed", "disabled") else "ok"
    hidden = [t.name for t in server.listed() if t.name.startswith("_")]
    tools = [t.name for t in server.listed() if not t.name.startswith("_")]
    return {
        "name": server.name,
        "transport": server.config.transport,
        "state": state,
        "server": server.server_info,
        "tools": tools + [f"{h} (hook)" for h in hidden],
        "error": server.error,
    }


@mcp_app.command()
def serve(
    workspace: WorkspaceOpt = Path("."),
    model: ModelOpt = None,
    max_steps: ServedMaxStepsOpt = None,
    token_budget: TokenBudgetOpt = None,
    time_budget: TimeBudgetOpt = None,
    cost_budget: CostBudgetOpt = None,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
) -> None:
    """Serve reins over MCP on stdin/stdout: `run` (an agent run on a goal: its answer and
    run id), `sessions` and `read_run` (the log). Calls that would ask a person are denied,
    unless --yes or the config's approval = "allow" approves them."""
    from ..agent._agent import Agent
    from ..agent._resolve import default_model, resolve_model
    from ..store import SQLiteLog
    from ..store._placement import check_placement
    from ..tools._workspace import Workspace
    from ._execute import _store_of
    from ._serve import reins_server

    config = _config(trust_project)
    spec = model or config.model
    if not spec:  # as `reins run` does: a hosted model when llama.cpp is missing and a key set
        spec, why = default_model()
        if why:
            err.print(f"[dim]{escape(why)}[/]")  # stdout is the MCP channel
    with _one_line_errors():  # a bad model or workspace is said now, not at each run's call
        Workspace(workspace)
        check_placement(_store_of(store, what="reins mcp serve"), workspace)
        resolve_model(spec, config)
        config.sandbox.policy(mode=sandbox, network=network)  # an unknown mode

    async def go() -> None:
        log = SQLiteLog(_store_of(store))
        try:

            def make_agent(asked: int | None) -> Agent:
                cap = max_steps or config.max_steps or 30
                return _served_agent(
                    config,
                    spec,
                    workspace=workspace,
                    log=log,
                    max_steps=min(asked, max_steps) if asked and max_steps else asked or cap,
                    approval="allow" if yes or config.approval == "allow" else "deny",
                    sandbox=sandbox,
                    network=network,
                    token_budget=token_budget,
                    time_budget=time_budget,
                    cost_budget=cost_budget,
                )

            await reins_server(make_agent, log).run_stdio_async()
        finally:
            await log.close()

    import asyncio

    with _one_line_errors():
        asyncio.run(go())
