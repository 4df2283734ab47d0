"""The checks themselves checked, no model involved: each task's check must fail on the untouched
workspace with no answer and pass on a known-good solution; the harmless variations of a
solution (`VARIANTS`: other formatting, "1,731.74" for 1731.74) must pass too, and the near
misses (`NEAR_MISSES`: a caller left unrenamed, a key lost, a file a question changed) must fail.

A solution is shell commands run in the workspace, and the final answer; an answer that starts
with `$ ` is a command's output (so a count is computed apart from the check's own number).

python benchmarks/tasks/oracle.py [--only ID,...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from run import check, prepare
from tasks import TASKS, Task

Solution = tuple[str, str]
"""Shell commands that change the workspace, and the final answer."""

# id -> (shell commands that do the job, the final answer)
SOLUTIONS: dict[str, Solution] = {
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
    # config
    "json_version": (
        'python3 -c \'import json; p = "package.json"; d = json.load(open(p)); '
        'd["version"] = "1.3.0"; open(p, "w").write(json.dumps(d, indent=2) + "\\n")\'',
        "done",
    ),
    "json_add_key": (
        'python3 -c \'import json; p = "config.json"; d = json.load(open(p)); '
        'd["http"]["retries"] = 3; open(p, "w").write(json.dumps(d, indent=2))\'',
        "done",
    ),
    "toml_requires": ("sed -i 's/>=3.9/>=3.11/' pyproject.toml", "done"),
    "toml_add_dependency": (
        'sed -i \'s/^    "rich>=13",$/&\\n    "httpx>=0.27",/\' pyproject.toml',
        "done",
    ),
    "yaml_port": ('sed -i \'s/"8000:8000"/"8080:8000"/\' docker-compose.yml', "done"),
    "yaml_hook_rev": ("sed -i 's/rev: v0.4.4/rev: v0.6.9/' .pre-commit-config.yaml", "done"),
    # rename
    "rename_function": ("sed -i 's/\\bget_user\\b/fetch_user/g' app/*.py main.py", "done"),
    "rename_constant": ("sed -i 's/\\bMAX_RETRIES\\b/RETRY_LIMIT/g' *.py", "done"),
    "rename_class": ("sed -i 's/\\bDataLoader\\b/DatasetLoader/g' *.py", "done"),
    # fix
    "fix_median": (
        "sed -i 's/    return ordered\\[middle\\]/    if len(ordered) % 2:\\n        "
        "return ordered[middle]\\n    return (ordered[middle - 1] + ordered[middle]) \\/ 2/' "
        "stats.py",
        "fixed",
    ),
    "fix_leap_year": (
        "sed -i 's/return year % 4 == 0$/return year % 4 == 0 and "
        "(year % 100 != 0 or year % 400 == 0)/' dates.py",
        "fixed",
    ),
    "fix_slugify": ('sed -i \'s/"-".join(words)/"-".join(words).lower()/\' textutil.py', "fixed"),
    # count and sum
    "count_errors": ("true", "$ grep -c ' ERROR ' app.log"),
    "count_python_files": ("true", "$ find . -name '*.py' | wc -l"),
    "count_ips": ("true", "$ cut -d' ' -f1 access.log | sort -u | wc -l"),
    "sum_column": ("true", "$ awk -F, 'NR > 1 { s += $3 } END { print s }' sales.csv"),
    "mean_score": ("true", "$ awk -F, 'NR > 1 { s += $2; n++ } END { print s / n }' scores.csv"),
    # search
    "find_class": ("true", "shop/db/orders.py"),
    "find_env_var": ("true", "app/config.py"),
    "find_line": ("true", "$ grep -n '^def handle_request' server.py | cut -d: -f1"),
    # multi
    "multi_version": (
        "sed -i 's/0\\.3\\.1/0.4.0/' pyproject.toml src/mypkg/__init__.py",
        "done",
    ),
    "multi_header": (
        "find src -name '*.py' -exec sed -i '1i # SPDX-License-Identifier: MIT' {} +",
        "done",
    ),
    "multi_replace_url": (
        "find docs -type f -exec sed -i "
        "'s|http://docs.old-site.org|https://docs.example.com|g' {} +",
        "done",
    ),
    # question
    "ask_python_version": ("true", "Python 3.10 (requires-python >=3.10)."),
    "ask_pinned_version": ("true", "requests==2.31.0"),
    "ask_test_count": ("true", "$ grep -c '^def test_' tests/test_api.py"),
}

VARIANTS: dict[str, list[Solution]] = {
    "json_version": [  # one line, keys in another order
        (
            'python3 -c \'import json; p = "package.json"; d = json.load(open(p)); '
            'd["version"] = "1.3.0"; open(p, "w").write(json.dumps(d, sort_keys=True))\'',
            "done",
        )
    ],
    "toml_add_dependency": [  # first in the list
        ("sed -i 's/^dependencies = \\[$/&\\n    \"httpx>=0.27\",/' pyproject.toml", "done")
    ],
    "yaml_port": [("sed -i 's/\"8000:8000\"/8080:8000/' docker-compose.yml", "done")],
    "fix_median": [
        (
            "sed -i 's/    return ordered\\[middle\\]/    if len(ordered) % 2 == 0:\\n        "
            "return sum(ordered[middle - 1 : middle + 1]) \\/ 2\\n    return ordered[middle]/' "
            "stats.py",
            "The even case now averages the two middle values.",
        )
    ],
    "count_errors": [("true", "There are 9 ERROR lines in app.log.")],
    "count_python_files": [("true", "6 Python files")],
    "sum_column": [("true", "The total is 1,731.74."), ("true", "1731.740")],
    "mean_score": [("true", "The average score is 81.50")],
    "find_class": [("true", "It is defined in ./shop/db/orders.py.")],
    "find_line": [("true", "Line 23.")],
    "multi_header": [  # a blank line after the header
        (
            "find src -name '*.py' -exec sed -i '1i # SPDX-License-Identifier: MIT\\n' {} +",
            "done",
        )
    ],
    "multi_version": [
        (
            'sed -i "s/0\\.3\\.1/0.4.0/" pyproject.toml && '
            'sed -i "s/\\"0\\.3\\.1\\"/\'0.4.0\'/" src/mypkg/__init__.py',
            "done",
        )
    ],
    "ask_pinned_version": [("true", "It pins requests 2.31.0.")],
}

NEAR_MISSES: dict[str, list[Solution]] = {
    "json_version": [
        ("echo 'name: web-app, version: 1.3.0' > package.json", "done"),  # no longer JSON
        (
            'python3 -c \'import json; p = "package.json"; d = json.load(open(p)); '
            'd["version"] = "1.3.0"; del d["private"]; open(p, "w").write(json.dumps(d))\'',
            "done",
        ),
    ],
    "json_add_key": [  # a string, not a number
        ('sed -i \'s/"timeout": 10/"timeout": 10, "retries": "3"/\' config.json', "")
    ],
    "toml_requires": [('sed -i \'s/">=3.9"/"3.11"/\' pyproject.toml', "done")],
    "toml_add_dependency": [
        ("sed -i 's/^dev = \\[/&\"httpx>=0.27\", /' pyproject.toml", "done")  # the dev extra
    ],
    "yaml_port": [('sed -i \'s/"8000:8000"/"8080:8080"/\' docker-compose.yml', "done")],
    "yaml_hook_rev": [  # both hooks' revs
        ("sed -i 's/rev: v.*/rev: v0.6.9/' .pre-commit-config.yaml", "done")
    ],
    "rename_function": [
        ("sed -i 's/get_user/fetch_user/g' app/*.py main.py", "done"),  # get_user_name too
        ("sed -i 's/def get_user(/def fetch_user(/' app/users.py", "done"),  # callers left
    ],
    "rename_constant": [("sed -i 's/\\bMAX_RETRIES\\b/RETRY_LIMIT/g' settings.py client.py", "")],
    "rename_class": [("sed -i 's/\\bDataLoader\\b/DatasetLoader/g' loader.py train.py", "")],
    "fix_median": [("sed -i 's/== 2.5$/== 3/' tests/test_stats.py", "fixed")],  # the test
    "fix_leap_year": [
        ("sed -i '/1900/d; /2100/d' test_dates.py", "fixed"),  # the failing asserts deleted
    ],
    "count_errors": [
        ("true", "$ grep -ci error app.log"),  # the INFO line that says "error" too
        ("echo >> app.log", "9"),  # the right number, but the log changed
    ],
    "count_python_files": [("true", "5")],
    "count_ips": [("true", "$ wc -l < access.log")],
    "sum_column": [("true", "1731.7")],
    "mean_score": [("true", "82")],
    "find_class": [("true", "tests/test_orders.py")],
    "find_env_var": [("true", "app/db.py")],
    "find_line": [("true", "31")],
    "multi_version": [
        ("sed -i 's/0\\.3\\.1/0.4.0/' pyproject.toml src/mypkg/__init__.py CHANGELOG.md", ""),
        ("sed -i 's/0\\.3\\.1/0.4.0/' pyproject.toml", "done"),
    ],
    "multi_header": [
        ("sed -i '1i # SPDX-License-Identifier: MIT' src/*.py", "done"),  # not src/utils/
    ],
    "multi_replace_url": [
        (
            "sed -i 's|http://docs.old-site.org|https://docs.example.com|g' "
            "docs/*.md docs/api/*.md README.md",
            "done",
        ),
    ],
    "ask_python_version": [("echo notes > notes.txt", "3.10")],  # a file added
    "ask_pinned_version": [("true", "1.0.0")],
    "ask_test_count": [("true", "6")],
}


class BrokenSolution(Exception):
    """A solution's command failed: the oracle's own mistake, not the check's."""


def attempt(task: Task, solution: Solution | None) -> tuple[bool, str]:
    """The check's verdict on a fresh workspace after `solution` (None: untouched)."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        prepare(task, folder)
        answer = None
        if solution is not None:
            commands, answer = solution
            shell(commands, folder)
            if answer.startswith("$ "):
                answer = shell(answer[2:], folder).stdout.strip()
        return check(task, folder, answer)


def shell(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["sh", "-c", command], cwd=folder, capture_output=True, text=True)
    if done.returncode:
        raise BrokenSolution(f"{command!r} exits {done.returncode}: {done.stderr.strip()[-300:]}")
    return done


def judged(task: Task) -> tuple[list[str], int]:
    """What is wrong with a task's check (nothing: []), and how many workspaces it judged."""
    if task.id not in SOLUTIONS:
        return [f"{task.id}: no solution"], 0
    cases: list[tuple[str, Solution | None, bool]] = [
        ("untouched", None, False),
        ("solved", SOLUTIONS[task.id], True),
        *((f"variant {i}", s, True) for i, s in enumerate(VARIANTS.get(task.id, []))),
        *((f"near miss {i}", s, False) for i, s in enumerate(NEAR_MISSES.get(task.id, []))),
    ]
    bad = []
    for what, solution, should in cases:
        try:
            passed, output = attempt(task, solution)
        except BrokenSolution as exc:
            bad.append(f"{task.id}, {what}: {exc}")
            continue
        if passed != should:
            said = "passes" if passed else f"fails: {output.strip()}"
            bad.append(f"{task.id}, {what}: the check {said}")
    return bad, len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated task ids")
    args = parser.parse_args()
    tasks = [t for t in TASKS if not args.only or t.id in args.only.split(",")]
    with ThreadPoolExecutor(os.cpu_count()) as pool:  # the checks wait on their subprocesses
        results = list(pool.map(judged, tasks))
    bad = [line for lines, _ in results for line in lines]
    runs = sum(n for _, n in results)
    misnamed = (set(VARIANTS) | set(NEAR_MISSES)) - set(SOLUTIONS)
    bad += [f"{name}: a variant or near miss of no task" for name in sorted(misnamed)]
    print(
        "\n".join(bad)
        or f"all {len(tasks)} checks fail unsolved and pass solved; "
        f"{runs - 2 * len(tasks)} variants and near misses judged right"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
