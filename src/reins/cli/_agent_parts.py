"""What the commands build an agent from, out of the config and their flags: the config
itself (the project's commands only if trusted), its MCP servers, stop hooks and permission
rules, who answers an approval, a question or a cap, and the built-in tools a run had."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._console import _one_line_errors, err
from ._stdin import LineSource

if TYPE_CHECKING:  # the commands import the core when they run, so --help stays fast
    from ..agent._agent import Agent
    from ..agent._config import Config
    from ..agent._groups import Ask
    from ..core._questions import Asker, AskMode
    from ..mcp import MCPServerConfig
    from ..memory import Memory
    from ..permissions import ApprovalHandler, ApprovalMode, Permissions
    from ..policies import CapHandler, CommandHook
    from ..store import EventLog
    from ..tools import Tool


def _config(trust_project: bool, *, checks: bool = True) -> Config:
    """The config files, with the project's commands only if the user trusts them."""
    from ..agent._config import load_config
    from ._trust import trusted

    with _one_line_errors():
        config = trusted(load_config(), trust_project=trust_project, console=err, checks=checks)
    for notice in config.notices:  # an old spelling, still read
        err.print(f"notice: {notice}", markup=False, highlight=False)
    return config


def _builtin_of(tools: tuple[str, ...]) -> list[Tool]:
    """The built-in tools a run was given (the agent adds the others itself: final_answer,
    and load_skill, ask_user, spawn_agent as the config says)."""
    from ..tools import BUILTIN_TOOLS, calculate

    names = {t.name for t in BUILTIN_TOOLS} - {"final_answer"} | {calculate.name}
    return [t for t in (*BUILTIN_TOOLS, calculate) if t.name in names and t.name in tools]


def _mcp_servers(config: Config, files: list[Path] | None) -> list[MCPServerConfig]:
    """The config's MCP servers, and those of the files named on the command line (which
    win by name)."""
    from ..mcp import servers_from_json

    servers = dict(config.mcp_servers)
    with _one_line_errors():
        for path in files or ():
            servers.update(servers_from_json(path))
    return [s for s in servers.values() if s.enabled]


def _stop_hooks(config: Config) -> list[CommandHook]:
    from ..policies import CommandHook

    return [CommandHook(command=h.command, timeout=h.timeout) for h in config.stop_hooks]


def _permissions(config: Config) -> Permissions:
    from ..permissions import Permissions

    return Permissions(user=config.permissions, project=config.project_permissions)


def _asker(config: Config, lines: LineSource) -> Asker | AskMode | None:
    """Who answers the model's question: the person at the terminal; with no terminal, a
    later `reins resume --answer` if approval = "pause"; else nobody (no ask_user)."""
    if sys.stdin.isatty():
        from ._approve import TerminalAsker

        return TerminalAsker(err, lines)
    return "pause" if config.approval == "pause" else None


def _approval(
    config: Config, yes: bool, lines: LineSource, *, resuming: bool = False
) -> ApprovalHandler | ApprovalMode:
    """Who answers a permission ask: nobody with --yes (approved) or approval = "allow", nobody
    with approval = "deny" (denied), the person at the terminal if there is one, else nobody
    (denied), or a later `reins resume` with approval = "pause" (which asks, when run in a
    terminal: the person the run waited for is there)."""
    if yes or config.approval == "allow":
        return "allow"
    if config.approval == "deny":
        return "deny"
    if config.approval == "pause" and not (resuming and sys.stdin.isatty()):
        return "pause"
    if sys.stdin.isatty():
        from ._approve import TerminalApprover

        return TerminalApprover(err, lines)
    return "deny"


def _on_cap(lines: LineSource) -> CapHandler | None:
    """At a cap, the person at the terminal is offered to go on; headless, the run stops."""
    if sys.stdin.isatty():
        from ._offer import TerminalCapOffer

        return TerminalCapOffer(err, lines)
    return None


def _served_agent(
    config: Config,
    spec: str,
    *,
    workspace: Path,
    log: EventLog,
    max_steps: int,
    approval: ApprovalHandler | ApprovalMode,
    ask: Ask | None = None,
    sandbox: str | None = None,
    network: bool | None = None,
    token_budget: int | None = None,
    time_budget: float | None = None,
    cost_budget: float | None = None,
    mode: str | None = None,
    planning: bool = False,
    mcp_servers: Sequence[MCPServerConfig] = (),
    checkpoints: bool = True,
    memory: bool = True,
) -> Agent:
    """The agent of a run a server starts (`reins mcp serve`, `reins serve`, `reins acp`,
    `reins eval`): the config's tools, rules, guards, checks, hooks and context, with no
    person at a terminal; `mcp_servers` besides the config's (an editor's)."""
    from ..agent._agent import Agent
    from ..agent._budgets import Budgets
    from ..agent._groups import Checks
    from ..agent._resolve import resolve_model
    from ..tools import builtin_tools

    return Agent(
        model=resolve_model(spec, config),
        tools=builtin_tools(None),
        workspace=workspace,
        budgets=Budgets(
            max_steps=max_steps,
            token_budget=token_budget or config.token_budget,
            time_budget=time_budget or config.time_budget,
            cost_budget=cost_budget or config.cost_budget,
        ),
        log=log,
        permissions=_permissions(config),
        approval=approval,
        ask=ask,
        sandbox=config.sandbox.policy(mode=sandbox, network=network),
        guards=config.guards.guards(),
        checks=Checks(
            commands=config.checks,
            stop_hooks=_stop_hooks(config),
            max_rejections=config.stop_max_rejections,
        ),
        hooks=config.hooks.in_order(),
        context=config.context.settings(),
        instruction_files=config.instruction_files,
        mcp_servers=[*_mcp_servers(config, None), *mcp_servers],
        skills=config.skill_folders,
        mode=mode,
        planning=planning,
        checkpoints=checkpoints and config.checkpoints,
        memory=_memory_beside(config, log) if memory else None,
    )


def _memory_beside(config: Config, log: EventLog) -> Memory | None:
    """The config's memory; for a log with no folder (a PostgreSQL store) its facts in the
    current folder's store folder (on this machine), where `reins memory` reads them then."""
    from dataclasses import replace

    from ._execute import _store_of

    memory = config.memory.settings()
    if memory is None or memory.path is not None:
        return memory
    if isinstance(getattr(log, "directory", None), Path):
        return memory
    return replace(memory, path=_store_of(None) / "memory.db")
