"""Permission rules: allow, ask or deny a tool call, before it runs.

A decision comes from, in order: the sandbox tier (read-only denies every tool that writes,
commands aside: the OS sandbox confines those), the tool's default (read-only tools allow,
writing tools allow inside the workspace, `run_command` and tools marked `needs_approval` ask),
the user's rules (per tool, and per argv prefix for commands: the longest prefix that matches
wins), then the project's rules, which can only make it stricter.
An "ask" the user has answered "always" earlier in the session becomes an allow.

A write to a place that runs code later (`.git`, `.reins`, `.envrc`, ...: see
`reins.sandbox._code_paths`) asks a person each time: no rule, "always" answer or blanket yes allows
it, though a rule may still deny it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, field_validator

from ..core._approval import Decision, Ruling
from ._commands import Argv, simple_commands


class Effects(Protocol):
    """What a tool declares about itself, all a rule judges (`reins.tools.Tool` has these)."""

    @property
    def name(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def needs_approval(self) -> bool: ...
    @property
    def command_arg(self) -> str | None: ...


_STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


class PermissionRules(BaseModel):
    """One file's rules: `tools` by tool name, `commands` by argv prefix (`"git push"`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: dict[str, Decision] = {}
    commands: dict[str, Decision] = {}

    @field_validator("commands")
    @classmethod
    def _prefixes_parse(cls, commands: dict[str, Decision]) -> dict[str, Decision]:
        for key in commands:
            try:
                words = shlex.split(key)
            except ValueError as exc:
                raise ValueError(f"command rule {key!r} does not parse: {exc}") from None
            if not words:
                raise ValueError("a command rule needs at least one word")
        return commands

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> PermissionRules:
        """From a config file's `[permissions]` table: tool names, and a `commands` table."""
        tools = {k: v for k, v in table.items() if k != "commands"}
        return cls.model_validate({"tools": tools, "commands": table.get("commands", {})})

    def prefixes(self) -> list[tuple[Argv, Decision, str]]:
        """The command rules as argv prefixes, each with its decision and the rule as written."""
        return [(tuple(shlex.split(key)), d, key) for key, d in self.commands.items()]


@dataclass(frozen=True, slots=True)
class _Vote:
    decision: Decision
    rule: str
    explicit: bool  # a rule someone wrote, not a default

    def stricter(self, other: _Vote) -> _Vote:
        return other if _STRICTNESS[other.decision] > _STRICTNESS[self.decision] else self


class Permissions:
    """Judges tool calls against the user's and the project's rules."""

    def __init__(
        self,
        *,
        user: PermissionRules | None = None,
        project: PermissionRules | None = None,
        read_only: bool = False,
    ) -> None:
        self.user = user or PermissionRules()
        self.project = project or PermissionRules()
        self.read_only = read_only
        """The sandbox tier is read-only: tools that write are denied."""
        self._user_prefixes = self.user.prefixes()
        self._project_prefixes = self.project.prefixes()

    def tiered(self, *, read_only: bool) -> Permissions:
        """These rules under a sandbox tier: read-only denies every tool that writes."""
        if read_only == self.read_only:
            return self
        return Permissions(user=self.user, project=self.project, read_only=read_only)

    def allows(self, tool: Effects) -> bool:
        """True if a default allows every call of `tool`: no rule names it, it does not ask."""
        ruled = _rule(self.user.tools, tool.name) or _rule(self.project.tools, tool.name)
        return not (tool.needs_approval or tool.command_arg or ruled) and (
            tool.read_only or not self.read_only
        )

    def judge(
        self,
        tool: Effects,
        arguments: Mapping[str, Any],
        grants: Set[str],
        *,
        runs_code: Sequence[str] = (),
    ) -> Ruling | None:
        """The ruling on a call; None when a default allows it (nothing worth recording).
        `runs_code`: why the call's writes run code later (each names its path), which makes
        the ruling a person's to give, each time (unless a rule denies it)."""
        if self.allows(tool) and not runs_code:
            return None
        if self.read_only and not (tool.read_only or tool.command_arg):  # commands: the OS
            return Ruling("deny", "sandbox read-only: tools that write are denied", tool.name)
        vote = _Vote(*_default(tool), explicit=False)
        if (rule := _rule(self.user.tools, tool.name)) is not None:
            key, own = rule
            vote = _Vote(own, f'permissions.{_key(key)} = "{own}"', explicit=True)
        strict = _Vote("allow", "", explicit=False)
        if (rule := _rule(self.project.tools, tool.name)) is not None:
            key, own = rule
            strict = _Vote(own, f'permissions.{_key(key)} = "{own}" (project)', explicit=True)
        grant = tool.name
        command = arguments.get(tool.command_arg) if tool.command_arg else None
        if isinstance(command, str):
            parts = simple_commands(command)
            if parts is None:  # not judgeable: the tool's own decision stands
                grant = f"{tool.name}: {command}"
            else:
                shown = " ".join(parts[0][:2]) if len(parts) == 1 else command
                grant = f"{tool.name}: {shown}"
                votes = [_match(self._user_prefixes, argv, vote, "") for argv in parts]
                vote = votes[0]
                for other in votes[1:]:  # a line is as strict as its strictest command
                    vote = vote.stricter(other)
                for argv in parts:
                    strict = strict.stricter(
                        _match(self._project_prefixes, argv, strict, " (project)")
                    )
        vote = vote.stricter(strict)
        if runs_code and vote.decision != "deny":
            why = f"{'; '.join(runs_code)}; each write there needs a person's yes"
            return Ruling("ask", why, "", each_time=True)
        if vote.decision == "ask" and grant in grants:
            return Ruling("allow", f"allowed for this session ({grant})", grant, by="session")
        if vote.decision == "allow" and not vote.explicit:
            return None
        return Ruling(vote.decision, vote.rule, grant)


def _rule(rules: Mapping[str, Decision], name: str) -> tuple[str, Decision] | None:
    """The rule for a tool: its name, else the longest pattern (`*` any characters, as in
    `"github__*"`) that matches it."""
    if (decision := rules.get(name)) is not None:
        return name, decision
    best: tuple[str, Decision] | None = None
    for key, decision in rules.items():
        if "*" in key and fnmatchcase(name, key) and (best is None or len(key) > len(best[0])):
            best = key, decision
    return best


def _key(key: str) -> str:
    """A TOML key as written: bare if it can be."""
    return key if key.replace("_", "a").replace("-", "a").isalnum() else f'"{key}"'


def _default(tool: Effects) -> tuple[Decision, str]:
    if tool.read_only:
        return "allow", "default: read-only tools allow"
    if tool.needs_approval or tool.command_arg:
        return "ask", f"default: {tool.name} asks"
    return "allow", "default: tools that write allow inside the workspace"


def _match(
    prefixes: list[tuple[Argv, Decision, str]], argv: Argv, base: _Vote, where: str
) -> _Vote:
    """The vote of the longest prefix rule that matches `argv` (ties: the stricter), else
    `base`. An allow must name the program as it is written; ask and deny also match
    it by its base name (`/usr/bin/rm` is `rm`), so a path cannot dodge them."""
    best: tuple[int, int] = (0, -1)
    found = base
    program = argv[0].rsplit("/", 1)[-1]
    for prefix, decision, key in prefixes:
        n = len(prefix)
        if n > len(argv) or argv[1:n] != prefix[1:]:
            continue
        if prefix[0] != argv[0] and (decision == "allow" or prefix[0] != program):
            continue
        rank = (n, _STRICTNESS[decision])
        if rank > best:
            best = rank
            found = _Vote(decision, f'permissions.commands."{key}" = "{decision}"{where}', True)
    return found
