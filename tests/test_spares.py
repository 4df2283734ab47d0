"""New journals made ahead on a thread where creating a file is slow (made to count as slow)."""

from __future__ import annotations

import asyncio
import os
import time
import warnings
from pathlib import Path

import pytest

from reins import Agent, SQLiteLog, StopReason
from reins.store._spares import Spares
from reins.testing import ScriptedModel

from .helpers import call, reply


@pytest.fixture
def slow_creates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every create counts as slow, so the first one starts the thread."""
    monkeypatch.setattr(Spares, "SLOW_CREATE", -1.0)
    monkeypatch.setattr(Spares, "SLOW_CREATES", 1)


def spares_of(store: Path) -> dict[int, Path]:
    """The spares waiting in `store`, by inode."""
    folder = store / "sessions" / ".spares"
    return {p.stat().st_ino: p for p in folder.iterdir()} if folder.is_dir() else {}


def stocked(store: Path, at_least: int = Spares.LOW) -> dict[int, Path]:
    deadline = time.monotonic() + 10
    while len(found := spares_of(store)) < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


def agent(log: SQLiteLog, workspace: Path) -> Agent:
    return Agent(
        model=ScriptedModel([reply("", call("list_files", "c0")), "done"]),
        workspace=workspace,
        log=log,
    )


@pytest.mark.usefixtures("slow_creates")
async def test_new_journals_are_spares_and_each_is_a_file_of_its_own(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    stale = store / "sessions" / ".spares" / "left-by-a-crash"
    stale.parent.mkdir(parents=True)
    stale.touch()
    log = SQLiteLog(store)
    first = await agent(log, workspace).run("go")  # created; starts the thread
    assert not stale.exists()
    spare_inodes = set(stocked(store))
    results = [await agent(log, workspace).run(f"go {i}") for i in range(Spares.LOW)]

    journals = [store / "sessions" / f"{r.session_id}.jsonl" for r in [first, *results]]
    inodes = [j.stat().st_ino for j in journals]
    assert len(set(inodes)) == len(journals)  # never two sessions in one file
    assert set(inodes[1:]) <= spare_inodes  # the spares stocked became the journals
    for result, journal in zip([first, *results], journals, strict=True):
        assert result.stop_reason is StopReason.END_TURN
        events = await log.events(result.run_id)
        assert journal.read_bytes().count(b"\n") == len(events)
        assert {e.session_id for e in events} == {result.session_id}
    await log.close()
    assert spares_of(store) == {}  # closing removes what was not used


@pytest.mark.usefixtures("slow_creates")
async def test_a_spare_never_replaces_a_sessions_journal(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    first = await agent(log, workspace).run("go")
    stock = stocked(store)
    journal = store / "sessions" / f"{first.session_id}.jsonl"
    before = journal.read_bytes()
    second = await agent(log, workspace).run("again", session_id=first.session_id)
    assert journal.read_bytes().startswith(before)
    assert journal.stat().st_ino not in stock
    assert (await log.events(second.run_id))[0].seq == 1
    assert len(await log.events(first.run_id)) == before.count(b"\n")
    await log.close()


@pytest.mark.usefixtures("slow_creates")
def test_a_forked_child_leaves_its_parents_spares_alone(tmp_path: Path, workspace: Path) -> None:
    store = tmp_path / "store"
    log = SQLiteLog(store)
    asyncio.run(agent(log, workspace).run("go"))
    stock = stocked(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with a thread running
        pid = os.fork()
    if pid == 0:  # the child writes a session of its own, then exits at once
        code = 1
        try:
            log.journals.append("child", b"{}\n")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    child = (store / "sessions" / "child.jsonl").stat()
    assert child.st_ino not in stock
    assert all(path.exists() for path in stock.values())  # the parent's, still there to use
    asyncio.run(log.close())


@pytest.mark.usefixtures("slow_creates")
async def test_without_a_place_for_spares_journals_are_created_as_needed(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    (store / "sessions").mkdir(parents=True)
    (store / "sessions" / ".spares").write_text("not a folder")
    log = SQLiteLog(store)
    results = [await agent(log, workspace).run(f"go {i}") for i in range(3)]
    for result in results:
        assert result.stop_reason is StopReason.END_TURN
        assert len(await log.events(result.run_id)) > 4
    await log.close()


@pytest.mark.usefixtures("slow_creates")
async def test_where_files_cannot_be_linked_spares_are_given_up(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No filesystem here lacks hard links, so `link` is made to fail as one would."""
    store = tmp_path / "store"
    log = SQLiteLog(store)
    await agent(log, workspace).run("go")
    stocked(store)

    def no_links(source: str, target: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    results = [await agent(log, workspace).run(f"go {i}") for i in range(3)]
    assert all(r.stop_reason is StopReason.END_TURN for r in results)
    assert spares_of(store) == {}  # given up at the first failure, and cleaned up
    await log.close()
