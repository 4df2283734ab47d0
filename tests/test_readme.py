"""The README's Python examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
QUICKSTART, API, *OTHERS = re.findall(r"```python\n(.*?)```", README, re.S)


def run(example: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The quickstart's run on the smallest embedded model takes about 100 s on 2 idle cores:
    # the limit leaves room for a busy machine, and still ends a hung example.
    return subprocess.run(
        [sys.executable, "-c", example], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_python_api_example_runs(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("one two three")
    done = run(API, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "end_turn nothing to do\n"
    assert (tmp_path / ".reins" / "reins.db").exists()


@pytest.mark.parametrize("example", OTHERS, ids=lambda e: e.splitlines()[0][:40])
def test_the_other_python_examples_run(example: str, tmp_path: Path) -> None:
    done = run(example, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.real_model
def test_the_quickstart_example_runs_on_the_smallest_embedded_model(tmp_path: Path) -> None:
    """As written but for the model: the tests have SmolLM2, not the 1.1 GB default."""
    assert 'resolve_model("local")' in QUICKSTART
    (tmp_path / "notes.txt").write_text("hello")
    done = run(QUICKSTART.replace('"local"', '"local:smollm2"'), tmp_path)
    assert done.returncode == 0, done.stderr
    reason, _, _ = done.stdout.partition(" ")
    assert reason in {"end_turn", "max_steps", "stalled", "missing_evidence"}, done.stdout
