"""The event log on a real PostgreSQL (tests/postgres.py starts one): what only it has (a
session's lock that a killed process loses, a schema version, an address that can be wrong),
the commands on it, and sessions moved between it and a folder (`reins store copy`). The
contract both logs keep runs on both in test_store.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reins import (
    Agent,
    Budgets,
    Image,
    RunState,
    SessionBusy,
    SQLiteLog,
    StoreError,
    UserMessage,
)
from reins.events import Event, RunStarted
from reins.store._chain import opened
from reins.testing import ScriptedModel

from .helpers import call, reply
from .test_cli import HELLO, REINS, _env, reins, script
from .test_media import png
from .test_store import Explodes, pause, per_turn
from .test_store_cli import one_line_error

try:
    import psycopg

    from reins.store import PostgresLog
except ImportError:  # without reins[postgres]: skipped here, failed on CI (which installs it)
    if os.environ.get("CI"):
        raise
    pytest.skip("psycopg is not installed: pip install 'reins[postgres]'", allow_module_level=True)

HOLDER = """
import sys
from reins.store import PostgresLog

log = PostgresLog(sys.argv[1])
log.claim(sys.argv[2])
print("claimed", flush=True)
sys.stdin.read()
"""
"""Another process: it claims a session and waits (its lock held) until it is killed."""


def rows(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as db:
        return db.execute(sql, params).fetchall()


def test_a_session_claimed_by_a_killed_process_is_free_once_it_is_dead(postgres_url: str) -> None:
    log = PostgresLog(postgres_url)
    try:
        command = [sys.executable, "-c", HOLDER, postgres_url, "s-held"]
        pipes: dict[str, Any] = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        with subprocess.Popen(command, text=True, **pipes) as held:
            try:
                assert held.stdout is not None
                assert held.stdout.readline() == "claimed\n"
                with pytest.raises(SessionBusy, match="session s-held is being written by anoth"):
                    log.claim("s-held")
                assert log.writing("s-held")
            finally:
                held.send_signal(signal.SIGKILL)  # no goodbye: the server sees its socket close
        deadline = time.monotonic() + 10
        while log.writing("s-held"):
            assert time.monotonic() < deadline, "the dead process's lock outlived it"
            time.sleep(0.05)
        log.claim("s-held")  # free: a turn may start
        assert log.writing("s-held")
        log.release("s-held")
        assert not log.writing("s-held")
    finally:
        asyncio.run(log.close())


async def test_whether_a_session_is_written_is_asked_through_the_pool_too(
    postgres_url: str,
) -> None:
    """`writing_now` (what a server's streams ask at each look) says what `writing` says."""
    log, other = PostgresLog(postgres_url), PostgresLog(postgres_url)
    try:
        before = await log.writing_now("s-w")
        other.claim("s-w")
        during = await log.writing_now("s-w"), log.writing("s-w")
        other.release("s-w")
        after = await log.writing_now("s-w")
    finally:
        await log.close()
        await other.close()
    assert (before, during, after) == (False, (True, True), False)


async def test_a_store_from_a_newer_reins_is_refused_naming_its_version(
    postgres_url: str, tmp_path: Path
) -> None:
    where = postgres_url.removeprefix("postgresql://reins@")
    empty = reins("sessions", "--store", postgres_url, cwd=tmp_path)  # a read makes no tables
    assert one_line_error(empty) == (
        f"error: no reins event log in the PostgreSQL database {where} yet; run `reins run GOAL "
        "--store ...` first (it makes the tables)"
    )
    await PostgresLog(postgres_url).close()  # makes the tables, at this reins' version
    rows(postgres_url, "UPDATE reins_schema SET version = 99 RETURNING version")
    says = (
        f"the PostgreSQL store at {where} has schema version 99, made by a newer reins; this "
        "one knows versions up to 2: upgrade reins (pip install -U 'reins[postgres]') to use it"
    )
    with pytest.raises(StoreError) as caught:
        PostgresLog(postgres_url)
    assert str(caught.value) == says
    done = reins("sessions", "--store", postgres_url, cwd=tmp_path)
    assert done.returncode == 1
    assert one_line_error(done) == f"error: {says}"
    assert rows(postgres_url, "SELECT version FROM reins_schema") == [(99,)]  # not changed


async def test_a_store_of_an_older_schema_is_migrated_keeping_its_runs(
    postgres_url: str, workspace: Path
) -> None:
    """A store made at version 1 (before leases) is brought to this reins' version when
    opened, its runs as they were."""
    from reins.store._pg_schema import MIGRATIONS, SCHEMA_VERSION

    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE reins_schema (version integer NOT NULL)")
        db.execute(MIGRATIONS[0].encode())
        db.execute("INSERT INTO reins_schema VALUES (1)")
    old = PostgresLog(postgres_url)  # opened at version 1: migrated, then written
    try:
        agent = Agent(model=ScriptedModel(["FINAL_ANSWER: hi"]), workspace=workspace, log=old)
        result = await agent.run("say hi")
    finally:
        await old.close()
    assert rows(postgres_url, "SELECT version FROM reins_schema") == [(SCHEMA_VERSION,)]
    assert SCHEMA_VERSION == 2
    assert rows(postgres_url, "SELECT count(*) FROM reins_leases") == [(0,)]
    again = PostgresLog(postgres_url)
    try:
        assert [e.kind for e in await again.events(result.run_id)][-1] == "run_finished"
    finally:
        await again.close()


async def test_an_expired_lease_is_claimed_once_and_only_if_its_session_is_free(
    postgres_url: str,
) -> None:
    """A lease renewed in time stays its server's; one expired is taken by one of two servers
    claiming at once, unless a process still writes its session (a server slow to renew, or a
    `reins resume` that took the session first)."""
    logs = [PostgresLog(postgres_url) for _ in range(3)]
    try:
        gone, one, two = (log.leases(name, 60) for log, name in zip(logs, "abc", strict=True))
        for run_id in ("r-live", "r-held", "r-free"):
            gone.take(run_id, f"s-{run_id}")
        gone.take("r-dropped", "s-r-dropped")
        gone.drop("r-dropped")  # before it was written: never written
        await gone.flush()
        fresh = await one.claim_orphans()  # none has expired
        rows(postgres_url, "UPDATE reins_leases SET expires = now() - interval '1 s' RETURNING 1")
        await gone.renew()
        assert await one.claim_orphans() == []  # renewed: its server is alive
        rows(
            postgres_url,
            "UPDATE reins_leases SET expires = now() - interval '1 s' "
            "WHERE run_id <> %s RETURNING 1",
            "r-live",
        )
        logs[0].claim("s-r-held")  # its writer is still there
        claims = await asyncio.gather(one.claim_orphans(), two.claim_orphans())
        owners = dict(rows(postgres_url, "SELECT run_id, owner FROM reins_leases"))
        for leases, run_id in ((one, "r-free"), (two, "r-free"), (gone, "r-held")):
            leases.drop(run_id)
            await leases.flush()
        left = rows(postgres_url, "SELECT run_id FROM reins_leases ORDER BY run_id")
        leased = [await one.leased(r) for r in ("r-live", "r-free")]
    finally:
        for log in logs:
            await log.close()
    assert fresh == []
    assert sorted(claims) == [[], ["r-free"]]  # one of the two, once
    assert owners == {"r-live": "a", "r-held": "a", "r-free": "b" if claims[0] else "c"}
    assert left == [("r-live",)]  # dropped by its owner only
    assert leased == [True, False]


ADDRESS = "postgresql://USER@HOST:PORT/DATABASE"


@pytest.mark.parametrize(
    ("store", "says"),
    [
        (
            "postgresql://127.0.0.1:1/x",
            "cannot connect to the PostgreSQL store at 127.0.0.1:1 (database x): Connection "
            "refused; check that the server runs there and takes connections, or give --store "
            "(REINS_STORE) another address",
        ),
        (
            "postgresql://127.0.0.1:abc/x",
            f"not a PostgreSQL address (its port 'abc' is not a number): give one as {ADDRESS}",
        ),
        (
            "postgres://me:secret@127.0.0.1/x?nonsense=1",
            f'not a PostgreSQL address (invalid URI query parameter: "nonsense"): give one as '
            f"{ADDRESS}",
        ),
    ],
)
def test_a_store_that_cannot_be_reached_is_one_line(tmp_path: Path, store: str, says: str) -> None:
    done = reins("sessions", "--store", store, cwd=tmp_path)
    assert done.returncode == 1
    assert one_line_error(done) == f"error: {says}"
    assert "secret" not in done.stderr
    run = subprocess.run(  # REINS_STORE, and a command that would write
        [*REINS, "run", "go", "-m", "script:none.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**_env(), "REINS_STORE": store},
    )
    assert run.returncode == 1
    assert one_line_error(run) == f"error: {says}"


def normal(event: Event) -> dict[str, Any]:
    """An event without what differs between two recordings of the same run: ids, times, and
    what the system prompt changes. A log with no folder (PostgreSQL's) has no place for the
    files a long tool result is spilled to, so its prompt does not offer them: a sentence
    less, fewer input tokens."""
    volatile = {"ts", "run_id", "session_id", "duration_ms", "usage"}
    data = event.model_dump(mode="json", exclude=volatile)
    if event.kind == "run_started":
        data["messages"] = data["messages"][1:]  # the system prompt
    return data


async def test_an_agent_run_and_its_resume_read_back_as_on_sqlite(
    postgres_url: str, tmp_path: Path, workspace: Path
) -> None:
    async def record(log: SQLiteLog | PostgresLog) -> list[Event]:
        replies = [*(reply("", call("list_files", f"l{i}")) for i in range(3)), "done"]
        agent = Agent(
            model=ScriptedModel(replies), workspace=workspace, budgets=Budgets(max_steps=2), log=log
        )
        capped = await agent.run("go")
        await agent.resume(capped.run_id)  # at its cap: as many steps again
        await log.close()
        reopened = (
            SQLiteLog(log.directory) if isinstance(log, SQLiteLog) else PostgresLog(postgres_url)
        )
        events = await reopened.events(capped.run_id)
        await reopened.close()
        return events

    on_sqlite = await record(SQLiteLog(tmp_path / "store"))
    on_postgres = await record(PostgresLog(postgres_url))
    assert [normal(e) for e in on_postgres] == [normal(e) for e in on_sqlite]
    assert RunState.fold(on_postgres).messages[1:] == RunState.fold(on_sqlite).messages[1:]
    assert RunState.fold(on_postgres).finished is not None


async def test_store_copy_to_postgres_and_back_keeps_every_event_byte_for_byte(
    postgres_url: str, tmp_path: Path, workspace: Path
) -> None:
    """Sessions with an image (a blob), two turns, and a run that stopped unfinished go to
    PostgreSQL and back to a new folder: each event is the same bytes all the way."""
    first = SQLiteLog(tmp_path / "a")
    agent = Agent(model=per_turn(1), tools=[pause], workspace=workspace, log=first)
    looked = await agent.run(["What is this?", Image.from_bytes(png(), name="shot.png")])
    await agent.run("and now?", session_id=looked.session_id)
    broken = Agent(
        model=per_turn(1), tools=[pause], workspace=workspace, log=first, policies=[Explodes()]
    )
    with pytest.raises(RuntimeError, match="bug"):
        await broken.run("stops unfinished")
    await first.close()

    there = reins("store", "copy", str(tmp_path / "a"), postgres_url, cwd=tmp_path)
    assert there.returncode == 0, there.stderr
    assert there.stdout.startswith("copied 2 session(s), 3 run(s), ")
    back = reins("store", "copy", postgres_url, str(tmp_path / "b"), cwd=tmp_path)
    assert back.returncode == 0, back.stderr

    def bodies(store: Path) -> dict[str, list[bytes]]:
        return {
            journal.stem: [opened(line)[0] for line in journal.read_bytes().splitlines()]
            for journal in (store / "sessions").glob("*.jsonl")
        }

    assert bodies(tmp_path / "b") == bodies(tmp_path / "a")
    in_postgres: dict[str, list[bytes]] = {}
    for session_id, body in rows(
        postgres_url,
        "SELECT e.session_id, e.body FROM reins_events e JOIN reins_runs r USING (run_id) "
        "ORDER BY r.started_at, e.seq",
    ):
        in_postgres.setdefault(session_id, []).append(bytes(body))
    assert in_postgres == bodies(tmp_path / "a")
    assert [p.name for p in (tmp_path / "b" / "blobs").rglob("*") if p.is_file()] == [
        p.name for p in (tmp_path / "a" / "blobs").rglob("*") if p.is_file()
    ]
    copied, original = SQLiteLog(tmp_path / "b"), SQLiteLog(tmp_path / "a")
    assert await copied.runs() == await original.runs()
    await original.close()
    later = await Agent(model=per_turn(0), workspace=workspace, log=copied).run(
        "go on", session_id=looked.session_id
    )  # signed as the user's in the new folder: it goes on
    assert later.final_answer == "done"
    await copied.close()

    again = reins("store", "copy", str(tmp_path / "a"), postgres_url, cwd=tmp_path)
    assert again.returncode == 1
    assert one_line_error(again).startswith(
        f"error: the PostgreSQL store at {postgres_url.removeprefix('postgresql://reins@')} "
        f"holds session {looked.session_id} (and 1 more) already; nothing was copied"
    )
    assert rows(postgres_url, "SELECT count(*) FROM reins_runs") == [(3,)]


async def test_an_image_is_kept_once_and_goes_with_the_last_session_that_shows_it(
    postgres_url: str, workspace: Path
) -> None:
    log = PostgresLog(postgres_url)
    image = Image.from_bytes(png(), name="shot.png")
    agent = Agent(model=per_turn(0), workspace=workspace, log=log)
    first = await agent.run(["What is this?", image])
    second = await agent.run(["And this?", image])
    assert rows(postgres_url, "SELECT sha256 FROM reins_blobs") == [(image.sha256,)]
    other = PostgresLog(postgres_url)
    [started, *_] = await other.events(second.run_id)  # read elsewhere: the bytes with it
    assert isinstance(started, RunStarted)
    assert [m.media for m in started.messages if isinstance(m, UserMessage)] == [(image,)]
    other.claim(first.session_id)  # another process starts a turn of it
    with pytest.raises(SessionBusy, match="is being written by another process"):
        await log.remove(first.session_id)
    other.release(first.session_id)
    await other.close()
    assert await log.remove(first.session_id) == [first.run_id]
    assert rows(postgres_url, "SELECT count(*) FROM reins_blobs") == [(1,)]  # the second's
    await log.remove(second.session_id)
    assert rows(postgres_url, "SELECT count(*) FROM reins_blobs") == [(0,)]
    await log.close()


def test_the_commands_read_and_mend_a_postgres_store(postgres_url: str, tmp_path: Path) -> None:
    """`run` with REINS_STORE, then `sessions`, `show`, `replay`, `doctor` and `sessions rm`
    on the PostgreSQL store, as on a folder."""
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", HELLO)
    env = {**_env(), "REINS_STORE": postgres_url}

    def on_store(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*REINS, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
        )

    done = on_store("run", "say hi", "-m", model, "-w", "ws")
    assert done.returncode == 0, done.stderr
    [listed] = json.loads(on_store("sessions", "--json").stdout)
    assert (listed["goal"], listed["stop_reason"], listed["running"]) == (
        "say hi",
        "end_turn",
        False,
    )
    shown = on_store("show", "last")
    assert "hello.txt says hi" in shown.stdout, shown.stderr
    assert on_store("replay", "last").returncode == 0

    rows(postgres_url, "UPDATE reins_runs SET goal = 'changed' RETURNING run_id")
    checked = on_store("doctor", "--check")
    assert checked.returncode == 1
    assert "the run index says 'changed'" in checked.stdout
    assert "not repaired" in checked.stdout
    mended = on_store("doctor")
    assert mended.returncode == 0, mended.stdout
    assert "repaired: the run index is written again" in mended.stdout
    assert rows(postgres_url, "SELECT goal FROM reins_runs") == [("say hi",)]

    removed = on_store("sessions", "rm", "last")
    assert removed.returncode == 0, removed.stderr
    assert rows(postgres_url, "SELECT count(*) FROM reins_events") == [(0,)]
    assert "the log is sound" in on_store("doctor").stdout
