"""What a user sees when the store or its inputs go wrong: one damaged session, `reins doctor`,
a read-only store, a full disk, unreadable config, text a terminal could misread. Each command
runs as a real process on real files."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from reins.core._paths import project_store
from reins.events import EVENT

from .helpers import journal_events
from .test_cli import HELLO, REINS, _env, reins, script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def index(project: Path, sql: str, *params: str) -> list[tuple[str, ...]]:
    with closing(sqlite3.connect(project_store(project) / "reins.db")) as db:
        return db.execute(sql, params).fetchall()


def run_ids(project: Path) -> dict[str, str]:
    """Goal -> run id, from the index."""
    return dict(index(project, "SELECT goal, run_id FROM runs"))  # type: ignore[arg-type]


def session_of(project: Path, run_id: str) -> str:
    [(session,)] = index(project, "SELECT session_id FROM runs WHERE run_id = ?", run_id)
    return session


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_a_corrupt_line_takes_down_its_session_only_until_doctor_sets_it_aside(
    project: Path,
) -> None:
    model = script(project / "s.json", HELLO)
    for goal in ("damaged", "healthy"):
        assert reins("run", goal, "-m", model, "-w", "ws", cwd=project).returncode == 0
    runs = run_ids(project)
    journal = project_store(project) / "sessions" / f"{session_of(project, runs['damaged'])}.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    deep = b'{"kind": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"  # nested past any parser's limit
    journal.write_bytes(b"".join([*lines[:5], deep, *lines[6:]]))

    listing = reins("sessions", cwd=project)  # every session is listed; a warning says which
    assert listing.returncode == 0
    assert runs["damaged"][:7] in listing.stdout
    assert runs["healthy"][:7] in listing.stdout
    damage = f"{journal}, line 6, is not a reins event"
    assert damage in listing.stderr
    healthy = reins("show", runs["healthy"], cwd=project)
    assert healthy.returncode == 0
    assert healthy.stderr.count(damage) == 1  # another session's damage: a warning, once
    assert reins("replay", runs["healthy"], cwd=project).returncode == 0
    fresh = reins("run", "new", "-m", model, "-w", "ws", cwd=project)
    assert fresh.returncode == 0, fresh.stderr
    healthy_session = session_of(project, runs["healthy"])
    more = script(project / "more.json", [*HELLO, "second turn"])
    turn = reins("run", "more", "-m", more, "-w", "ws", "-s", healthy_session, cwd=project)
    assert turn.returncode == 0, turn.stderr

    damaged_session = ["run", "more", "-m", more, "-w", "ws", "-s", journal.stem]
    for args in (["show", runs["damaged"]], ["resume", runs["damaged"]], damaged_session):
        refused = reins(*args, cwd=project)
        assert refused.returncode == 1
        error = one_line_error(refused)
        assert error.startswith(f"error: {damage}: Invalid JSON: recursion limit exceeded")
        assert error.endswith("run `reins doctor` to move the damage aside and keep the rest")
        assert refused.stderr.count(damage) == 1, refused.stderr  # said once: no warning too

    checked = reins("doctor", "--check", cwd=project)
    assert checked.returncode == 1
    assert "would move aside: lines 6-" in checked.stdout
    by_prefix = reins("doctor", "--check", journal.stem[:-2], cwd=project)  # of this session
    assert by_prefix.returncode == 1
    assert "would move aside: lines 6-" in by_prefix.stdout
    assert journal.read_bytes() == b"".join([*lines[:5], deep, *lines[6:]])  # untouched

    repaired = reins("doctor", cwd=project)
    assert repaired.returncode == 0, repaired.stderr
    [aside] = journal.parent.glob(f"{journal.name}.corrupt-*")
    assert aside.read_bytes() == b"".join([deep, *lines[6:]])  # moved, not deleted
    assert journal.read_bytes() == b"".join(lines[:5])
    out = " ".join(repaired.stdout.split())
    assert f"{journal}:line6isnotareinsevent" in "".join(out.split())  # a long path wraps
    assert "kept: lines 1-5" in out
    assert f"moved aside: lines 6-{len(lines)}" in out
    assert f"run {runs['damaged'][:7]}: events 1-5 kept, unfinished (`reins resume" in out

    shown = reins("show", runs["damaged"], cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "unfinished" in shown.stdout
    replayed = reins("replay", runs["damaged"], cwd=project)
    assert replayed.returncode == 1  # its process died: not cancelled, not done
    assert f"unfinished — `reins resume {runs['damaged'][:7]}` continues it" in replayed.stdout
    assert reins("resume", runs["damaged"], cwd=project).returncode == 0
    assert reins("doctor", "--check", cwd=project).stdout.startswith("the log is sound")


def test_doctor_rebuilds_an_index_that_is_not_a_database(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    assert reins("run", "go", "-m", model, "-w", "ws", cwd=project).returncode == 0
    store = project_store(project)
    (store / "reins.db").write_bytes(b"garbage" * 1000)
    (store / "reins.db-wal").unlink(missing_ok=True)
    (store / "reins.db-shm").unlink(missing_ok=True)
    assert "run `reins doctor`" in one_line_error(reins("sessions", cwd=project))
    repaired = reins("doctor", cwd=project)
    assert repaired.returncode == 0, repaired.stderr
    said = "".join(repaired.stdout.split())  # the store's path is long: the line wraps
    assert f"{store}/reins.dbwasnotareadabledatabase:movedtoreins.db.corrupt-" in said
    [aside] = store.glob("reins.db.corrupt-*")
    assert aside.read_bytes() == b"garbage" * 1000
    listing = reins("sessions", cwd=project)
    assert listing.returncode == 0
    assert "end_turn" in listing.stdout


BWRAP = ("--dev", "/dev", "--proc", "/proc")


def in_read_only(store: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`reins ARGS` with the store mounted read-only (bubblewrap: root ignores file modes)."""
    return subprocess.run(
        [
            *("bwrap", "--bind", "/", "/", "--ro-bind", str(store), str(store)),
            *BWRAP,
            *REINS,
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_read_only_store_is_read_and_not_written(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    assert reins("run", "go", "-m", model, "-w", "ws", cwd=project).returncode == 0
    store = project_store(project)
    run_id = run_ids(project)["go"]
    [journal] = (store / "sessions").glob("*.jsonl")
    with journal.open("ab") as f:
        f.write(b'{"v": 1, "sess')  # a torn last line: on a read-only store it stays
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}

    listing = in_read_only(store, "sessions", cwd=project)
    assert listing.returncode == 0, listing.stderr
    assert run_id[:7] in listing.stdout
    shown = in_read_only(store, "show", run_id, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "hello.txt says hi" in shown.stdout
    assert in_read_only(store, "replay", run_id, cwd=project).returncode == 0

    refused = in_read_only(store, "run", "again", "-m", model, "-w", "ws", cwd=project)
    assert refused.returncode == 1
    assert one_line_error(refused).startswith(
        f"error: the event log at {store} is read-only (Read-only file system): it can be "
        "read (sessions, show, replay) but not written"
    )
    turn = ["run", "on", "--session", "last", "-m", model, "-w", "ws"]
    for command in (["resume", run_id], ["compact", "last"], turn):  # each claims the session
        refused = in_read_only(store, *command, cwd=project)
        assert refused.returncode == 1, command
        assert one_line_error(refused).startswith(
            f"error: the event log at {store} is read-only (Read-only file system)"
        ), command
    doctored = in_read_only(store, "doctor", cwd=project)
    assert doctored.returncode == 1
    said = " ".join(doctored.stdout.split())
    assert "(cannot be opened to repair: [Errno 30] Read-only file system:" in said
    assert said.endswith("not repaired: nothing of it was changed")  # not: run doctor, again
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_a_full_disk_says_so_and_the_run_resumes_once_there_is_room(
    project: Path, tmp_path: Path
) -> None:
    """On a small tmpfs of its own (a mount namespace): a tool fills the disk, so the next
    commit fails; the log ends on a whole event, and freeing space lets the run resume."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare")
    small = tmp_path / "small"
    small.mkdir()
    replies = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "w"}}]},
        {  # a reply too big for the room left
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "b", "content": "b" * 40000}}
            ]
        },
        "FINAL_ANSWER: done",
    ]
    model = script(project / "s.json", replies)
    out = tmp_path / "out"
    out.mkdir()
    steps = f"""
set -u
mount -t tmpfs -o size=400k tmpfs {small} || exit 77
cd {small} && mkdir ws
run() {{ "$@" > {out}/$n.out 2> {out}/$n.err; echo $? > {out}/$n.rc; n=$((n+1)); }}
n=0
run {" ".join(REINS)} run go -m {model} -w ws --json --max-steps 1 --store .reins
head -c 1000000 /dev/zero > ws/ballast 2>/dev/null
run {" ".join(REINS)} resume last --max-steps 5 --store .reins
rm ws/ballast
cp -r .reins {out}/store-full
run {" ".join(REINS)} resume last --max-steps 5 --store .reins
"""
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", steps],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    if done.returncode == 77 or not (out / "0.rc").exists():
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr}")

    def result(n: int) -> tuple[int, str, str]:
        return (
            int((out / f"{n}.rc").read_text()),
            (out / f"{n}.out").read_text(),
            (out / f"{n}.err").read_text(),
        )

    rc, stdout, _ = result(0)
    assert rc == 3
    run_id = EVENT.validate_json(stdout.splitlines()[0]).run_id
    rc, stdout, stderr = result(1)
    assert rc == 1, stderr
    assert "Traceback" not in stderr
    assert one_line_error(subprocess.CompletedProcess([], rc, "", stderr)).startswith(
        "error: the disk holding .reins/sessions is full (No space left on device); the log "
        "ends at the last whole event"
    )
    assert f"free space and `reins resume {run_id}`" in stderr
    [journal] = (out / "store-full" / "sessions").glob("*.jsonl")
    data = journal.read_bytes()
    assert data.endswith(b"\n")  # a clean event boundary
    assert [event.seq for event in journal_events(data)] == list(range(1, data.count(b"\n") + 1))
    rc, stdout, stderr = result(2)
    assert rc == 0, stderr + stdout
    assert "done" in stdout


def test_a_config_file_that_cannot_be_read_is_one_line(project: Path) -> None:
    model = script(project / "s.json", HELLO)
    (project / "reins.toml").mkdir()  # a folder where the file should be
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 2
    assert one_line_error(done) == (
        f"error: config {project / 'reins.toml'}: a folder, not a regular file; remove "
        "it, or put a TOML file in its place"
    )


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_a_config_file_without_read_permission_is_one_line(project: Path) -> None:
    """Root reads any file; without its DAC capabilities it obeys the file's mode."""
    model = script(project / "s.json", HELLO)
    config = project / "reins.toml"
    config.write_text('model = "local"\n')
    config.chmod(0)
    no_override = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    done = subprocess.run(
        [*no_override, *REINS, "run", "go", "-m", model, "-w", "ws"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 2, done.stderr
    assert one_line_error(done) == (f"error: config {config}: cannot read it: Permission denied")


def test_a_script_nested_too_deep_is_one_line(project: Path) -> None:
    (project / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    done = reins("run", "go", "-m", "script:deep.json", "-w", "ws", cwd=project)
    assert done.returncode == 2
    assert one_line_error(done) == "error: script deep.json is nested too deep to read"


def test_a_config_nested_too_deep_is_one_line(project: Path) -> None:
    (project / "reins.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    done = reins("run", "go", "-m", "script:s.json", "-w", "ws", cwd=project)
    assert done.returncode == 2
    assert "nested too deep" in one_line_error(done)


TRICKY = ":smile: [bold]not bold[/bold] [/] [red]x \\"


def test_tool_output_and_model_text_are_shown_verbatim(project: Path) -> None:
    replies = [
        {
            "text": f"Model says {TRICKY}",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "t.txt", "content": TRICKY}}
            ],
        },
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "t.txt"}}]},
        f"FINAL_ANSWER: {TRICKY}",
    ]
    model = script(project / "s.json", replies)
    live = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert live.returncode == 0, live.stderr
    run_id = run_ids(project)["go"]
    shown = reins("show", run_id, cwd=project)
    replayed = reins("replay", run_id, cwd=project)
    for done in (live, shown, replayed):
        assert f"Model says {TRICKY}" in done.stdout
        assert f"← read_file {TRICKY}" in done.stdout
        assert "😄" not in done.stdout
    for done in (live, replayed):  # the answer was shown as the model wrote it: not again
        assert f"FINAL_ANSWER: {TRICKY}\n" in done.stdout
        assert "✓ final answer (above)" in done.stdout
    assert f"│ {TRICKY}" in shown.stdout  # `show`: the final answer's panel


def test_unencodable_text_runs_resumes_shows_and_replays(project: Path) -> None:
    """A script's JSON may spell a lone surrogate ("\\ud800"); so may a model's reply."""
    replies = [
        {
            "text": "odd \ud800",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "o.txt", "content": "x\udc80"}}
            ],
        },
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "o.txt"}}]},
        "FINAL_ANSWER: odd \ud800 too",
    ]
    (project / "s.json").write_text("[" + ",".join(json.dumps(r) for r in replies) + "]")
    assert '"odd \\ud800"' in (project / "s.json").read_text()  # JSON's escape of one
    capped = reins("run", "go", "-m", "script:s.json", "-w", "ws", "--max-steps", "1", cwd=project)
    assert capped.returncode == 3, capped.stderr
    assert "odd \\ud800" in capped.stdout
    run_id = run_ids(project)["go"]
    resumed = reins("resume", run_id, "--max-steps", "5", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert "odd \\ud800 too" in resumed.stdout
    for args in (["show", run_id], ["replay", run_id]):
        done = reins(*args, cwd=project)
        assert done.returncode == 0, done.stderr
        assert "odd \\ud800 too" in done.stdout
        assert "Traceback" not in done.stderr
    assert (project / "ws" / "o.txt").read_text() == "x\\udc80"


def test_doctor_is_listed_in_help(project: Path) -> None:
    assert "doctor" in reins("--help", cwd=project).stdout


def test_reins_runs_from_this_checkout() -> None:
    """The CLI tests run `python -m reins`: it must be these sources."""
    done = subprocess.run(
        [sys.executable, "-c", "import reins; print(reins.__file__)"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd="/",
    )
    assert Path(done.stdout.strip()).is_relative_to(ROOT / "src"), done.stdout
