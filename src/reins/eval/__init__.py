"""Evaluating an agent (`reins eval`): suites of tasks, each attempted in a fresh workspace and
judged by its checks (shell commands in the sandbox) and matchers on its answer.

Inside: `_suite` (the suite files, and the matchers), `_attempt` (one attempt at a task), `_run`
(an eval: every task, `repeat` times), `_workers` (its attempts in worker processes), `_ray`
(its attempts as tasks on a Ray cluster, `reins[ray]`), `_record`
(its record in the store, read back by `--resume`, `show` and `compare`), `_results` (what the
attempts add up to), `_compare` (two evals side by side), `_replay` (a recorded run driven
again, its first divergence), `_html` (the report page).
"""

from ._attempt import AgentFactory, Attempt
from ._compare import Comparison, compare
from ._html import html_report, transcripts_of
from ._ray import OnRay, connected, need_ray
from ._record import list_records, read_record
from ._replay import Divergence, Replayed, replay_events, replay_run
from ._results import EvalResult, TaskResult
from ._run import new_eval, run_eval
from ._suite import Answer, Suite, Task, load_suite
from ._workers import AgentRecipe, WorkerDied

__all__ = [
    "AgentFactory",
    "AgentRecipe",
    "Answer",
    "Attempt",
    "Comparison",
    "Divergence",
    "EvalResult",
    "OnRay",
    "Replayed",
    "Suite",
    "Task",
    "TaskResult",
    "WorkerDied",
    "compare",
    "connected",
    "html_report",
    "list_records",
    "load_suite",
    "need_ray",
    "new_eval",
    "read_record",
    "replay_events",
    "replay_run",
    "run_eval",
    "transcripts_of",
]
