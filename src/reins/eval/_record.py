"""An eval's record in the store: `evals/EVAL_ID.jsonl`, a first line saying what was asked
(the suite, its tags, the model, the repeats), then one line per attempt as it ends. What an
eval stopped before finishing left is what `--resume` runs; `show` and `compare` read it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..core._errors import UsageError
from ._attempt import Attempt
from ._results import EvalResult, TaskResult

EVALS = "evals"
"""The store's folder of eval records."""


def record_path(store: Path, eval_id: str) -> Path:
    return store / EVALS / f"{eval_id}.jsonl"


def start_record(store: Path, result: EvalResult) -> Path:
    path = record_path(store, result.eval_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as out:
        out.write(json.dumps({"eval": result.head()}) + "\n")
    return path


def mend_record(path: Path) -> None:
    """Cut off a last line a crash left half written, before more is added after it."""
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    last = whole.rstrip(b"\n").rpartition(b"\n")[2]
    try:
        json.loads(last)
    except ValueError:  # a whole line that is not JSON: read_record says where
        return
    if whole != data:
        with path.open("r+b") as file:
            file.truncate(len(whole))


def add_attempt(path: Path, attempt: Attempt) -> None:
    with path.open("a", encoding="utf-8") as out:  # one whole line a write: a cut run keeps all
        out.write(json.dumps({"attempt": dataclasses.asdict(attempt)}) + "\n")


def read_record(store: Path, eval_id: str) -> EvalResult:
    """The eval as recorded (its tasks in the order their first attempt ended)."""
    path = _found(store, eval_id)
    head: dict[str, Any] | None = None
    tasks: dict[str, TaskResult] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
            if "eval" in entry:
                head = entry["eval"]
                continue
            attempt = Attempt(**entry["attempt"])
        except (ValueError, TypeError, KeyError):
            if number == len(lines):
                break  # the last line, cut short by a crash: that attempt runs again
            raise UsageError(f"eval record {path}: line {number} is damaged") from None
        tags = (head or {}).get("task_tags", {}).get(attempt.task, [])
        tasks.setdefault(attempt.task, TaskResult(attempt.task, tags, [])).attempts.append(attempt)
    if head is None:
        raise UsageError(f"eval record {path}: no first line saying what was run")
    return EvalResult(
        eval_id=head["eval_id"],
        suite=head["suite"],
        started_at=head["started_at"],
        repeat=head["repeat"],
        tags=head.get("tags", []),
        model=head.get("model"),
        task_tags=head.get("task_tags", {}),
        tasks=list(tasks.values()),
    )


def list_records(store: Path) -> list[EvalResult]:
    folder = store / EVALS
    ids = sorted(p.stem for p in folder.glob("e*.jsonl")) if folder.is_dir() else []
    evals = [read_record(store, eval_id) for eval_id in ids]
    return sorted(evals, key=lambda e: e.started_at)


def _found(store: Path, eval_id: str) -> Path:
    """The record of `eval_id`, or of the one eval whose id it begins (`last`: the latest)."""
    folder = store / EVALS
    paths = sorted(folder.glob("e*.jsonl")) if folder.is_dir() else []
    if eval_id == "last" and paths:
        return max(paths, key=lambda p: p.stat().st_mtime)
    matches = [p for p in paths if p.stem.startswith(eval_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"no eval {eval_id} in {folder}; `reins eval list` lists them")
    raise UsageError(
        f"{eval_id} begins more than one eval's id: {', '.join(p.stem for p in matches)}"
    )
