"""Help without typer's type noise: no `<bool>` beside a flag, no `<str>` or `<path>` beside an
option or argument, but the word for what it takes (`--model MODEL`, `--store DIR`, `N`)."""

from __future__ import annotations

from typing import Any

import typer
from typer._click import Command
from typer.core import TyperArgument, TyperOption

WORDS = {"store": "DIR|URL", "workspace": "DIR"}
"""Options whose value is better named than after the option."""


class _Argument(TyperArgument):
    """An argument whose help row is its name (GOAL), with no type beside it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def plain_help(command: Command) -> None:
    """Give each parameter of `command` and its subcommands a metavar that says what it
    takes (a flag takes nothing); one given by its option is kept."""
    context = typer.Context(command)
    for param in [*command.params, command.get_help_option(context)]:
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = _word(param)
        elif isinstance(param, TyperArgument):
            param.__class__ = _Argument  # the one method it changes is display's
            # The usage line adds the brackets and dots of optional and repeated ones.
            param.metavar = (param.metavar or param.name or "value").strip("[].").upper()
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


def _word(option: TyperOption) -> str:
    if option.is_flag or option.count:
        return ""
    name = (option.name or "value").lower()
    if name in WORDS:
        return WORDS[name]
    described = option.type_descriptor
    if described.annotation is int or described.is_ranged:
        return "N"
    return name.upper()
