"""The verification gate: commands that must pass before a final answer ends the run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..core._errors import ReinsError
from ..core._policy import CONTINUE, OnFinal, Policy, Stop, Verified
from ..core._state import RunState
from ..core._stop import StopReason
from ..sandbox import SandboxPolicy
from ._stop_hooks import refuse, tail


class CheckCommands(Policy):
    """When the model claims it is done, each command (`pytest -q`, ...) runs in the OS sandbox
    in the workspace, in order. The first that fails rejects the answer with its command, exit
    code and output tail; if all pass, each one's command, exit code and output tail is
    recorded (a notice) before the run finishes. Rejections are capped as for stop hooks."""

    @property
    def name(self) -> str:
        return "Checks"  # as the log has always named the gate's rejections and notices

    def __init__(
        self,
        commands: Sequence[str],
        *,
        workspace: str | Path = ".",
        sandbox: SandboxPolicy | None = None,
        protected: Sequence[Path] = (),
        timeout: float | None = None,
        max_rejections: int = 3,
    ) -> None:
        self.commands = tuple(commands)
        self.workspace = workspace
        self.sandbox = sandbox or SandboxPolicy()
        self.protected = tuple(protected)
        self.timeout = timeout
        self.max_rejections = max_rejections

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        from ..sandbox import run_process  # the runner loads on first use

        if not self.commands:
            return CONTINUE
        evidence: list[str] = []
        for command in self.commands:
            try:
                result = await run_process(
                    command,
                    workspace=self.workspace,
                    policy=self.sandbox,
                    timeout=self.timeout,
                    protected=self.protected,
                )
            except ReinsError as exc:  # no sandbox here, a workspace gone: not the model's fault
                return Stop(StopReason.ERROR, f"check `{command}` could not run: {exc}")
            output = tail(result.output) or "(no output)"
            if result.exit_code == 0:
                evidence.append(f"check `{command}` passed (exit 0); output tail:\n{output}")
                continue
            status = (
                f"timed out after {result.timeout:g} s"
                if result.timed_out
                else f"exit {result.exit_code}"
            )
            reason = f"check `{command}` failed ({status}); output tail:\n{output}"
            return refuse(state, reason, self.max_rejections)
        return Verified(tuple(evidence))
