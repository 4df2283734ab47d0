"""Trusting a project: what its `reins.toml` sets that acts for it — checks, stop hooks and
command hooks, which run unasked when the agent says it is done or around its tool calls, and
provider settings, which decide where the model's requests go and which key they carry — takes
effect only once the user trusts the project."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.text import Text

from ..agent._config import Config, Untrusted, record_trust, user_config_path
from ..core._errors import UsageError
from ._safe import visible  # a newline too: what is asked is what runs

ANSWERS = {"y": True, "yes": True, "n": False, "no": False, "": False}
Items = list[tuple[str, str]]


def trusted(
    config: Config, *, trust_project: bool, console: Console, checks: bool = True
) -> Config:
    """The config with what the project file holds if the user trusts it: in their config
    (already applied), by `--trust-project`, or by answering yes at the terminal (no: the
    user's config alone). With no terminal, an untrusted project's commands and settings are an
    error rather than dropped: a check left out would let a run pass unverified, and a model
    other than the one the project names would surprise. `checks=False`: a resume, which takes
    its checks and its model from the run's log (only the stop hooks and providers matter)."""
    held = config.untrusted
    items = held.items(checks=checks, model=checks) if held is not None else []
    if held is None or not items:
        return config
    if trust_project:
        return config.trusting_project()
    if not sys.stdin.isatty():
        if all(kind == "skill" for kind, _ in items):  # nothing left out makes a run unsafe
            console.print(
                Text(
                    f"The project's skills are not offered: {visible(str(held.folder))} is "
                    "not trusted (--trust-project, or trusted_projects in your config)."
                )
            )
            return config.distrusting_project()
        raise UsageError(_refusal(held, items))
    if _ask(console, held, items):
        return config.trusting_project()
    console.print(Text(f"Running without the project's {_what(items)}."))
    return config.distrusting_project()


def _ask(console: Console, held: Untrusted, items: Items) -> bool:
    """Shows exactly what the file sets and asks once; the default is no; "always" records
    the folder as trusted. End of input: nobody is there to answer, as with no terminal."""
    hooks, servers, skills, settings = _groups(items)
    what = []
    if hooks:
        what.append(f"commands that run, unasked, {_when(hooks)} (in the sandbox)")
    if servers:
        what.append("MCP servers started with each run (outside the sandbox), whose tools it calls")
    if skills:
        what.append("skills: instructions the model is offered and would follow")
    if settings:
        what.append(
            "where the model's requests go (with your prompts and what the agent reads) and "
            "which of your keys they carry"
        )
    console.print(Text(f"\n{visible(str(held.path))} sets {' and '.join(what)}:", "bold"))
    width = max(len(kind) for kind, _ in items)
    for kind, text in items:
        console.print(Text(f"  {kind:<{width}}  {visible(text)}"))
    verb = "Use" if settings or not (hooks or servers) else "Run"
    console.print(
        Text(
            f"(--trust-project {verb.lower()}s them without asking; [a]lways trusts this "
            f"folder for good, as adding {_trust_entry(held)} does)"
        )
    )
    while True:
        console.print(
            Text(f"{verb} them? [y]es, [a]lways, [n]o: run without them (default no): "), end=""
        )
        line = sys.stdin.readline()  # before the run starts: nothing else reads stdin yet
        if not line:
            console.print()
            raise UsageError(_refusal(held, items))
        reply = line.strip().lower()
        if reply in ("a", "always"):
            where = record_trust(held.folder)
            console.print(Text(f"Trusted {visible(str(held.folder))} (recorded in {where})."))
            return True
        answer = ANSWERS.get(reply)
        if answer is not None:
            return answer


def _refusal(held: Untrusted, items: Items) -> str:
    hooks, servers, skills, settings = _groups(items)
    what = []
    if hooks:
        listed = "; ".join(f"{kind} `{visible(command)}`" for kind, command in hooks)
        what.append(f"commands that run {_when(hooks)} ({listed})")
    if servers:
        listed = "; ".join(f"`{visible(server)}`" for _, server in servers)
        what.append(f"MCP servers started with each run ({listed})")
    if skills:
        what.append(f"skills ({'; '.join(visible(folder) for _, folder in skills)})")
    if settings:
        listed = "; ".join(visible(setting) for _, setting in settings)
        what.append(f"where the model's requests go and which key they carry ({listed})")
    verb = "use" if settings or not (hooks or servers) else "run"
    return (
        f"{visible(str(held.path))} sets {' and '.join(what)}, and this project is not "
        f"trusted: to {verb} them, pass --trust-project, or add {_trust_entry(held)}"
    )


def _groups(items: Items) -> tuple[Items, Items, Items, Items]:
    """The commands run at a final answer, the MCP servers, the skills, the settings."""
    servers, skills, settings = (
        [i for i in items if i[0] == kind] for kind in ("MCP server", "skill", "setting")
    )
    hooks = [i for i in items if i not in servers + skills + settings]
    return hooks, servers, skills, settings


def _when(hooks: Items) -> str:
    """When the project's commands run: at a final answer, or at the hook points too."""
    if all(kind in ("check", "stop hook") for kind, _ in hooks):  # a command hook's: "prompt hook"
        return "when the agent says it is done"
    return "around tool calls, at a session's start, on a prompt or when the agent says it is done"


def _what(items: Items) -> str:
    hooks, servers, skills, settings = _groups(items)
    kinds = {kind if kind in ("check", "stop hook") else "hook" for kind, _ in hooks}
    parts = [f"{kind}s" for kind in ("check", "stop hook", "hook") if kind in kinds]
    parts += ["MCP servers"] if servers else []
    parts += ["skills"] if skills else []
    parts += ["model settings"] if settings else []
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]


def _trust_entry(held: Untrusted) -> str:
    """Where the user trusts the project: its folder, as a TOML string, in their config."""
    folder = json.dumps(str(held.folder), ensure_ascii=False)
    return f"{visible(folder)} to trusted_projects in {visible(str(user_config_path()))}"
