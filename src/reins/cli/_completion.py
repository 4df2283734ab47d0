"""`reins --show-completion SHELL` and `--install-completion SHELL`: typer's completion scripts
and installers, for the shell named (typer's own options took the shell running reins, whatever
was named). The script asks `reins` itself at each Tab (`_REINS_COMPLETE=complete_bash` ...),
which answers with typer's completion classes and the completers of `_complete`."""

from __future__ import annotations

import os
from typing import Any

import typer
from typer._click.shell_completion import CompletionItem, add_completion_class, split_arg_string
from typer._completion_classes import BashComplete, completion_init
from typer._completion_shared import _get_shell_name, get_completion_script, install

from ..core._errors import UsageError
from ._console import _one_line_errors, out

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
FLAGS = ("--show-completion", "--install-completion")

completion_init()  # typer's classes answer for each shell, as its scripts expect


def shell_named(args: list[str]) -> list[str]:
    """`args`, with a completion flag given no shell made `--flag=`: the shell running reins
    (so `reins --show-completion` alone works as it did)."""
    given = list(args)
    for i, arg in enumerate(given):
        if arg in FLAGS and (i + 1 == len(given) or given[i + 1].startswith("-")):
            given[i] = f"{arg}="
    return given


def show_completion(ctx: typer.Context, param: Any, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    shell, prog, variable = _named(ctx, value)
    out.print(
        get_completion_script(prog_name=prog, complete_var=variable, shell=shell),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit()


def install_completion(ctx: typer.Context, param: Any, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    shell, prog, variable = _named(ctx, value)
    with _one_line_errors():
        try:
            shell, path = install(shell=shell, prog_name=prog, complete_var=variable)
        except OSError as exc:
            raise UsageError(f"could not install {shell} completion: {exc}") from None
    out.print(f"{shell} completion installed in {path}; it takes effect in a new shell")
    raise typer.Exit()


def shells(incomplete: str) -> list[str]:
    return [shell for shell in SHELLS if shell.startswith(incomplete)]


def _named(ctx: typer.Context, value: str) -> tuple[str, str, str]:
    """The shell (named, else the one running reins), the program's name and the variable
    its script sets to ask for completions."""
    with _one_line_errors():
        shell = value.strip().lower() or _running_shell()
        if shell not in SHELLS:
            raise UsageError(
                f"reins completes in {', '.join(SHELLS)}, not {value!r}: name one of them"
            )
    prog = ctx.find_root().info_name or "reins"
    return shell, prog, "_{}_COMPLETE".format(prog.replace("-", "_").upper())


def _running_shell() -> str:
    name = _get_shell_name()  # shellingham's guess, from the processes above this one
    if name is None:
        raise UsageError(
            "which shell runs reins could not be told: name it, e.g. --show-completion zsh"
        )
    return name


class _Bash(BashComplete):
    """bash splits a word at `:` and `=` (COMP_WORDBREAKS) before the script sees it:
    `openai:gpt` comes as `openai`, `:`, `gpt`. The pieces are joined back for reins to
    complete, and each value offered loses what comes before bash's own word, which is all
    bash replaces."""

    def get_completion_args(self) -> tuple[list[str], str]:
        words = split_arg_string(os.environ["COMP_WORDS"])
        current = int(os.environ["COMP_CWORD"])
        words = [*words[: current + 1], *[""] * (current + 1 - len(words))]
        joined: list[str] = []
        glue = False
        for word in words:
            if joined and word and (glue or word in BREAKS):
                joined[-1] += word
            else:
                joined.append(word)
            glue = word in BREAKS
        self._cut = len(joined[-1]) - len(words[-1])
        return joined[1:-1], joined[-1]

    def format_completion(self, item: CompletionItem) -> str:
        return str(item.value)[getattr(self, "_cut", 0) :]


BREAKS = (":", "=")
add_completion_class(_Bash, "bash")
