"""The settings groups of an `Agent` besides its budgets: what an answer must pass (`Checks`),
questions to the user (`Ask`) and child runs (`Subagents`). Each is given whole, or as its main
value alone: `checks=["pytest -q"]`, `ask="pause"`, `subagents=True` or `{"scribe": scribe}`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core._errors import UsageError
from ..core._questions import Asker, AskMode
from ..policies import CommandHook, StopHook

if TYPE_CHECKING:
    from ..subagents import ChildAgent


@dataclass(frozen=True, kw_only=True)
class Checks:
    """What a final answer must pass before it ends the run."""

    commands: Sequence[str] = ()
    """Commands (`pytest -q`, ...) that must pass, in the sandbox and the workspace; a failing
    one rejects the answer with its output tail."""
    stop_hooks: Sequence[StopHook | str] = ()
    """Functions (sync or async) given the run's state and the final answer, returning None to
    accept it or a reason to reject it; or `CommandHook`s (a string is a command): the event
    as JSON on stdin, exit 2 rejects with its message, another failure stops the run."""
    max_rejections: int = 3
    """Final answers rejected (by the commands and stop hooks together) before the next
    rejection ends the run with `missing_evidence`."""

    def __post_init__(self) -> None:
        # Kept as tuples: a group is a value, equal to one given the same lists.
        object.__setattr__(self, "commands", _listed("checks.commands", self.commands))
        object.__setattr__(self, "stop_hooks", _listed("checks.stop_hooks", self.stop_hooks))
        _count("checks.max_rejections", self.max_rejections, least=0)
        if any(not isinstance(c, str) or not c.strip() for c in self.commands):
            raise UsageError(
                "a check is an empty command or not a string: give the command that must pass "
                "before an answer stands (--check 'pytest -q', checks = [...] in the config)"
            )
        for hook in self.stop_hooks:
            if isinstance(hook, str):  # made a CommandHook when a run starts: refused now
                CommandHook(command=hook)


@dataclass(frozen=True, kw_only=True)
class Ask:
    """Who answers the model's `ask_user` (one question a run, about a material choice)."""

    answer: Asker | AskMode
    """A function (sync or async) given a `QuestionRequest`, returning the answer or None
    (dismissed); or `"pause"`: the run ends `waiting`, `result.questions` has it, and
    `resume(run_id, answers={call_id: text})` answers."""
    timeout: float | None = 600.0
    """Seconds to wait for an answer before the model goes on with its default (None: no
    limit)."""

    def __post_init__(self) -> None:
        if not callable(self.answer) and self.answer != "pause":
            raise UsageError(f"ask={self.answer!r}: give a function or 'pause' (None: no ask_user)")
        _seconds("ask.timeout", self.timeout)


@dataclass(frozen=True, kw_only=True)
class Subagents:
    """`spawn_agent`: the model hands a self-contained subtask to a child run and gets back its
    answer and whether it completed (`reins.subagents`, `Agent.as_tool`)."""

    agents: Mapping[str, ChildAgent] = field(default_factory=dict)
    """Named agents (profiles) the model may pick; empty: a copy of this agent (without
    spawn_agent)."""
    max_steps: int = 10
    """The step cap of a spawned copy of this agent (a named one has its own)."""
    timeout: float = 300.0
    """A spawned child's time budget, in seconds."""

    def __post_init__(self) -> None:
        if not isinstance(self.agents, Mapping):
            raise UsageError(f"subagents={self.agents!r}: give a dict of named agents")
        _count("subagents.max_steps", self.max_steps, least=1)
        _seconds("subagents.timeout", self.timeout, optional=False)


def as_checks(given: Checks | Sequence[str]) -> Checks:
    """`checks=` as a `Checks`: a list is its commands."""
    return given if isinstance(given, Checks) else Checks(commands=_listed("checks", given))


def as_ask(given: Ask | Asker | AskMode | None) -> Ask | None:
    """`ask=` as an `Ask`, or None: nobody answers (no `ask_user`)."""
    return given if isinstance(given, Ask) or given is None else Ask(answer=given)


def as_subagents(given: Subagents | bool | Mapping[str, ChildAgent]) -> Subagents | None:
    """`subagents=` as a `Subagents`, or None when off."""
    if isinstance(given, Subagents):
        return given
    if isinstance(given, bool):
        return Subagents() if given else None
    return Subagents(agents=given)


def _list(name: str, value: object) -> None:
    """A string where a list goes would be read letter by letter."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise UsageError(f"{name}={value!r}: give a list, as in {name.split('.')[-1]}=[...]")


def _listed(name: str, value: Any) -> tuple[Any, ...]:
    _list(name, value)
    return tuple(value)


def _count(name: str, value: object, *, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name}={value!r}: give a whole number")
    if value < least:
        raise UsageError(f"{name}={value!r}: it must be {least} or more")


def _seconds(name: str, value: object, *, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise UsageError(f"{name}={value!r}: give a number of seconds, more than 0")
