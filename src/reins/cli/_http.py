"""`reins serve`: the HTTP API (`reins.server`) over a store, until interrupted."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core._errors import UsageError
from ._agent_parts import _config, _served_agent
from ._console import _one_line_errors, err
from ._options import (
    ModelOpt,
    NetworkOpt,
    SandboxOpt,
    ServedMaxStepsOpt,
    StoreOpt,
    TrustProjectOpt,
    WorkspaceOpt,
    YesOpt,
)

if TYPE_CHECKING:
    from ..agent._agent import Agent
    from ..permissions import ApprovalMode
    from ..server import RunRequest


def serve(
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Address to listen on (default: the config's [server] host, else this "
            "machine only, 127.0.0.1).",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            help="Port to listen on (0: any free; default: the config's, else 8765).",
        ),
    ] = None,
    workspace: WorkspaceOpt = Path("."),
    model: ModelOpt = None,
    max_steps: ServedMaxStepsOpt = None,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    store: StoreOpt = None,
    trust_project: TrustProjectOpt = False,
    lease: Annotated[
        float | None,
        typer.Option(
            "--lease",
            min=1.0,
            help="On a PostgreSQL store shared by servers: seconds this server's runs stay its "
            "own past its last heartbeat (default 30); the runs of a server that died are "
            "taken over by another once they pass.",
        ),
    ] = None,
) -> None:
    """Serve reins over HTTP, and its web page at /: runs started, watched as server-sent
    events, steered, stopped, answered and resumed, by whoever holds the token
    ($REINS_SERVER_TOKEN, else made at the first start and kept in the store)."""
    import asyncio

    import uvicorn

    from ..agent._groups import Ask
    from ..agent._resolve import default_model, resolve_model
    from ..server import TOKEN_VARIABLE, Runs, create_app, server_token
    from ..server._runs import LEASE_S
    from ..store import is_postgres, open_log
    from ..store._placement import check_placement
    from ..tools._workspace import Workspace
    from ._execute import _store_of

    config = _config(trust_project)
    host = host or config.server.host
    port = config.server.port if port is None else port
    spec = model or config.model
    if not spec:
        spec, why = default_model()
        if why:
            err.print(f"[dim]{escape(why)}[/]")
    with _one_line_errors():  # a bad model or workspace is said now, not at each run
        # The token: beside the log, or with a PostgreSQL log in the current folder's store
        # folder (on this machine).
        directory = _store_of(None if is_postgres(store) else store)
        Workspace(workspace)
        check_placement(directory, workspace)
        resolve_model(spec, config)
        config.sandbox.policy(mode=sandbox, network=network)
        token, made = server_token(directory)
    if not _loopback(host):
        err.print(
            f"[yellow]warning:[/] listening on {escape(host)} without TLS: the token and "
            "every run's events cross the network in the clear; put a TLS proxy in front"
        )

    async def go() -> None:
        log = open_log(store if store is not None and is_postgres(store) else directory)
        cap = max_steps or config.max_steps or 30
        # nobody asked with --yes or approval = "allow" / "deny"; else the run waits for a client
        approval: ApprovalMode = "pause"
        if yes or config.approval in ("allow", "deny"):
            approval = "allow" if yes else config.approval

        def make_agent(request: RunRequest) -> Agent:
            _check_mode(request.mode)
            return _served_agent(
                config,
                request.model or spec,
                workspace=_inside(workspace, request.workspace),
                log=log,
                max_steps=min(request.max_steps or cap, cap),
                time_budget=request.time_budget,
                approval=approval,
                ask=Ask(answer="pause"),
                sandbox=sandbox,
                network=network,
                mode=request.mode,
            )

        runs = Runs(log, make_agent, signing_key=token.encode(), lease=lease or LEASE_S)
        app = create_app(runs, token)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level="warning",
                timeout_graceful_shutdown=GRACE_S,  # streams of waiting runs stay open
            )
        )
        serving = asyncio.create_task(server.serve())
        try:
            while not server.started and not serving.done():  # noqa: ASYNC110 (a flag, no event)
                await asyncio.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1]
                kept = directory / "server.token"
                url = f"http://{_url_host(host)}:{bound}"
                err.print(f"reins serve: {url} ({log.where})")
                if made:
                    err.print(f"token (shown this once; kept in {kept}): {token}")
                    err.print(f"the page, signed in: {url}/#token={token}")
                elif not os.environ.get(TOKEN_VARIABLE, "").strip():
                    err.print(f"token: in {kept}")
            await serving
        finally:
            await log.close()

    with _one_line_errors():
        asyncio.run(go())


GRACE_S = 3
"""Seconds an interrupted server gives its open streams before it closes them."""


def _inside(root: Path, asked: str | None) -> Path:
    """The workspace a request names: a folder inside the server's (relative to it, or
    absolute under it), so a client cannot point the agent at the rest of the machine."""
    if asked is None:
        return root
    top = root.resolve()
    folder = (top / asked).resolve()  # an absolute `asked` stands alone
    if not folder.is_relative_to(top):
        raise UsageError(f"workspace: {asked} is not inside the server's workspace {top}")
    if not folder.is_dir():
        raise UsageError(f"workspace: {asked} is not a folder in {top}")
    return folder


def _check_mode(name: str | None) -> None:
    from ..context import MODES
    from ..context._modes import resolve_mode

    if name is not None and resolve_mode(name)[1] is not None:
        raise UsageError(f"mode: no mode {name!r}; the modes: {', '.join(MODES)}")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
