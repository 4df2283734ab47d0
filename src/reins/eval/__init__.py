"""Evaluating an agent (`reins eval`): suites of tasks, each attempted in a fresh workspace and
judged by its checks (shell commands in the sandbox) and matchers on its answer.

Inside: `_suite` (the suite files, and the matchers), `_attempt` (one attempt at a task), `_run`
(an eval: every task, `repeat` times, recorded in the store).
"""

from ._attempt import AgentFactory, Attempt
from ._run import EvalResult, TaskResult, run_eval
from ._suite import Answer, Suite, Task, load_suite

__all__ = [
    "AgentFactory",
    "Answer",
    "Attempt",
    "EvalResult",
    "Suite",
    "Task",
    "TaskResult",
    "load_suite",
    "run_eval",
]
