"""`write-test` mode's gate: no answer after a change until the tests ran since."""

from __future__ import annotations

from ..core._messages import AssistantMessage, ToolResultMessage, UserMessage
from ..core._policy import CONTINUE, OnFinal, Policy, Reject
from ..core._state import RunState

NOTE = "[write-test]"
TEST_TOOL = "run_command"


class TestsAfterChanges(Policy):
    """Refuses a final answer (twice at most) when a file changed after the last command."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, changing_tools: frozenset[str], refusals: int = 2) -> None:
        self.changing = changing_tools
        self.refusals = refusals

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        succeeded = {
            m.call_id for m in state.messages if isinstance(m, ToolResultMessage) and not m.is_error
        }
        changed = tested = refused = 0
        for index, message in enumerate(state.messages):
            if isinstance(message, UserMessage) and message.content.startswith(NOTE):
                refused += 1
            if not isinstance(message, AssistantMessage):
                continue
            for call in message.tool_calls:
                if call.id not in succeeded:
                    continue
                if call.name == TEST_TOOL:
                    tested = index
                elif call.name in self.changing:
                    changed = index
        if changed <= tested or refused >= self.refusals:
            return CONTINUE
        return Reject(
            f"{NOTE} You changed files after the last test run: run the project's tests with "
            f"{TEST_TOOL}, fix what fails, then give your answer."
        )
