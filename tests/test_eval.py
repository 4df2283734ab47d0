"""`reins eval`: suites read (a bad one is one error naming the file, the task and the field),
answers matched, and suites run from the command line on scripted models: attempts in fresh
workspaces, checks in the sandbox, results as a table, JSON and a record in the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reins.core._errors import UsageError
from reins.eval import Answer, load_suite, read_record

from .test_cli import REINS, _env, reins

if TYPE_CHECKING:
    from reins import Agent
    from reins.eval import Task
    from reins.store import EventLog

HELLO = [
    {
        "text": "Writing.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}
        ],
    },
    "FINAL_ANSWER: wrote hello.txt, 42 bytes in all",
]

SUITE = """
model = "script:hello.json"
max_steps = 5

[[tasks]]
id = "hello"
goal = "Create hello.txt containing: hi"
files = { "notes/readme.md" = "# Notes\\n" }
checks = ['test "$(cat hello.txt)" = hi', "test -f notes/readme.md"]
answer = { contains = "hello.txt", number = 42 }
tags = ["create"]

[[tasks]]
id = "bye"
goal = "Create bye.txt"
checks = ["test -f bye.txt"]
tags = ["other"]
"""


def suite_at(folder: Path, text: str = SUITE, name: str = "suite.toml") -> Path:
    (folder / "hello.json").write_text(json.dumps(HELLO))
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("model = ", r"suite\.toml: not valid TOML"),
        ("max_steps = 3\n", r"suite\.toml: tasks: Field required"),
        ("[[tasks]]\nid = 'a'\nchecks = ['true']\n", r"task a: goal: Field required"),
        ("[[tasks]]\ngoal = 'g'\nchecks = ['true']\n", r"task #1: id: Field required"),
        (
            "[[tasks]]\nid = 'a'\ngoal = 'g'\nchecks = ['true']\ncheck = 'x'\n",
            r"task a: check: Extra",
        ),
        ("[[tasks]]\nid = 'a'\ngoal = 'g'\n", r"task a: checks: a task needs checks"),
        (
            "[[tasks]]\nid = 'a'\ngoal = 'g'\nanswer = { regex = '(' }\n",
            r"task a: answer\.regex: not a regular expression",
        ),
        (
            "[[tasks]]\nid = 'a'\ngoal = 'g'\nchecks = ['true']\nfiles = { '../x' = 'y' }\n",
            r"task a: files: '\.\./x' is not a path inside the workspace",
        ),
        (
            "mode = 'fast'\n[[tasks]]\nid = 'a'\ngoal = 'g'\nchecks = ['true']\n",
            r"suite\.toml: mode: no mode 'fast'; the modes: explore",
        ),
        (
            "[[tasks]]\nid = 'a'\ngoal = 'g'\nchecks = ['true']\nmax_steps = 0\n",
            r"task a: max_steps: Input should be greater than or equal to 1",
        ),
        (
            "[[tasks]]\nid = 'a'\ngoal = 'g'\nchecks = ['true']\n"
            "[[tasks]]\nid = 'a'\ngoal = 'h'\nchecks = ['true']\n",
            r"task a: id: also in",
        ),
    ],
)
def test_a_bad_suite_is_one_error_naming_the_file_the_task_and_the_field(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(UsageError, match=said):
        load_suite(suite_at(tmp_path, text))


def test_a_folder_of_toml_and_yaml_suites_takes_each_files_defaults(tmp_path: Path) -> None:
    folder = tmp_path / "suites"
    folder.mkdir()
    suite_at(folder, SUITE, "a.toml")
    (folder / "b.yaml").write_text(
        "max_steps: 7\ntasks:\n  - id: listed\n    goal: list the files\n"
        "    answer: {exact: done}\n    model: script:other.json\n"
    )
    suite = load_suite(folder)
    chosen = load_suite(folder, tags=("create",), model="openai:gpt-4o")
    assert [(t.id, t.max_steps) for t in suite.tasks] == [("hello", 5), ("bye", 5), ("listed", 7)]
    assert suite.tasks[0].model == f"script:{folder / 'hello.json'}"
    assert suite.tasks[2].model == f"script:{folder / 'other.json'}"  # a task's own stands
    assert [(t.id, t.model) for t in chosen.tasks] == [("hello", "openai:gpt-4o")]
    with pytest.raises(UsageError, match="no task is tagged nope"):
        load_suite(folder, tags=("nope",))


def test_the_answer_matchers_each_say_what_missed() -> None:
    both = Answer(contains=["Paris", "france"], number=3.14, tolerance=0.01)
    assert both.misses("Paris, France: 3.141") == []
    assert both.misses("Lyon, 2.0") == [
        "does not contain 'Paris'",
        "does not contain 'france'",
        "no number within 0.01 of 3.14",
    ]
    assert Answer(exact="done").misses("  done\n") == []
    assert Answer(exact="done").misses("done.") == ["not exactly 'done'"]
    assert Answer(regex=r"^\d{3}$").misses("404") == []
    assert Answer(regex=r"^\d{3}$").misses("4040") == [r"does not match /^\d{3}$/"]
    assert Answer(number=1200).misses("1,200 lines") == []
    schema = Answer.model_validate({"schema": {"type": "object", "required": ["ok"]}})
    assert schema.misses('{"ok": true}') == []
    assert schema.misses("{}") == ["does not fit the schema: 'ok' is a required property"]
    assert schema.misses("not json") == ["is not JSON"]
    assert Answer(contains="x").misses(None) == ["does not contain 'x'"]


def test_reins_eval_runs_a_suite_and_reports_it(tmp_path: Path) -> None:
    suite = suite_at(tmp_path)
    store = tmp_path / "store"
    args = ("eval", str(suite), "--store", str(store), "--trust-suite", "--json", "out.json")
    ran = reins(*args, "--repeat", "2", "--jobs", "2", cwd=tmp_path)
    gated = reins(*args, "--fail-under", "0.9", "--html", "report.html", cwd=tmp_path)
    refused = reins("eval", str(suite), "--store", str(store), cwd=tmp_path)
    listed = reins("sessions", "--store", str(store), "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "(4/4, 2 passed, ~0m0" in ran.stderr  # the progress: done of all, passes, time left
    assert gated.returncode == 1  # one task of two passed: under 0.9
    assert "1 of 2 tasks passed (50%)" in gated.stdout
    assert refused.returncode == 2
    assert "runs these commands (in the sandbox)" in refused.stderr
    assert 'test "$(cat hello.txt)" = hi' in refused.stderr
    assert "--trust-suite" in refused.stderr
    report = json.loads((tmp_path / "out.json").read_text())  # the last run's (--fail-under)
    assert report["repeat"] == 1
    assert [(t["id"], t["passed"]) for t in report["tasks"]] == [("hello", True), ("bye", False)]
    hello, bye = report["tasks"]
    attempt = hello["attempts"][0]
    assert (attempt["passed"], attempt["stop_reason"], attempt["steps"]) == (True, "end_turn", 2)
    assert attempt["run_id"].startswith("r")
    assert attempt["input_tokens"] > 0
    assert bye["attempts"][0]["failures"] == ["check exited 1: test -f bye.txt"]
    assert report["pass_rate"] == 0.5
    assert attempt["first_action_s"] is not None
    assert (attempt["tool_errors"], attempt["rejections"]) == (0, 0)
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 5  # by task, by tag, tokens, seconds, steps
    assert "<script" not in page
    assert f"run-{attempt['run_id']}" in page  # each attempt's transcript, linked
    assert "Create hello.txt containing: hi" in page
    assert "→ write_file" in page
    records = sorted((store / "evals").glob("*.jsonl"))
    assert len(records) == 2
    lines = [json.loads(line) for line in records[0].read_text().splitlines()]
    kinds = [next(iter(line)) for line in lines]
    repeated = records[0] if kinds.count("attempt") == 4 else records[1]
    attempts = [json.loads(line)["attempt"] for line in repeated.read_text().splitlines()[1:]]
    assert sorted((a["task"], a["attempt"]) for a in attempts) == [
        ("bye", 1),
        ("bye", 2),
        ("hello", 1),
        ("hello", 2),
    ]
    runs = json.loads(listed.stdout)
    assert len(runs) == 6  # every attempt's run is a session of its own in the store
    assert {r["run_id"] for r in runs} >= {a["run_id"] for a in attempts}
    assert not (tmp_path / "hello.txt").exists()  # the attempts worked in workspaces of their own


def test_a_failed_setup_fails_its_attempt_without_a_run(tmp_path: Path) -> None:
    fixture = tmp_path / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "app.py").write_text("print('hi')\n")
    text = (
        'model = "script:hello.json"\n'
        "[[tasks]]\nid = 'broken'\ngoal = 'g'\nsetup = ['exit 3']\nchecks = ['true']\n"
        "[[tasks]]\nid = 'copied'\ngoal = 'Create hello.txt'\nfixture = 'fixtures/app'\n"
        "checks = ['test -f app.py', 'test -f hello.txt']\n"
    )
    suite = suite_at(tmp_path, text)
    ran = reins(
        "eval",
        str(suite),
        "--store",
        str(tmp_path / "store"),
        "--trust-suite",
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    broken, copied = json.loads((tmp_path / "out.json").read_text())["tasks"]
    assert broken["attempts"][0]["failures"] == ["setup exited 3: exit 3"]
    assert broken["attempts"][0]["run_id"] == ""
    assert copied["passed"] is True


BYE = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "bye.txt", "content": "bye\n"}}]},
    "FINAL_ANSWER: wrote bye.txt",
]


def test_an_eval_cut_short_is_resumed_and_evals_are_listed_shown_and_compared(
    tmp_path: Path,
) -> None:
    suite = suite_at(tmp_path)
    (tmp_path / "bye.json").write_text(json.dumps(BYE))
    store = ("--store", str(tmp_path / "store"))
    first = reins("eval", str(suite), *store, "--trust-suite", "--repeat", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (record,) = (tmp_path / "store" / "evals").glob("*.jsonl")
    lines = record.read_text().splitlines()
    record.write_text("\n".join([*lines[:2], lines[2][:25]]))  # stopped mid-write
    resumed = reins("eval", "--resume", record.stem[:9], *store, "--trust-suite", cwd=tmp_path)
    shown = reins("eval", "show", "last", *store, "--json", cwd=tmp_path)
    other = reins(
        "eval", str(suite), *store, "--trust-suite", "--model", "script:bye.json", cwd=tmp_path
    )
    newest = max((tmp_path / "store" / "evals").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    compared = reins("eval", "compare", record.stem, newest.stem, *store, cwd=tmp_path)
    listed = reins("eval", "list", *store, cwd=tmp_path)
    mixed = reins("eval", str(suite), "--resume", "last", *store, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert resumed.stderr.count("#") == 3  # the three attempts the record did not hold
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["eval_id"] == record.stem
    assert [t["tags"] for t in report["tasks"]] == [["create"], ["other"]]  # kept in the record
    assert [(t["id"], [a["attempt"] for a in t["attempts"]]) for t in report["tasks"]] == [
        ("hello", [1, 2]),
        ("bye", [1, 2]),
    ]
    assert [t["passed"] for t in report["tasks"]] == [True, False]
    assert other.returncode == 0, other.stderr
    assert "pass rate 50% → 50% (+0%)" in compared.stdout
    assert "now pass (1): bye" in compared.stdout
    assert "now fail (1): hello" in compared.stdout
    assert "McNemar's exact p = 1 on 2 flips" in compared.stdout
    assert record.stem in listed.stdout
    assert newest.stem in listed.stdout
    assert mixed.returncode == 2
    assert "--resume goes on with the eval as it was asked" in mixed.stderr


def test_mcnemars_exact_test() -> None:
    from reins.eval._compare import mcnemar_exact

    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(9, 1) == pytest.approx(2 * 11 / 1024)


def test_the_task_suite_file_is_the_one_tasks_py_makes() -> None:
    """benchmarks/tasks/suite.yaml (what `make bench` gives `reins eval`) holds the tasks of
    tasks.py, as to_suite.py writes them: a task changed in one place is changed in both."""
    import runpy

    folder = Path(__file__).parent.parent / "benchmarks" / "tasks"
    made = runpy.run_path(str(folder / "to_suite.py"))["suite"]()
    assert (folder / "suite.yaml").read_text() == made
    loaded = load_suite(folder / "suite.yaml")
    assert len(loaded.tasks) >= 50
    assert all(task.checks for task in loaded.tasks)


FOUR = """
model = "script:hello.json"
max_steps = 5
"""
FOUR += "".join(
    f'\n[[tasks]]\nid = "{name}"\ngoal = "Create {made}"\nsetup = ["sleep 0.3"]\n'
    f'checks = ["test -f {made}"]\n'
    for name, made in [("one", "hello.txt"), ("two", "bye.txt"), ("three", "hello.txt")]
)
FOUR += '\n[[tasks]]\nid = "four"\ngoal = "Say it"\nchecks = ["true"]\nanswer = { number = 7 }\n'


def _how_it_went(report: dict[str, object]) -> list[object]:
    tasks = report["tasks"]
    assert isinstance(tasks, list)
    return [
        (t["id"], [(a["attempt"], a["passed"], a["failures"], a["steps"]) for a in t["attempts"]])
        for t in tasks
    ]


def test_j_2_runs_the_attempts_in_two_worker_processes_as_one_process_does(
    tmp_path: Path,
) -> None:
    suite = suite_at(tmp_path, FOUR)
    store = tmp_path / "store"
    args = ("eval", str(suite), "--store", str(store), "--trust-suite", "--json")
    here = reins(*args, "here.json", cwd=tmp_path)
    apart = reins(*args, "apart.json", "-j", "2", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert apart.returncode == 0, apart.stderr
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("here.json", "apart.json"))
    assert _how_it_went(two) == _how_it_went(one)
    assert [t["passed"] for t in two["tasks"]] == [True, False, True, False]
    assert two["tasks"][1]["attempts"][0]["failures"] == ["check exited 1: test -f bye.txt"]
    assert {a["worker"] for t in one["tasks"] for a in t["attempts"]} == {None}
    workers = {a["worker"] for t in two["tasks"] for a in t["attempts"]}
    assert len(workers) == 2  # each worker process took its share
    assert None not in workers
    lines = (store / "evals" / f"{two['eval_id']}.jsonl").read_text().splitlines()[1:]
    recorded = sorted(json.loads(line)["attempt"]["task"] for line in lines)
    assert recorded == ["four", "one", "three", "two"]  # each attempt once
    assert apart.stderr.count("#1") == 4
    listed = reins("sessions", "--store", str(store), "--json", cwd=tmp_path)
    runs = {r["run_id"] for r in json.loads(listed.stdout)}
    assert {a["run_id"] for t in two["tasks"] for a in t["attempts"]} <= runs  # in the store


def _running(pid: int) -> bool:
    """Is the process there, and not a zombie waiting to be reaped?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def test_a_ctrl_c_stops_the_workers_keeps_what_finished_and_the_eval_resumes(
    tmp_path: Path,
) -> None:
    quick = [("one", "hello.txt"), ("two", "bye.txt"), ("three", "hello.txt")]
    slow = "".join(
        f'[[tasks]]\nid = "{name}"\ngoal = "Create {made}"\nsetup = ["sleep {pause}"]\n'
        f'checks = ["test -f {made}"]\n'
        for name, made, pause in [
            *((name, made, "0.1") for name, made in quick),
            ("slow1", "hello.txt", "41.1"),  # what the workers are doing at the Ctrl-C
            ("slow2", "hello.txt", "41.2"),
            ("last", "hello.txt", "0.1"),  # not begun
        ]
    )
    suite = suite_at(tmp_path, 'model = "script:hello.json"\n' + slow)
    store = ("--store", str(tmp_path / "store"))
    running = subprocess.Popen(
        [*REINS, "eval", str(suite), *store, "--trust-suite", "-j", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,  # a process group of its own, as a terminal's foreground job
    )
    assert running.stderr is not None
    said = [running.stderr.readline() for _ in quick]  # the quick ones ended
    os.killpg(running.pid, signal.SIGINT)  # what a Ctrl-C at the terminal sends
    _, rest = running.communicate(timeout=30)  # not the 41 s the slow setups sleep
    (record,) = (tmp_path / "store" / "evals").glob("*.jsonl")
    assert running.returncode == 130, rest
    assert f"`reins eval --resume {record.stem}` runs the rest" in rest
    assert "Traceback" not in rest
    kept = [json.loads(line)["attempt"] for line in record.read_text().splitlines()[1:]]
    assert sorted(a["task"] for a in kept) == ["one", "three", "two"], said
    assert not any(_running(a["worker"]) for a in kept)  # the workers are gone
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 41." not in ps  # and so are the commands of the attempts they had begun
    suite.write_text(suite.read_text().replace("sleep 41.", "sleep 0."))
    resumed = reins(
        "eval", "--resume", record.stem, *store, "--trust-suite", "-j", "2", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("#1") == 3  # slow1, slow2 and last
    attempts = [json.loads(line)["attempt"] for line in record.read_text().splitlines()[1:]]
    assert sorted(a["task"] for a in attempts) == sorted(
        ["last", "one", "slow1", "slow2", "three", "two"]
    )
    assert "5 of 6 tasks passed" in resumed.stdout


def _recipe(task: Task, workspace: Path, log: EventLog) -> Agent:
    """An attempt's agent, built in a worker process: or an error, or the worker's end."""
    from reins import Agent
    from reins.agent._resolve import resolve_model
    from reins.tools import BUILTIN_TOOLS

    if task.id == "raises":
        raise RuntimeError("no agent\ntoday")
    if task.id == "dies":
        os.kill(os.getpid(), signal.SIGKILL)
    assert task.model is not None
    model = resolve_model(task.model)
    return Agent(model=model, tools=BUILTIN_TOOLS, workspace=workspace, log=log, approval="allow")


async def test_an_attempt_that_raises_in_a_worker_fails_saying_why(tmp_path: Path) -> None:
    import pickle

    from reins.eval import new_eval, run_eval
    from reins.sandbox import SandboxPolicy

    text = SUITE + '\n[[tasks]]\nid = "raises"\ngoal = "g"\nchecks = ["true"]\n'
    suite = load_suite(suite_at(tmp_path, text))
    store = tmp_path / "store"

    def here(task: Task, workspace: Path) -> Agent:
        raise RuntimeError("no agent\ntoday")

    started = new_eval(suite, repeat=1, tags=[], model=None)
    apart = await run_eval(suite, started, here, SandboxPolicy(), store, jobs=2, recipe=_recipe)
    assert [(a.task, a.passed, a.failures) for a in apart.attempts] == [
        ("hello", True, []),
        ("bye", False, ["check exited 1: test -f bye.txt"]),
        ("raises", False, ["error: RuntimeError: no agent today"]),
    ]
    assert all(a.worker not in (None, os.getpid()) for a in apart.attempts)
    recorded = read_record(store, started.eval_id).attempts
    assert sorted(recorded, key=lambda a: a.task) == sorted(apart.attempts, key=lambda a: a.task)
    assert pickle.loads(pickle.dumps(apart.attempts[0])) == apart.attempts[0]
    started = new_eval(suite, repeat=1, tags=[], model=None)
    here_too = await run_eval(suite, started, here, SandboxPolicy(), store, jobs=2)
    assert {tuple(a.failures) for a in here_too.attempts} == {
        ("error: RuntimeError: no agent today",)
    }


async def test_a_worker_that_dies_ends_the_eval_with_an_error_and_a_bad_recipe_is_said(
    tmp_path: Path,
) -> None:
    from reins.eval import WorkerDied, new_eval, run_eval
    from reins.sandbox import SandboxPolicy

    suite = load_suite(
        suite_at(tmp_path, "[[tasks]]\nid = 'dies'\ngoal = 'g'\nchecks = ['true']\n")
    )

    def unused(task: Task, workspace: Path) -> Agent:
        raise AssertionError("the attempts go to the workers")

    started = new_eval(suite, repeat=2, tags=[], model=None)
    with pytest.raises(WorkerDied, match="a worker process died"):
        await run_eval(suite, started, unused, SandboxPolicy(), tmp_path, jobs=2, recipe=_recipe)
    with pytest.raises(UsageError, match="cannot go to a worker process"):
        await run_eval(
            suite,
            started,
            unused,
            SandboxPolicy(),
            tmp_path,
            jobs=2,
            recipe=lambda *a: unused(*a[:2]),
        )
