"""Trusting a project's commands: the checks and stop hooks its `reins.toml` sets run, unasked,
whenever the agent says it is done, so they run only once the user trusts them."""

from __future__ import annotations

import json
import sys
import unicodedata

from rich.console import Console
from rich.text import Text

from .._config import Config, ProjectCommands, user_config_path
from .._errors import UsageError

ANSWERS = {"y": True, "yes": True, "n": False, "no": False, "": False}


def trusted(
    config: Config, *, trust_project: bool, console: Console, checks: bool = True
) -> Config:
    """The config with the project file's commands if the user trusts them: in their config
    (already applied), by `--trust-project`, or by answering yes at the terminal. With no
    terminal, an untrusted project's commands are an error rather than skipped: a check left
    out would let a run pass unverified. `checks=False`: only the stop hooks matter (a resume
    takes its checks from the run's log)."""
    held = config.project_commands
    commands = held.commands(checks=checks) if held is not None else []
    if held is None or not commands:
        return config
    if trust_project:
        return config.trusting_project()
    if not sys.stdin.isatty():
        raise UsageError(_refusal(held, commands))
    if _ask(console, held, commands):
        return config.trusting_project()
    console.print(Text("Running without the project's checks and stop hooks."))
    return config


def _ask(console: Console, held: ProjectCommands, commands: list[tuple[str, str]]) -> bool:
    """Shows the exact commands and asks once; the default is no. End of input: nobody is
    there to answer, as with no terminal."""
    console.print(
        Text(
            f"\n{visible(str(held.path))} sets commands that run, unasked, when the agent "
            "says it is done (in the sandbox):",
            "bold",
        )
    )
    width = max(len(kind) for kind, _ in commands)
    for kind, command in commands:
        console.print(Text(f"  {kind:<{width}}  {visible(command)}"))
    console.print(
        Text(
            f"(--trust-project runs them without asking; to trust this project for good, "
            f"add {_trust_entry(held)})"
        )
    )
    while True:
        console.print(Text("Run them? [y]es, [n]o: run without them (default no): "), end="")
        line = sys.stdin.readline()  # before the run starts: nothing else reads stdin yet
        if not line:
            console.print()
            raise UsageError(_refusal(held, commands))
        answer = ANSWERS.get(line.strip().lower())
        if answer is not None:
            return answer


def _refusal(held: ProjectCommands, commands: list[tuple[str, str]]) -> str:
    listed = "; ".join(f"{kind} `{visible(command)}`" for kind, command in commands)
    return (
        f"{visible(str(held.path))} sets commands that run when the agent says it is done "
        f"({listed}), and this project is not trusted: to run them, pass --trust-project, or "
        f"add {_trust_entry(held)}"
    )


def _trust_entry(held: ProjectCommands) -> str:
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
