"""A run's commands cannot reach its own log, and a log that came with a project is not read
(issue 26, items 4 and 6)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reins import Agent, WorkspaceError
from reins.core._paths import data_home, project_store
from reins.store import SQLiteLog
from reins.testing import ScriptedModel

from ..test_cli import reins, script

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def command(line: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": line}}]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def test_the_log_lives_in_the_users_data_folder_not_in_the_project(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    assert reins("run", "go", "-m", model, "-w", "ws", cwd=project).returncode == 0
    assert not (project / ".reins").exists()
    assert not (project / "ws" / ".reins").exists()
    store = project_store(project)
    assert store.is_relative_to(data_home())
    assert (store / "reins.db").is_file()
    listing = reins("sessions", cwd=project)
    assert "go" in listing.stdout, listing.stderr
    # Another folder has its own log: nothing of this one.
    (project / "ws" / "other").mkdir()
    elsewhere = reins("sessions", cwd=project / "ws" / "other")
    assert elsewhere.returncode == 2
    assert "no event log for" in elsewhere.stderr


@pytest.mark.parametrize("inside", [".", "sessions"])
def test_a_workspace_in_the_store_is_refused(project: Path, inside: str) -> None:
    """The review's `--workspace .reins`: a command appended a forged event to a journal."""
    store = project / "store"
    model = script(project / "s.json", ["FINAL_ANSWER: seeded"])
    assert (
        reins("run", "seed", "-m", model, "-w", "ws", "--store", "store", cwd=project).returncode
        == 0
    )
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "-wal" not in p.name}
    forge = script(project / "f.json", [command("echo forged >> sessions/*.jsonl"), "done"])
    workspace = str(store / inside)
    done = reins(
        "run", "forge", "-m", forge, "-w", workspace, "--store", "store", "--yes", cwd=project
    )
    assert done.returncode == 2, done.stderr
    assert "is inside the event log's folder" in done.stderr
    assert "Traceback" not in done.stderr
    journals = {p: p.read_bytes() for p in (store / "sessions").glob("*.jsonl")}
    assert journals == {p: b for p, b in before.items() if p.suffix == ".jsonl"}


@pytest.mark.parametrize("depth", ["a/store", "a/b/store"])
def test_a_store_below_a_folder_of_the_workspace_is_refused(project: Path, depth: str) -> None:
    """The review's `--store ws/a/b/store`: a command renamed the store's parent folder and
    planted a forged store in its place, which the next `reins show` printed."""
    model = script(project / "s.json", ["FINAL_ANSWER: fine"])
    done = reins("run", "go", "-m", model, "-w", "ws", "--store", f"ws/{depth}", cwd=project)
    assert done.returncode == 2, done.stderr
    assert "a folder the run's commands may rename" in done.stderr
    assert f"below {(project / 'ws' / 'a').resolve()}" in done.stderr
    assert not (project / "ws" / "a").exists()  # refused before the log was opened


def test_the_library_refuses_a_store_nested_in_the_workspace(workspace: Path) -> None:
    agent = Agent(
        model=ScriptedModel(["done"]),
        workspace=workspace,
        log=SQLiteLog(workspace / "logs" / "store"),
    )
    with pytest.raises(WorkspaceError, match=r"below .*/logs, a folder"):
        agent.run_sync("go")


@needs_bwrap
def test_a_store_directly_in_the_workspace_cannot_be_moved_or_rewritten(project: Path) -> None:
    """`ws/.reins` is allowed: it and the workspace are mount points in the sandbox, so no
    command can rename either, and the store's folder is read-only."""
    attack = " ; ".join(
        [
            "mv .reins moved",
            "mkdir -p .reins/sessions",
            "echo forged > .reins/reins.db",
            "echo forged >> .reins/sessions/*.jsonl",
            "mv . ../elsewhere",
        ]
    )
    model = script(project / "s.json", [command(attack), "FINAL_ANSWER: tried"])
    done = reins("run", "go", "-m", model, "-w", "ws", "--store", "ws/.reins", "--yes", cwd=project)
    assert done.returncode == 0, done.stderr
    shown = reins("show", "last", "--store", "ws/.reins", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "tried" in shown.stdout
    assert "Device or resource busy" in shown.stdout  # the mv, as the command said
    assert not (project / "ws" / "moved").exists()
    assert not (project / "elsewhere").exists()
    store = project / "ws" / ".reins"
    assert (store / "reins.db").read_bytes().startswith(b"SQLite format 3")
    assert all(
        not line.startswith(b"forged")
        for journal in (store / "sessions").glob("*.jsonl")
        for line in journal.read_bytes().splitlines()
    )


def test_a_log_a_project_ships_is_not_read_unless_named(project: Path) -> None:
    """The review's cloned repository with a `.reins/` store: `--session last` continued the
    shipped session. Now the shipped log is not the default, and a reading command says so."""
    shipped = project / ".reins"
    model = script(project / "s.json", ["FINAL_ANSWER: shipped"])
    made = reins("run", "theirs", "-m", model, "-w", "ws", "--store", str(shipped), cwd=project)
    assert made.returncode == 0, made.stderr

    cont = reins("run", "mine", "-m", model, "-w", "ws", "--session", "last", cwd=project)
    assert cont.returncode == 2
    assert "no session" in cont.stderr or "no run" in cont.stderr, cont.stderr
    listing = reins("sessions", cwd=project)
    assert "theirs" not in listing.stdout
    assert "holds an event log, which is read only when named (--store .reins)" in listing.stderr
    named = reins("sessions", "--store", ".reins", cwd=project)
    assert "theirs" in named.stdout
