"""Stop hooks: functions or commands that may veto a final answer with a reason for the model.

A hook accepts (None, or a command's exit 0) or rejects with a reason (a string, or a command's
exit 2 with a message). A function that raises, or a command that exits otherwise or times
out, is a broken hook: the run stops with `error` (resumable once the hook is fixed) rather
than let an answer through unchecked. After `max_rejections` rejections in a run (counted from
its events, so a resume keeps the count), the next one ends it with `missing_evidence`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core._errors import UsageError
from ..core._policy import CONTINUE, OnFinal, Policy, Reject, Stop
from ..core._state import RunState
from ..core._stop import StopReason
from ..sandbox import SandboxPolicy

StopHookFunction = Callable[[RunState, str], str | Awaitable[str | None] | None]
"""Given the run's state and the final answer: None to accept, a reason to reject."""

HOOK_EXIT_REJECT = 2
"""The exit code by which a command hook rejects (as Claude Code's Stop hook does)."""
TAIL = 2000
"""Characters of a command's output kept for the model and the log."""


@dataclass(frozen=True, kw_only=True)
class CommandHook:
    """A shell command run in the agent's sandbox, in the workspace, with the event as JSON on
    its standard input. Exit 0 accepts (unless it prints `{"decision": "block", "reason":
    ...}`); exit 2 rejects with its stderr (else its stdout) as the reason; anything else is a
    broken hook."""

    command: str
    timeout: float = 60.0
    """Seconds (cut to the sandbox's maximum)."""

    def __post_init__(self) -> None:
        if not self.command.strip():  # it would run nothing and accept every answer, unchecked
            raise UsageError("a stop hook is an empty command: give the command to run")
        if not self.timeout > 0:  # each answer would end the run `error`, after all its work
            raise UsageError(
                f"stop hook `{self.command}`: timeout={self.timeout!r}: it is seconds, more than 0"
            )


StopHook = StopHookFunction | CommandHook


class _HookFailed(Exception):
    """A hook that neither accepted nor rejected."""


class StopHooks(Policy):
    """Asks each hook, in order, whether the final answer may end the run."""

    def __init__(
        self,
        hooks: Sequence[StopHook | str],
        *,
        workspace: str | Path = ".",
        sandbox: SandboxPolicy | None = None,
        protected: Sequence[Path] = (),
        max_rejections: int = 3,
    ) -> None:
        self.hooks = [CommandHook(command=h) if isinstance(h, str) else h for h in hooks]
        self.workspace = workspace
        self.sandbox = sandbox or SandboxPolicy()
        self.protected = tuple(protected)
        self.max_rejections = max_rejections

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        for hook in self.hooks:
            name = _name(hook)
            reason: object
            try:
                if isinstance(hook, CommandHook):
                    reason = await self._command(hook, state, answer)
                else:
                    given = hook(state, answer)
                    reason = await given if inspect.isawaitable(given) else given
            except Exception as exc:  # a broken hook never lets an answer through unchecked
                detail = (
                    str(exc) if isinstance(exc, _HookFailed) else f"{type(exc).__name__}: {exc}"
                )
                return Stop(StopReason.ERROR, f"stop hook {name} failed: {detail}")
            if reason is not None and not isinstance(reason, str):
                return Stop(
                    StopReason.ERROR,
                    f"stop hook {name} returned {type(reason).__name__}, not None or a reason",
                )
            if reason:
                return refuse(state, f"stop hook {name}: {reason}", self.max_rejections)
        return CONTINUE

    async def _command(self, hook: CommandHook, state: RunState, answer: str) -> str | None:
        from ..sandbox import run_process  # the runner loads on first use

        event = {
            "hook_event_name": "Stop",
            "session_id": state.session_id,
            "run_id": state.run_id,
            "step": state.step,
            "workspace": state.config.workspace,
            "answer": answer,
            "rejections": state.answer_rejections,
            "stop_hook_active": state.answer_rejections > 0,
        }
        result = await run_process(
            hook.command,
            workspace=self.workspace,
            policy=self.sandbox,
            timeout=hook.timeout,
            protected=self.protected,
            stdin=json.dumps(event).encode(),
            stderr="separate",
        )
        # As in Claude Code: a reason or an error is stderr (or, where a hook wrote none there,
        # stdout, so a hook that echoes its reason still works); exit 0 with the JSON reply
        # {"decision": "block", "reason": ...} rejects too.
        stdout = result.output.strip()
        if result.exit_code == 0:
            return _blocked(stdout)
        output = tail(result.stderr or "") or tail(stdout)
        if result.exit_code == HOOK_EXIT_REJECT:
            return output or "rejected (exit 2, no message)"
        status = (
            f"timed out after {result.timeout:g} s"
            if result.timed_out
            else (f"exit {result.exit_code}")
        )
        raise _HookFailed(f"{status}" + (f": {output}" if output else ""))


def _blocked(stdout: str) -> str | None:
    """The reason of a JSON reply that blocks the answer; None for any other output."""
    if not stdout.startswith("{"):
        return None
    try:
        reply = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(reply, dict) or reply.get("decision") != "block":
        return None
    return tail(str(reply.get("reason") or "")) or "rejected (decision: block, no reason)"


def refuse(state: RunState, reason: str, max_rejections: int) -> Reject | Stop:
    """Reject the final answer, or end the run once it has been rejected `max_rejections`
    times already (rejections by any policy count)."""
    count = state.answer_rejections
    if count >= max_rejections:
        return Stop(
            StopReason.MISSING_EVIDENCE,
            f"final answer rejected {count + 1}× (the cap is {max_rejections}); "
            f"last reason: {reason}",
        )
    return Reject(f"Your final answer was not accepted: {reason}\nFix this, then answer again.")


def tail(output: str, limit: int = TAIL) -> str:
    output = output.strip()
    return output if len(output) <= limit else "…" + output[-limit:]


def _name(hook: StopHook) -> str:
    if isinstance(hook, CommandHook):
        return f"`{hook.command}`"
    return getattr(hook, "__name__", None) or repr(hook)
