"""Trusting a project: what its `reins.toml` sets that acts for it — checks and stop hooks,
which run unasked whenever the agent says it is done, and provider settings, which decide
where the model's requests go and which key they carry — takes effect only once the user
trusts the project."""

from __future__ import annotations

import json
import sys
import unicodedata

from rich.console import Console
from rich.text import Text

from .._config import Config, Untrusted, user_config_path
from .._errors import UsageError

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
        raise UsageError(_refusal(held, items))
    if _ask(console, held, items):
        return config.trusting_project()
    console.print(Text(f"Running without the project's {_what(items)}."))
    return config.distrusting_project()


def _ask(console: Console, held: Untrusted, items: Items) -> bool:
    """Shows exactly what the file sets and asks once; the default is no. End of input: nobody
    is there to answer, as with no terminal."""
    commands, settings = _split(items)
    servers = _servers(items)
    what = []
    if len(servers) < len(commands):
        what.append("commands that run, unasked, when the agent says it is done (in the sandbox)")
    if servers:
        what.append("MCP servers started with each run (outside the sandbox), whose tools it calls")
    if settings:
        what.append(
            "where the model's requests go (with your prompts and what the agent reads) and "
            "which of your keys they carry"
        )
    console.print(Text(f"\n{visible(str(held.path))} sets {' and '.join(what)}:", "bold"))
    width = max(len(kind) for kind, _ in items)
    for kind, text in items:
        console.print(Text(f"  {kind:<{width}}  {visible(text)}"))
    console.print(
        Text(
            f"(--trust-project {'runs' if not settings else 'uses'} them without asking; to "
            f"trust this project for good, add {_trust_entry(held)})"
        )
    )
    verb = "Run" if not settings else "Use"
    while True:
        console.print(Text(f"{verb} them? [y]es, [n]o: run without them (default no): "), end="")
        line = sys.stdin.readline()  # before the run starts: nothing else reads stdin yet
        if not line:
            console.print()
            raise UsageError(_refusal(held, items))
        answer = ANSWERS.get(line.strip().lower())
        if answer is not None:
            return answer


def _refusal(held: Untrusted, items: Items) -> str:
    commands, settings = _split(items)
    servers = _servers(items)
    hooks = [item for item in commands if item not in servers]
    what = []
    if hooks:
        listed = "; ".join(f"{kind} `{visible(command)}`" for kind, command in hooks)
        what.append(f"commands that run when the agent says it is done ({listed})")
    if servers:
        listed = "; ".join(f"`{visible(server)}`" for _, server in servers)
        what.append(f"MCP servers started with each run ({listed})")
    if settings:
        listed = "; ".join(visible(setting) for _, setting in settings)
        what.append(f"where the model's requests go and which key they carry ({listed})")
    return (
        f"{visible(str(held.path))} sets {' and '.join(what)}, and this project is not "
        f"trusted: to {'run' if not settings else 'use'} them, pass --trust-project, or add "
        f"{_trust_entry(held)}"
    )


def _split(items: Items) -> tuple[Items, Items]:
    """The commands, and the settings."""
    return [i for i in items if i[0] != "setting"], [i for i in items if i[0] == "setting"]


def _servers(items: Items) -> Items:
    return [i for i in items if i[0] == "MCP server"]


def _what(items: Items) -> str:
    commands, settings = _split(items)
    parts = ["checks", "stop hooks"] if len(_servers(items)) < len(commands) else []
    parts += ["MCP servers"] if _servers(items) else []
    parts += ["model settings"] if settings else []
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]


def _trust_entry(held: Untrusted) -> str:
    """Where the user trusts the project: its folder, as a TOML string, in their config."""
    folder = json.dumps(str(held.path.parent), ensure_ascii=False)
    return f"{visible(folder)} to trusted_projects in {visible(str(user_config_path()))}"


def visible(text: str) -> str:
    """`text` with control and format characters (a newline, an escape sequence that would
    rewrite the screen, a right-to-left override) shown as escapes: what is asked is what runs."""
    if text.isprintable():
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        else ch
        for ch in text
    )
