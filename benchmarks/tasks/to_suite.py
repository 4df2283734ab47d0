"""The task suite of tasks.py as a `reins eval` suite file (`suite.yaml`, committed beside it):
`python benchmarks/tasks/to_suite.py > benchmarks/tasks/suite.yaml` after a change to the
tasks; a test keeps the two in step. `make bench` runs it on the embedded default model:
`reins eval benchmarks/tasks/suite.yaml --model local --trust-suite`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))  # tasks.py imports its neighbours by name

from tasks import TASKS

HEADER = """\
# The task suite (benchmarks/tasks/tasks.py) for `reins eval`; made by to_suite.py, do not edit.
# The checks read the final answer from $ANSWER; they need python3 with PyYAML and pytest.
"""


def suite() -> str:
    data: dict[str, Any] = {
        "max_steps": 10,
        "tasks": [
            {
                "id": task.id,
                "goal": task.goal,
                **({"files": dict(task.setup)} if task.setup else {}),
                "checks": [task.check],
                "tags": [task.category],
            }
            for task in TASKS
        ],
    }
    return HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


if __name__ == "__main__":
    sys.stdout.write(suite())
