"""Run and session ids: two forms that cannot be confused, shown as their shortest unique
prefix, taken back by any unique prefix; old logs' ids still resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reins import Agent, SQLiteLog
from reins.core._errors import RunNotFound
from reins.core._ids import shortest_prefixes
from reins.store import RunInfo, find_run, find_session
from reins.testing import ScriptedModel

REINS = [sys.executable, "-m", "reins"]


def reins(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [*REINS, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env
    )


def info(run_id: str, session_id: str, minute: int = 0, goal: str = "a goal") -> RunInfo:
    return RunInfo(
        run_id=run_id,
        session_id=session_id,
        goal=goal,
        model="script",
        started_at=datetime(2026, 12, 1, 10, minute, tzinfo=UTC),
    )


# As logs before 0.2 made them: 11 hex digits of milliseconds, then 10 random ones. Runs made
# minutes apart share 6 digits; a session and its first run, made in one millisecond, share 11.
OLD_RUNS = [info(f"1a23ae531e{n}{n}012345678", "1a23ae531e00abcdefabc", n) for n in range(3)]


def test_shortest_prefixes_are_unique_among_runs_and_sessions_together() -> None:
    ids = [i for r in OLD_RUNS for i in (r.run_id, r.session_id)]
    shown = shortest_prefixes(ids)
    assert shown == {
        "1a23ae531e00abcdefabc": "1a23ae531e00a",
        "1a23ae531e00012345678": "1a23ae531e000",
        "1a23ae531e11012345678": "1a23ae531e1",
        "1a23ae531e22012345678": "1a23ae531e2",
    }
    for id_, prefix in shown.items():  # each names one id, whatever kind a command takes
        assert [other for other in shown if other.startswith(prefix)] == [id_]
    # New ids: the letter tells the kind, random digits make 7 characters enough.
    assert shortest_prefixes(["r0123456789abcdef01234", "s0123456789abcdef01234"]) == {
        "r0123456789abcdef01234": "r012345",
        "s0123456789abcdef01234": "s012345",
    }


def test_an_ambiguous_prefix_names_its_candidates() -> None:
    with pytest.raises(RunNotFound) as caught:
        find_run(OLD_RUNS, "1a23ae")
    assert str(caught.value) == (
        "'1a23ae' matches 3 runs: 1a23ae531e000 (12-01 10:00, a goal), 1a23ae531e1 (12-01 "
        "10:01, a goal), 1a23ae531e2 (12-01 10:02, a goal); give more of the id"
    )
    sessions = [info("r1", "s0123456789"), info("r2", "s0123499999")]
    with pytest.raises(RunNotFound, match=r"'s01234' matches 2 sessions: s012345, s012349;"):
        find_session(sessions, "s01234")


def test_old_ids_resolve_by_any_unique_prefix_and_a_whole_id_always() -> None:
    assert find_run(OLD_RUNS, "1a23ae531e1").run_id == "1a23ae531e11012345678"
    assert find_run(OLD_RUNS, "1a23ae531e000").run_id == "1a23ae531e00012345678"
    # The session's id shares 12 digits with its first run's: it is no run, and says so.
    assert find_session(OLD_RUNS, "1a23ae531e00a") == "1a23ae531e00abcdefabc"
    whole = [info("abc", "s1"), info("abcd", "s2")]  # an id that is another's prefix
    assert find_run(whole, "abc").run_id == "abc"


def test_a_session_given_for_a_run_and_a_run_for_a_session_say_so() -> None:
    runs = [info("r111aaaa", "s999bbbb", 0), info("r222cccc", "s999bbbb", 5)]
    with pytest.raises(RunNotFound) as caught:
        find_run(runs, "s999")
    assert str(caught.value) == (
        "'s999' is a session, and this command takes a run: the session's latest run is r222ccc"
    )
    with pytest.raises(RunNotFound) as caught:
        find_session(runs, "r111")
    assert str(caught.value) == (
        "'r111' is a run, and this command takes a session: the run's session is s999bbb"
    )


async def test_the_cli_shows_short_ids_and_takes_them_back(tmp_path: Path) -> None:
    """A log with old-form ids (made the old way) and new ones, through the real command."""
    store, workspace = tmp_path / "store", tmp_path / "ws"
    workspace.mkdir()
    log = SQLiteLog(store)
    old = iter(["1a23ae531e00abcdefabc", "1a23ae531e00012345678", "1a23ae531e11012345678"])
    import reins.agent._begin as begin

    made = {"new_session_id": begin.new_session_id, "new_run_id": begin.new_run_id}
    try:
        begin.new_session_id = begin.new_run_id = lambda: next(old)  # type: ignore[assignment]
        agent = Agent(model=ScriptedModel(["first", "second"]), workspace=workspace, log=log)
        first = await agent.run("old one")
        await agent.run("old two", session_id=first.session_id)
    finally:
        for name, function in made.items():
            setattr(begin, name, function)
    new = await Agent(model=ScriptedModel(["third"]), workspace=workspace, log=log).run("new")
    await log.close()

    listed = reins("sessions", "--store", str(store), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:2] for line in listed.stdout.splitlines()[1:]]
    assert rows == [
        ["1a23ae531e00a", "1a23ae531e000"],
        ["1a23ae531e00a", "1a23ae531e1"],
        [new.session_id[:7], new.run_id[:7]],
    ]
    assert re.fullmatch("s[0-9a-f]{20}", new.session_id)
    assert re.fullmatch("r[0-9a-f]{20}", new.run_id)

    for shown, goal in (("1a23ae531e1", "old two"), (new.run_id[:7], "new")):
        done = reins("show", shown, "--store", str(store), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert goal in done.stdout

    ambiguous = reins("show", "1a23ae", "--store", str(store), cwd=tmp_path)
    assert ambiguous.returncode == 2
    said = ambiguous.stderr.strip()
    assert said.startswith("error: '1a23ae' matches 2 runs: 1a23ae531e000 (12-"), said
    assert ", old one), 1a23ae531e1 (12-" in said
    assert said.endswith(", old two); give more of the id")
    assert "Traceback" not in ambiguous.stderr

    replayed = reins("replay", new.run_id[:7], "--store", str(store), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith(f"run {new.run_id[:7]}  session {new.session_id[:7]} ·")


def test_an_error_or_warning_names_the_logs_ids_shortened_but_not_inside_a_path() -> None:
    from reins.cli._short_ids import ShortIds

    short = ShortIds()
    session, run = "s0123456789abcdef0123", "r9876543210fedcba9876"
    old = "1a23ae531e11012345678"  # 21 hex digits, as logs before 0.2 made them
    short.know([info(run, session), info(old, session)])
    unknown = "s" + "f" * 20
    said = (
        f"session {session} cannot go on; run {run} waits; `reins resume {old}`; "
        f"/store/sessions/{session}.jsonl, line 3; {unknown} is not in this log"
    )
    assert short.within(said) == (
        f"session s012345 cannot go on; run r987654 waits; `reins resume 1a23ae5`; "
        f"/store/sessions/{session}.jsonl, line 3; {unknown} is not in this log"
    )
