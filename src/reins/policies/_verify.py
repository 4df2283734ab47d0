"""A model that keeps asking to `verify` when nothing can verify for it is stopped."""

from __future__ import annotations

from ..core._messages import ToolCall, ToolResultMessage
from ..core._policy import CONTINUE, BeforeTool, Policy, Replace, Stop
from ..core._state import RunState
from ..core._stop import StopReason

VERIFY_TOOL = "verify"
NO_VERIFIER = (
    "No automatic verifier is available in this run (no checks are configured). Verify your "
    "work yourself with the tools you have (run the tests, read the output), then give your "
    "final answer with what you checked."
)


class NoVerifier(Policy):
    """Answers a call of a `verify` tool the agent does not have, when it has no checks, with
    how to verify instead; the `max_calls`-th such call ends the run with `missing_evidence`.
    The calls are counted from the run's messages (a fold), so a resume keeps the count."""

    def __init__(self, max_calls: int = 3) -> None:
        self.max_calls = max_calls

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        if call.name != VERIFY_TOOL:
            return CONTINUE
        earlier = sum(
            1
            for m in (*state.messages, *state.results.values())
            if isinstance(m, ToolResultMessage) and m.name == VERIFY_TOOL
        )
        if earlier + 1 >= self.max_calls:
            return Stop(
                StopReason.MISSING_EVIDENCE,
                f"the model called `{VERIFY_TOOL}` {earlier + 1} times with no automatic "
                "verifier available",
            )
        return Replace(NO_VERIFIER)
