"""Command hooks around tools and sessions, in the shape Claude Code's hooks have.

Each hook is a shell command run in the agent's sandbox, in the workspace, with the event as
JSON on its standard input, at one of four points (Claude Code's name in brackets):

    before_tool    [PreToolUse]        may block the call (exit 2, or a JSON "deny") with a
                                       reason the model sees, or change its arguments
                                       (`updatedInput`, checked against the tool's schema)
    after_tool     [PostToolUse]       may add a note for the model (exit 2, or a JSON
                                       `decision: "block"` / `additionalContext`)
    session_start  [SessionStart]      may add context (its stdout) before the first model call
    prompt         [UserPromptSubmit]  may add context to the user's prompt, or block it

The tool hooks run for the tools whose names their `matcher` matches (a regular expression,
matched whole; empty or `*`: every tool). A hook that fails — another exit code, a timeout, a
reply that is not JSON where it looks like JSON, arguments its tool refuses — is recorded as
one warning and passed over, as Claude Code passes over a non-blocking error: to block, a hook
exits 2. As in Claude Code, the reply (plain text or JSON) is read from stdout; the reason of
exit 2 and the error of a failed hook from stderr (from stdout where stderr is empty), so a hook
may log to stderr as it works. Each hook is its own policy, so the loop calls only the hook
points a run's hooks use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core._errors import ReinsError, UsageError
from ..core._messages import AssistantMessage, ToolCall, ToolResultMessage
from ..core._policy import (
    CONTINUE,
    AfterTools,
    BeforeRound,
    BeforeTool,
    Continue,
    Inject,
    Policy,
    Reject,
    Rewrite,
    Stop,
)
from ..core._state import RunState
from ..core._stop import StopReason
from ..sandbox import SandboxPolicy
from ._stop_hooks import HOOK_EXIT_REJECT, tail

HookEvent = Literal["before_tool", "after_tool", "session_start", "prompt"]
HOOK_EVENTS: dict[str, str] = {
    "before_tool": "PreToolUse",
    "after_tool": "PostToolUse",
    "session_start": "SessionStart",
    "prompt": "UserPromptSubmit",
}
"""Each of reins' hook points, and the Claude Code event it corresponds to."""
TOOL_EVENTS = ("before_tool", "after_tool")

Validate = Callable[[str, dict[str, Any]], object]
"""Checks a tool's arguments against its schema; raises `ReinsError` saying what is wrong."""


@dataclass(frozen=True, kw_only=True)
class Hook:
    """A command run at `event` (see the module's docstring), with the event as JSON on its
    standard input; its exit code and its output say what to do: on exit 0 its stdout (plain
    text, or a JSON reply), on exit 2 its stderr (else its stdout)."""

    event: HookEvent
    command: str
    matcher: str = ""
    """The tools it runs for (`before_tool`, `after_tool`): a regular expression matched
    against the whole tool name (`run_command`, `write_file|edit_file`, `mcp__.*`); empty or
    `*`: every tool."""
    timeout: float = 60.0
    """Seconds (cut to the sandbox's maximum)."""

    def __post_init__(self) -> None:
        where = f"hook `{self.command}`"
        if self.event not in HOOK_EVENTS:
            raise UsageError(
                f"{where}: event={self.event!r}: say one of {', '.join(HOOK_EVENTS)} "
                f"(Claude Code's {', '.join(HOOK_EVENTS.values())})"
            )
        if not self.command.strip():
            raise UsageError(f"a {self.event} hook is an empty command: give the command to run")
        if not self.timeout > 0:
            raise UsageError(f"{where}: timeout={self.timeout!r}: it is seconds, more than 0")
        if self.matcher and self.event not in TOOL_EVENTS:
            raise UsageError(
                f"{where}: a matcher picks tools; a {self.event} hook runs for no tool: "
                "leave the matcher out"
            )
        try:
            re.compile("" if self.matcher == "*" else self.matcher)
        except re.error as exc:
            raise UsageError(
                f"{where}: matcher {self.matcher!r} is not a regular expression ({exc}); "
                "e.g. 'run_command' or 'write_file|edit_file'"
            ) from None

    def matches(self, tool: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        return re.fullmatch(self.matcher, tool) is not None

    @property
    def label(self) -> str:
        return f"{self.event} hook `{self.command}`"


class _HookFailed(Exception):
    """A hook that neither went on, nor blocked, nor replied as the event allows."""


@dataclass(frozen=True)
class _Reply:
    blocked: bool
    """Exit 2."""
    text: str
    """The tail of what it said: exit 2, its stderr (else stdout); exit 0, its stdout when
    that is not a JSON reply."""
    data: dict[str, Any]
    """Its JSON reply (empty: none)."""

    def specific(self, key: str) -> Any:
        specific = self.data.get("hookSpecificOutput")
        return specific.get(key) if isinstance(specific, dict) else None

    def context(self) -> str:
        """What it adds for the model: `additionalContext`, or its plain output."""
        if self.data:
            added = self.specific("additionalContext")
            return added.strip() if isinstance(added, str) else ""
        return self.text


class CommandHookPolicy(Policy):
    """What the four kinds of hook share: running the command and reading its reply."""

    def __init__(
        self,
        hook: Hook,
        *,
        workspace: str | Path = ".",
        sandbox: SandboxPolicy | None = None,
        protected: Sequence[Path] = (),
    ) -> None:
        self.hook = hook
        self.workspace = workspace
        self.sandbox = sandbox or SandboxPolicy()
        self.protected = tuple(protected)

    @property
    def name(self) -> str:
        return self.hook.label

    async def _ask(self, state: RunState, fields: dict[str, Any]) -> _Reply:
        """Run the command with the event on stdin; `_HookFailed` if it failed."""
        from ..sandbox import run_process  # the runner loads on first use

        event = {
            "hook_event_name": HOOK_EVENTS[self.hook.event],
            "reins_event": self.hook.event,
            "session_id": state.session_id,
            "run_id": state.run_id,
            "cwd": state.config.workspace,
            "step": state.step,
            **fields,
        }
        try:
            result = await run_process(
                self.hook.command,
                workspace=self.workspace,
                policy=self.sandbox,
                timeout=self.hook.timeout,
                protected=self.protected,
                stdin=json.dumps(event).encode(),
                stderr="separate",
            )
        except ReinsError as exc:  # no sandbox here, a workspace gone
            raise _HookFailed(f"could not run: {exc}") from None
        # As in Claude Code: the reply is stdout; a reason or an error is stderr (or, where a
        # hook wrote none there, stdout, so a hook that echoes its reason still works).
        stdout = result.output.strip()
        said = tail(result.stderr or "") or tail(stdout)
        if result.exit_code not in (0, HOOK_EXIT_REJECT):
            status = (
                f"timed out after {result.timeout:g} s"
                if result.timed_out
                else f"exit {result.exit_code}"
            )
            raise _HookFailed(status + (f": {said}" if said else ""))
        if result.exit_code == HOOK_EXIT_REJECT:
            return _Reply(True, said, {})
        if not stdout.startswith("{"):
            return _Reply(False, tail(stdout), {})
        if result.bytes_cut:
            raise _HookFailed(
                f"its JSON reply is too long to read whole ({result.bytes_cut} bytes cut from "
                "its middle): make it shorter"
            )
        try:
            data = json.loads(stdout)
        except ValueError as exc:
            raise _HookFailed(f"its reply is not JSON ({exc}): {tail(stdout)}") from None
        if not isinstance(data, dict):
            raise _HookFailed(f"its reply is JSON but not an object: {tail(stdout)}")
        return _Reply(False, "", data)

    def _failed(self, exc: _HookFailed, what: str = "") -> Continue:
        return Continue(f"{self.name} failed{what} and was passed over: {exc}")


class BeforeToolHook(CommandHookPolicy):
    """Before each call of a matching tool: block it (exit 2, or `permissionDecision:
    "deny"`) with a reason the model sees, change its arguments (`updatedInput`, checked
    against the tool's schema), or let it go on to the permission rules (anything else:
    `allow` and `ask` do not bypass them). Tells the model, after the step, which of its calls
    ran with changed arguments."""

    def __init__(self, hook: Hook, *, validate: Validate | None = None, **where: Any) -> None:
        super().__init__(hook, **where)
        self.validate = validate

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        if not self.hook.matches(call.name):
            return CONTINUE
        fields = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}
        try:
            reply = await self._ask(state, fields)
        except _HookFailed as exc:
            return self._failed(exc, f" on {call.name} ({call.id})")
        if reply.blocked:
            return self._block(reply.text or "blocked (exit 2, no message)")
        decision = reply.specific("permissionDecision")
        if decision == "deny" or reply.data.get("decision") == "block":
            reason = reply.specific("permissionDecisionReason") or reply.data.get("reason")
            return self._block(str(reason or "denied (no reason given)"))
        changed = reply.specific("updatedInput")
        if changed is None:
            return CONTINUE
        if not isinstance(changed, dict):
            what = type(changed).__name__
            failed = _HookFailed(f"its updatedInput is a {what}, not an object")
            return self._failed(failed, f" on {call.name} ({call.id})")
        if self.validate is not None:
            try:
                self.validate(call.name, changed)
            except ReinsError as exc:
                return self._failed(
                    _HookFailed(
                        f"its updatedInput does not fit the tool, so the call runs as the "
                        f"model made it: {exc}"
                    ),
                    f" on {call.name} ({call.id})",
                )
        if changed == call.arguments:
            return CONTINUE
        note = (
            f"changed the arguments of {call.name} ({call.id}) to "
            f"{json.dumps(changed, ensure_ascii=False)}"
        )
        return Rewrite(call.model_copy(update={"arguments": changed}), note)

    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        if not state.changed:  # the usual case: no hook has changed a call of this run
            return CONTINUE
        told = [
            f"A hook ({self.hook.command}) changed the arguments of your {r.name} call "
            f"({r.call_id}) before it ran; its result above is of the call with these "
            f"arguments: {json.dumps(started.call.arguments, ensure_ascii=False)}"
            for r in results
            if (started := state.changed.get(r.call_id)) is not None
            and started.changed_by == self.name
        ]
        return Inject("\n".join(told)) if told else CONTINUE

    def _block(self, reason: str) -> Reject:
        return Reject(f"This call was blocked by a hook ({self.hook.command}): {reason}")


class AfterToolHook(CommandHookPolicy):
    """After a step's tools ran, for each call of a matching tool that ran: a note for the
    model from exit 2 (its output), or a JSON `decision: "block"` (its `reason`) or
    `additionalContext`."""

    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        notes: list[str] = []
        failures: list[str] = []
        calls = {c.id: c for c in _step_calls(state)}
        for result in results:
            if result.call_id not in state.ran or not self.hook.matches(result.name):
                continue  # a call a policy answered, refused or left unrun did not run
            call = calls.get(result.call_id)
            started = state.changed.get(result.call_id)
            arguments = started.call.arguments if started else (call.arguments if call else {})
            fields = {
                "tool_name": result.name,
                "tool_input": arguments,
                "tool_use_id": result.call_id,
                "tool_response": {"content": result.content, "is_error": result.is_error},
            }
            try:
                reply = await self._ask(state, fields)
            except _HookFailed as exc:
                failures.append(f"on {result.name} ({result.call_id}): {exc}")
                continue
            if reply.blocked:
                note = reply.text
            else:
                reason = reply.data.get("reason") if reply.data.get("decision") == "block" else ""
                note = "\n".join(t for t in (str(reason or ""), reply.context()) if t)
                if not reply.data:
                    note = ""  # plain output of exit 0: for the log, not the model
            if note:
                notes.append(
                    f"A hook ({self.hook.command}) on your {result.name} call "
                    f"({result.call_id}): {note}"
                )
        if notes:
            # Rare: another result's run of this hook failed; said too, which is true.
            notes += [f"The hook {self.hook.command} failed {f}" for f in failures]
            return Inject("\n".join(notes))
        if failures:
            return Continue(f"{self.name} failed and was passed over " + "; ".join(failures))
        return CONTINUE


class SessionStartHook(CommandHookPolicy):
    """Before a session's first model call: its output (or a JSON `additionalContext`) is told
    to the model. Exit 2 is a warning for the user (as in Claude Code: it cannot block)."""

    async def before_round(self, state: RunState) -> BeforeRound:
        if state.step or self._mark in state.marks or _answered_before(state) or _child(state):
            return CONTINUE
        try:
            reply = await self._ask(state, {"source": "startup", "model": state.config.model})
        except _HookFailed as exc:
            return self._failed(exc)
        if reply.blocked:
            return Continue(f"{self.name} exited 2: {reply.text or '(no message)'}")
        context = reply.context()
        if not context:
            return CONTINUE
        return Inject(
            f"Context from a session-start hook ({self.hook.command}):\n{context}", mark=self._mark
        )

    @property
    def _mark(self) -> str:
        return f"hook {self.hook.event}: {self.hook.command}"


class PromptHook(SessionStartHook):
    """When a run's prompt (its goal) arrives, before its first model call: its output (or a
    JSON `additionalContext`) is told to the model with the prompt; exit 2, or a JSON
    `decision: "block"`, blocks the prompt: the run ends `refusal` with the reason."""

    async def before_round(self, state: RunState) -> BeforeRound:
        if state.step or self._mark in state.marks or _child(state):
            return CONTINUE
        try:
            reply = await self._ask(state, {"prompt": state.goal})
        except _HookFailed as exc:
            return self._failed(exc)
        if reply.blocked or reply.data.get("decision") == "block":
            reason = reply.text if reply.blocked else str(reply.data.get("reason") or "")
            detail = f"the prompt was blocked by {self.name}: {reason or '(no reason given)'}"
            return Stop(StopReason.REFUSAL, detail)
        context = reply.context()
        if not context:
            return CONTINUE
        return Inject(
            f"Context from a prompt hook ({self.hook.command}):\n{context}", mark=self._mark
        )


_KINDS: dict[str, type[CommandHookPolicy]] = {
    "session_start": SessionStartHook,
    "prompt": PromptHook,
    "after_tool": AfterToolHook,
}


def hook_policies(
    hooks: Sequence[Hook],
    *,
    workspace: str | Path = ".",
    sandbox: SandboxPolicy | None = None,
    protected: Sequence[Path] = (),
    validate: Validate | None = None,
) -> list[Policy]:
    """One policy per hook, in the order given, session-start hooks before prompt hooks (as
    Claude Code fires them)."""
    where: dict[str, Any] = {"workspace": workspace, "sandbox": sandbox, "protected": protected}
    ordered = sorted(hooks, key=lambda h: h.event != "session_start")
    return [
        BeforeToolHook(h, validate=validate, **where)
        if h.event == "before_tool"
        else _KINDS[h.event](h, **where)
        for h in ordered
    ]


def _child(state: RunState) -> bool:
    """A subagent's run: its task is the parent's model's, not a person's prompt, and it
    starts no session of the user's (as in Claude Code; the tool hooks do run in it)."""
    return state.config.parent_run_id is not None


def _answered_before(state: RunState) -> bool:
    """Whether the session had a model reply before this run: not its start, then."""
    return any(type(m) is AssistantMessage for m in state.messages)


def _step_calls(state: RunState) -> tuple[ToolCall, ...]:
    for message in reversed(state.messages):
        if type(message) is AssistantMessage:
            return message.tool_calls
    return ()
