"""The checks themselves checked: each task's setup, a known-good solution, then its check
(must pass), and the untouched setup with no answer (must fail). No model involved.

python benchmarks/tasks/oracle.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from run import check, prepare
from tasks import TASKS

# id -> (shell commands that do the job, the final answer)
SOLUTIONS: dict[str, tuple[str, str]] = {
    "hello_reins": ("printf 'Hello from reins' > hello.txt", "done"),
    "hello_world": ("printf 'hello world\\n' > hello.txt", "done"),
    "create_notes": ("echo '# Notes' > notes.md", "done"),
    "create_json": ("echo '{\"debug\": true}' > config.json", "done"),
    "create_nested": ("mkdir -p logs && echo started > logs/app.log", "done"),
    "append_line": ("echo 'walk the dog' >> todo.txt", "done"),
    "replace_word": ("sed -i 's/Bob/Alice/' greeting.txt", "done"),
    "bump_version": ("sed -i 's/version = 1.0/version = 2.0/' setup.cfg", "done"),
    "delete_line": ("sed -i '/remove me/d' list.txt", "done"),
    "count_lines": ("true", "fruits.txt has 5 lines."),
    "count_words": ("true", "7"),
    "count_files": ("true", "There are 3 .csv files."),
    "search_token": ("true", "beta.txt"),
    "search_def": ("true", "src/utils.py"),
    "read_port": ("true", "The port is 8080."),
    "rename_file": ("mv draft.txt final.txt", "done"),
    "copy_file": ("cp a.txt b.txt", "done"),
    "delete_file": ("rm old.log", "done"),
    "make_dir": ("mkdir build", "done"),
    "sum_answer": ("true", "42"),
    "sum_to_file": ("echo 21 > total.txt", "done"),
    "command_output": ("true", "It prints 51."),
    "fix_test": ("sed -i 's/a - b/a + b/' calc.py", "fixed"),
    "fix_syntax": ("sed -i 's/def greet()$/def greet():/' greet.py", "fixed"),
}


def main() -> None:
    import subprocess

    bad = []
    for task in TASKS:
        commands, answer = SOLUTIONS[task.id]
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            prepare(task, folder)
            unsolved, _ = check(task, folder, None)
            subprocess.run(["sh", "-c", commands], cwd=folder, check=True)
            solved, output = check(task, folder, answer)
        if unsolved or not solved:
            bad.append(f"{task.id}: unsolved passes {unsolved}, solved passes {solved} {output}")
    print("\n".join(bad) or f"all {len(TASKS)} checks fail unsolved and pass solved")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
