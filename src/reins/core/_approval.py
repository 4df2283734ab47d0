"""Asking a person: how a rule judged a call, the request a run records, the answer, and who
gives it (the rules themselves are `reins.permissions`).

One word per way to answer, the same in Python, the config and the CLI (`APPROVAL_MODES`):
`"ask"` a person in this process (the CLI's terminal prompt, a function of yours, sync or
async); `"pause"` the run ends `waiting` and a later process answers with
`Agent.resume(run_id, approvals=...)`; `"deny"` nobody (headless: the call is denied and the
model is told so); `"allow"` every request yes (`reins run --yes`): the sandbox still holds,
and a write to a place that runs code later (`each_time`) is denied, as with nobody to ask.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ._messages import ToolCall

Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Ruling:
    """How a call was judged: the decision, the rule that made it, and what an "always" answer
    would allow for the rest of the session."""

    decision: Decision
    rule: str
    grant: str
    by: Literal["rule", "session"] = "rule"
    each_time: bool = False
    """Only a person's yes to this very call allows it: no rule, no "always" (`grant` is
    empty), no blanket yes (`approval="allow"`, `--yes`)."""


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """A tool call that waits for a yes or no."""

    session_id: str
    run_id: str
    call: ToolCall
    rule: str
    """The rule that asked."""
    grant: str
    """What "always" allows for the rest of the session (a tool, or a command prefix)."""
    command_arg: str | None = None
    each_time: bool = False
    """A write to a place that runs code later (`rule` names it): only a yes to this call
    allows it; "always" is not recorded, and a blanket yes does not answer it."""

    def describe(self) -> str:
        """The exact call, as the person should see it."""
        command = self.call.arguments.get(self.command_arg) if self.command_arg else None
        if isinstance(command, str):
            return command
        return f"{self.call.name} {json.dumps(self.call.arguments, ensure_ascii=False)}"


@dataclass(frozen=True)
class Approval:
    """An answer: allowed or not; `always` allows the request's grant for the session."""

    allowed: bool
    always: bool = False
    by: Literal["user", "auto", "headless"] = "user"


ALLOW = Approval(True)
ALLOW_ALWAYS = Approval(True, always=True)
DENY = Approval(False)

ApprovalHandler: TypeAlias = Callable[
    [ApprovalRequest], Approval | bool | Awaitable[Approval | bool]
]
"""Answers a request: True/False or an `Approval` (for "always"), sync or async."""

Approver: TypeAlias = Callable[[ApprovalRequest], Awaitable[Approval | None]]
"""What the loop calls; None means: pause the run until someone answers."""

ApprovalMode: TypeAlias = Literal["ask", "allow", "deny", "pause"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("ask", "allow", "deny", "pause")


def approver(handler: ApprovalHandler | ApprovalMode, terminal: ApprovalHandler) -> Approver:
    """The loop's view of an `Agent(approval=...)` setting; `terminal` answers `"ask"`."""
    match handler:
        case "ask":
            handler = terminal
        case "deny":
            return _fixed(Approval(False, by="headless"))
        case "allow":
            return _yes_but_code
        case "pause":
            return _fixed(None)
        case str():
            words = ", ".join(repr(m) for m in APPROVAL_MODES)
            raise ValueError(f"approval {handler!r}: use a function or one of {words}")

    function = handler

    async def ask(request: ApprovalRequest) -> Approval | None:
        answer = function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer if isinstance(answer, Approval) else Approval(bool(answer))

    return ask


async def _yes_but_code(request: ApprovalRequest) -> Approval:
    """Yes to all, as with nobody there for a write that runs code later: a blanket yes is
    not a person's look at what git or an editor will run."""
    return Approval(False, by="headless") if request.each_time else Approval(True, by="auto")


def _fixed(answer: Approval | None) -> Approver:
    async def ask(request: ApprovalRequest) -> Approval | None:
        return answer

    return ask


def denial(tool: str, *, by: str, rule: str) -> str:
    """What the model is told about a call it may not make."""
    match by:
        case "user":
            return f"User denied '{tool}'. Do not repeat the call; choose another way or stop."
        case "headless":
            return (
                f"User denied '{tool}': it needs a person's approval ({rule}) and nobody can be "
                "asked in this run. Do not repeat the call; do without it."
            )
        case _:
            return f"Denied '{tool}' by the permission rule {rule}. Do not repeat the call."
