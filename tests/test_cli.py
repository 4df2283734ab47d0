"""The `reins` command line, run as a user runs it: a real process, real files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reins import StopReason
from reins.core._paths import project_store
from reins.events import EVENT, RunFinished, RunStarted

ROOT = Path(__file__).resolve().parent.parent
REINS = [sys.executable, "-m", "reins"]


def reins(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*REINS, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=_env()
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    env["COLUMNS"] = "200"
    return env


def _spawned(project: Path, *args: str) -> subprocess.Popen[str]:
    """`reins ARGS` started in `project`, its output piped, to read as it runs."""
    return subprocess.Popen(
        [*REINS, *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def script(path: Path, replies: list[object]) -> str:
    path.write_text(json.dumps(replies))
    return f"script:{path}"


HELLO = [
    {
        "text": "Writing.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}
        ],
    },
    {
        "text": "Checking.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}}],
    },
    "FINAL_ANSWER: hello.txt says hi",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def only_run_id(project: Path) -> str:
    [(run_id,)] = sqlite3.connect(project_store(project) / "reins.db").execute(
        "SELECT run_id FROM runs"
    )
    return str(run_id)


def test_run_shows_steps_and_answer(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    done = reins("run", "say hi", "--model", model, "--workspace", "ws", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / "ws" / "hello.txt").read_text() == "hi\n"
    out = done.stdout
    for expected in [
        "goal say hi",
        "step 1",
        '→ write_file({"path": "hello.txt", "content": "hi\\n"})',
        "← write_file Wrote 3 bytes to hello.txt",
        "step 3",
        "final answer",
        "hello.txt says hi",
    ]:
        assert expected in out, expected
    assert done.stderr == ""


def test_json_prints_every_event_and_replay_matches_the_live_run(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    live = reins("run", "say hi", "-m", model, "-w", "ws", "--json", cwd=project)
    assert live.returncode == 0
    events = [EVENT.validate_json(line) for line in live.stdout.splitlines()]
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunFinished)
    logged = [e for e in events if e.kind not in ("text_delta", "thinking_delta")]
    assert len(logged) < len(events)  # the text came streamed
    assert [e.seq for e in logged] == list(range(1, len(logged) + 1))

    replayed = reins("replay", events[0].run_id, "--json", cwd=project)
    assert replayed.returncode == 0
    # The log holds what was streamed, but the deltas: their text is in the replies.
    streamed = [line for line in live.stdout.splitlines() if '"kind":"text_delta"' not in line]
    assert replayed.stdout.splitlines() == streamed

    rendered_live = reins("run", "say hi", "-m", model, "-w", "ws", cwd=project)
    run_id = rendered_live.stdout.split()[1]
    rendered_replay = reins("replay", run_id[:10], cwd=project)
    assert rendered_replay.stdout == rendered_live.stdout


def test_sessions_show_and_a_second_turn(project: Path) -> None:
    model = script(project / "s.json", [*HELLO, "second turn answer"])
    first = reins("run", "say hi", "-m", model, "-w", "ws", "--json", cwd=project)
    started = EVENT.validate_json(first.stdout.splitlines()[0])
    assert isinstance(started, RunStarted)
    second = reins(
        "run", "and again", "-m", model, "-w", "ws", "--session", started.session_id, cwd=project
    )
    assert second.returncode == 0, second.stderr
    assert "second turn answer" in second.stdout

    listing = reins("sessions", cwd=project)
    assert listing.returncode == 0
    assert listing.stdout.count(started.session_id[:7]) == 2  # its shortest unique prefix
    assert "end_turn" in listing.stdout

    second_run = second.stdout.split()[1]
    shown = reins("show", "last", cwd=project)
    assert shown.returncode == 0
    for expected in ["user: say hi", "← read_file hi", "user: and again", "second turn answer"]:
        assert expected in shown.stdout, expected
    as_json = json.loads(reins("show", second_run, "--json", cwd=project).stdout)
    assert [m["role"] for m in as_json] == [
        "system",
        "user",
        "assistant",
        "tool",  # the write
        "user",  # the done-check's question
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_exit_code_per_stop_reason_and_resume(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    capped = reins("run", "say hi", "-m", model, "-w", "ws", "--max-steps", "1", cwd=project)
    assert capped.returncode == 3
    assert "stopped: max_steps — reached the cap of 1 steps" in capped.stdout
    run_id = only_run_id(project)
    one_more = reins("resume", run_id, cwd=project)  # as many steps again: one
    assert one_more.returncode == 3
    assert "reached the cap of 2 steps" in one_more.stdout
    resumed = reins("resume", run_id[:12], "--max-steps", "5", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert "hello.txt says hi" in resumed.stdout
    again = reins("resume", run_id, cwd=project)
    assert again.returncode == 2
    assert "already ended its turn" in again.stderr


def test_resume_of_a_run_whose_workspace_is_gone_says_so(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    reins("run", "say hi", "-m", model, "-w", "ws", "--max-steps", "1", cwd=project)
    (project / "ws").rename(project / "moved")
    done = reins("resume", "last", cwd=project)
    assert done.returncode == 2
    assert (
        done.stderr
        == (  # resume has no --workspace: the run's folder is its own
            f"error: run {only_run_id(project)[:7]} works in {project / 'ws'}, which is not a "
            "directory now; put it back to resume the run\n"
        )
    )


def test_a_model_error_exits_1_and_is_resumable(project: Path) -> None:
    model = script(project / "s.json", HELLO[:1])
    failed = reins("run", "say hi", "-m", model, "-w", "ws", cwd=project)
    assert failed.returncode == 1
    assert "the script has 1 replies and all were used" in failed.stdout
    script(project / "s.json", HELLO)  # the script, mended
    resumed = reins("resume", only_run_id(project), cwd=project)
    assert resumed.returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "x", "-m", "nope:thing"], "error: unknown model 'nope:thing'"),
        (["run", "x", "-m", "script:missing.json"], "error: cannot read script missing.json"),
        (["run", "x", "-m", "script:bad.json"], "error: script bad.json is not valid JSON"),
        (["run", "x", "-m", "script:shape.json"], "error: script shape.json: "),
        (["run", "x", "-m", "script:empty.json"], "error: script empty.json is empty"),
        (["run", "  ", "-m", "script:ok.json"], "error: the goal is empty"),
        (["run", "x", "-m", "script:ok.json", "-w", "nowhere"], "error: workspace 'nowhere'"),
        (["show", "nope"], "error: no run matches 'nope'"),
        (["resume", "nope"], "error: no run matches 'nope'"),
        (["run", "x", "-m", "script:ok.json", "--mode", "writ"], "error: --mode: no mode 'writ'"),
        (["run", "x", "-m", "script:ok.json", "--tools", ""], "error: unknown tool(s) ''; built"),
        (
            ["run", "x", "-m", "script:ok.json", "--check", " "],
            "error: a check is an empty command",
        ),
        (
            ["run", "x", "-m", "script:ok.json", "--guard", "loop", "--no-guard", "loop"],
            "error: --guard and --no-guard both name loop",
        ),
        (["sessions", "prune", "--older-than", "99999999d"], "error: --older-than '99999999d'"),
        (["sessions", "--store", "ok.json"], "error: the event log ok.json is a file"),
        (["run", "x", "-m", "script:ok.json", "--store", "ok.json"], "error: the event log ok.j"),
        (["doctor", "nosuch"], "error: no session matches 'nosuch'"),
    ],
)
def test_bad_input_is_one_clear_line(project: Path, args: list[str], message: str) -> None:
    (project / "bad.json").write_text("[{")
    (project / "shape.json").write_text('[{"tool_calls": [{"arguments": {}}]}]')
    (project / "empty.json").write_text("[]")
    script(project / "ok.json", ["fine"])
    reins("run", "seed", "-m", "script:ok.json", "-w", "ws", cwd=project)
    done = reins(*args, cwd=project)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or "Traceback" not in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_corrupt_database_is_reported_and_left_alone(project: Path) -> None:
    store = project_store(project)
    store.mkdir(parents=True)
    (store / "reins.db").write_bytes(b"garbage" * 1000)
    for args in (["sessions"], ["run", "x", "-m", "script:s.json"]):
        done = reins(*args, cwd=project)
        assert done.returncode == 1
        assert "is not a readable reins database" in done.stderr
        assert "Traceback" not in done.stderr
    assert (store / "reins.db").read_bytes() == b"garbage" * 1000


def test_no_log_yet(project: Path) -> None:
    done = reins("sessions", cwd=project)
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error: no event log for {project} (its log would be at {project_store(project)}); run"
    )
    for command in (["sessions"], ["show", "last"], ["doctor"]):  # a folder that is no log
        done = reins(*command, "--store", "ws", cwd=project)
        assert done.returncode == 2
        assert done.stderr.startswith("error: no event log at ws; run `reins run GOAL` first")
    assert list((project / "ws").iterdir()) == []  # no reins.db made in it


def _start_sleeping_run(project: Path) -> tuple[subprocess.Popen[str], list[str]]:
    model = script(
        project / "s.json",
        [{"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}}]}, "never"],
    )
    child = _spawned(project, "run", "wait", "-m", model, "-w", "ws", "--json", "--yes")
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        if '"kind":"tool_call_started"' in line:
            break
    time.sleep(0.2)
    return child, lines


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_cancels_cooperatively_and_keeps_the_log(
    project: Path, signum: signal.Signals
) -> None:
    child, lines = _start_sleeping_run(project)
    start = time.monotonic()
    child.send_signal(signum)
    rest, stderr = child.communicate(timeout=20)
    assert time.monotonic() - start < 5  # the sleep was stopped, not waited for
    assert child.returncode == 130
    assert f"cancelling… ({signum.name}" in stderr
    assert "Traceback" not in stderr
    events = [EVENT.validate_json(line) for line in [*lines, *rest.splitlines()]]
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.stop_reason is StopReason.CANCELLED
    shown = reins("show", last.run_id, cwd=project)
    assert "Cancelled by the user before it finished." in shown.stdout
    assert "stopped: cancelled" in shown.stdout


@pytest.mark.parametrize("args", [["--version"], ["sessions"], ["show", "last"]])
def test_output_to_a_reader_already_gone_exits_quietly(project: Path, args: list[str]) -> None:
    reins("run", "seed", "-m", script(project / "s.json", ["fine"]), "-w", "ws", cwd=project)
    read, write = os.pipe()
    os.close(read)  # as `reins ... | true`: nobody reads
    done = subprocess.run(
        [*REINS, *args], cwd=project, stdout=write, stderr=subprocess.PIPE, text=True, env=_env()
    )
    os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_run_going_on_in_another_process_is_said_running_not_resumable(
    project: Path,
) -> None:
    child, lines = _start_sleeping_run(project)
    try:
        run_id = EVENT.validate_json(lines[0]).run_id
        listing = reins("sessions", cwd=project)
        [row] = [line for line in listing.stdout.splitlines() if run_id[:7] in line]
        assert row.split()[2] == "running"
        for command in ("show", "replay"):
            shown = reins(command, run_id, cwd=project)
            assert "running — another process is writing it; this is its log so far" in (
                shown.stdout
            )
            assert "reins resume" not in shown.stdout  # it would be refused: the run is busy
    finally:
        child.send_signal(signal.SIGTERM)
        child.communicate(timeout=20)
    after = reins("sessions", cwd=project)
    assert "cancelled" in after.stdout


def test_a_second_signal_stops_at_once_without_a_traceback(project: Path) -> None:
    child, _ = _start_sleeping_run(project)
    child.send_signal(signal.SIGTERM)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=20)
    assert child.returncode == 130
    assert "Traceback" not in stderr
    assert reins("sessions", cwd=project).returncode == 0  # the log is whole


@pytest.mark.parametrize("json_lines", [False, True])
def test_a_reader_that_goes_away_cancels_the_run_quietly(project: Path, json_lines: bool) -> None:
    model = script(
        project / "s.json",
        [{"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 1"}}]}, "never"],
    )
    flags = ["--json"] if json_lines else []
    child = _spawned(project, "run", "wait", "-m", model, "-w", "ws", "--yes", *flags)
    assert child.stdout is not None
    assert child.stderr is not None
    with child.stderr:
        for line in child.stdout:  # as `| head` does: read a while, then close
            if "run_command" in line:
                break
        child.stdout.close()  # the tool's result is written to nobody
        assert child.wait(timeout=20) == 130
        assert child.stderr.read() == ""
    listing = reins("sessions", cwd=project)
    assert "cancelled" in listing.stdout, listing.stdout  # recorded, not left unfinished


def test_help_lists_the_commands(project: Path) -> None:
    done = reins("--help", cwd=project)
    assert done.returncode == 0
    for command in ["run", "resume", "sessions", "show", "replay"]:
        assert command in done.stdout
