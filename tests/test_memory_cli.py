"""`reins memory`: the facts kept across sessions, by hand, through the command line (in
process, real SQLite files): added and refused, listed now and as of a date, searched, shown
with their history, forgotten for real, exported and imported, errors said in one line."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from reins.cli import app
from reins.memory._memories import Memories

OPENAI_KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2


@pytest.fixture
def user_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own user data folder (the user's facts are in it)."""
    folder = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_data: Path) -> Path:
    """A git project, the current folder."""
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def memory(store: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["memory", *args, "--store", str(store)], input=input)


def ok(store: Path, *args: str) -> Result:
    done = memory(store, *args)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    return done


def as_json(store: Path, *args: str) -> Any:
    return json.loads(ok(store, *args, "--json").stdout)


def added(store: Path, text: str, *args: str) -> str:
    fact_id = ok(store, "add", text, *args).stdout.strip()
    assert len(fact_id) == 12
    assert int(fact_id, 16) >= 0
    return fact_id


def one_line_error(done: Result, code: int) -> str:
    assert done.exit_code == code, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")
    assert "Traceback" not in done.output
    return line


def test_add_list_search_show(project: Path, store: Path, user_data: Path) -> None:
    tests = added(store, "The tests run with pytest -q")
    tabs = added(store, "The user indents with tabs", "--scope", "user")
    assert (store / "memory.db").is_file()
    assert (user_data / "reins" / "memory.db").is_file()  # the user's, in every project

    listed = ok(store, "list").stdout
    assert "The tests run with pytest -q" in listed
    assert "The user indents with tabs" in listed
    assert tests[:8] in listed
    assert tabs[:8] in listed
    assert "added by the user" in listed
    assert "The user indents" not in ok(store, "list", "--scope", "project").stdout

    found = as_json(store, "search", "pytest")
    assert [f["id"] for f in found] == [tests]
    assert "no remembered fact matches" in ok(store, "search", "kubernetes").stdout

    shown = ok(store, "show", tests[:6]).stdout
    for field in ("created_at", "valid_at", "invalid_at", "expired_at", "owner", "supersedes"):
        assert field in shown
    assert str(project) in shown  # the project's owner: its root
    fact = as_json(store, "show", tests)
    assert fact["text"] == "The tests run with pytest -q"
    assert (fact["scope"], fact["owner"], fact["invalid_at"]) == ("project", str(project), None)


def test_a_read_makes_no_file(project: Path, store: Path, user_data: Path) -> None:
    done = ok(store, "list")
    assert "no facts remembered" in done.stdout
    assert as_json(store, "list") == []
    assert as_json(store, "search", "anything") == []
    assert ok(store, "export").stdout == ""
    one_line_error(memory(store, "show", "abc123"), 2)
    assert not store.exists()
    assert not (user_data / "reins" / "memory.db").exists()


def test_history_and_as_of_follow_a_replacement(project: Path, store: Path) -> None:
    old_id = added(store, "Deploys go to staging first", "--valid-at", "2024-01-01")
    memories = Memories(store / "memory.db")
    old = memories.get(old_id)
    assert old is not None
    _, new = memories.replace(
        old, "Deploys go straight to production", valid_at=datetime(2024, 6, 1, tzinfo=UTC)
    )
    memories.local.disconnect()

    shown = ok(store, "history", new.id).stdout
    assert shown.index(old_id) < shown.index(new.id)  # the oldest first
    assert "Deploys go to staging first" in shown
    assert "Deploys go straight to production" in shown
    assert "true from 2024-01-01 00:00:00 UTC until 2024-06-01 00:00:00 UTC" in shown
    assert "true from 2024-06-01 00:00:00 UTC still true" in shown
    assert "learned it ended" in shown
    chain = as_json(store, "history", old_id)
    assert [f["id"] for f in chain] == [old_id, new.id]
    assert chain[0]["expired_at"] is not None
    assert chain[1]["supersedes"] == old_id

    then = ok(store, "list", "--as-of", "2024-03-01").stdout
    assert "staging first" in then
    assert "production" not in then
    now = ok(store, "list").stdout
    assert "production" in now
    assert "staging first" not in now
    assert "no facts remembered" in ok(store, "list", "--as-of", "2023-12-31").stdout
    assert [f["id"] for f in as_json(store, "search", "deploys", "--as-of", "2024-05-31")] == [
        old_id
    ]
    every = ok(store, "list", "--all").stdout
    assert "staging" in every
    assert "superseded" in every
    assert new.id[:8] in every


def test_two_projects_on_one_store_see_their_own_facts_and_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_data: Path, store: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        (folder / ".git").mkdir(parents=True)
    (one / "src").mkdir()
    monkeypatch.chdir(one)
    added(store, "Project one builds with make")
    added(store, "The user writes British English", "--scope", "user")
    monkeypatch.chdir(two)
    added(store, "Project two builds with cargo")

    seen_in_two = {f["text"] for f in as_json(store, "list")}
    assert seen_in_two == {"Project two builds with cargo", "The user writes British English"}
    assert as_json(store, "search", "make") == []
    monkeypatch.chdir(one / "src")  # a folder inside the project: the same project
    seen_in_one = {f["text"] for f in as_json(store, "list")}
    assert seen_in_one == {"Project one builds with make", "The user writes British English"}


def test_forget_by_id_deletes_for_real(project: Path, store: Path) -> None:
    kept = added(store, "The linter is ruff")
    gone = added(store, "The zanzibar service listens on port 8080")
    database = store / "memory.db"
    assert any(b"zanzibar" in block for block in fts_blocks(database))  # the check can fail

    assert ok(store, "forget", gone[:7]).stdout.strip() == "forgot 1 fact(s)"
    assert as_json(store, "search", "zanzibar") == []
    assert [f["id"] for f in as_json(store, "list")] == [kept]
    assert not any(b"zanzibar" in block for block in fts_blocks(database))
    assert b"zanzibar" not in database.read_bytes()
    one_line_error(memory(store, "forget", gone), 2)  # no such fact any more


def fts_blocks(database: Path) -> list[bytes]:
    """Every value of every row of the full-text index's shadow tables, as bytes."""
    with sqlite3.connect(database) as db:
        tables = [
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'facts_fts_%'"
            )
        ]
        assert tables
        values = [v for t in tables for row in db.execute(f"SELECT * FROM {t}") for v in row]
    return [v if isinstance(v, bytes) else str(v).encode() for v in values]


def test_forget_a_scope_or_all_asks_and_refuses_headless(
    project: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added(store, "Project fact about widgets")
    mine = added(store, "User fact about gadgets", "--scope", "user")

    line = one_line_error(memory(store, "forget", "--all"), 2)
    assert "--yes" in line
    assert "2 fact(s)" in line
    one_line_error(memory(store, "forget", "--scope", "project"), 2)
    assert len(as_json(store, "list")) == 2  # nothing forgotten

    monkeypatch.setattr("reins.cli._memory._on_terminal", lambda: True)
    assert memory(store, "forget", "--all", input="n\n").stdout.strip().endswith("forgot 0 fact(s)")
    assert len(as_json(store, "list")) == 2
    done = memory(store, "forget", "--scope", "project", input="y\n")
    assert done.exit_code == 0
    assert "forgot 1 fact(s)" in done.stdout
    assert [f["id"] for f in as_json(store, "list")] == [mine]
    monkeypatch.setattr("reins.cli._memory._on_terminal", lambda: False)
    assert as_json(store, "forget", "--all", "--yes") == {"forgotten": 1, "ids": [mine]}
    assert as_json(store, "list", "--all") == []
    one_line_error(memory(store, "forget"), 2)  # nothing named
    one_line_error(memory(store, "forget", mine, "--all"), 2)  # two ways at once


def test_export_then_import_into_a_fresh_store_keeps_everything(
    tmp_path: Path, project: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = added(store, "The docs are built with mkdocs", "--valid-at", "2023-05-01T08:30")
    added(store, "The user reads diffs side by side", "--scope", "user")
    memories = Memories(store / "memory.db")
    old = memories.get(first)
    assert old is not None
    memories.replace(old, "The docs are built with sphinx", reason="moved to sphinx")
    memories.local.disconnect()
    exported = ok(store, "export").stdout
    lines = [json.loads(line) for line in exported.splitlines()]
    assert len(lines) == 3
    assert any(f["invalid_at"] for f in lines)

    dump = tmp_path / "memory.jsonl"
    assert as_json(store, "export", "-o", str(dump)) == {"exported": 3, "file": str(dump)}
    assert dump.read_text() == exported
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "other-user-data"))
    fresh = tmp_path / "fresh-store"
    assert as_json(fresh, "import", str(dump)) == {"imported": 3, "skipped": 0}
    assert ok(fresh, "export").stdout == exported  # ids, times, closed ones: all as they were
    assert [f["text"] for f in as_json(fresh, "history", first)][1] == (
        "The docs are built with sphinx"
    )
    again = ok(fresh, "import", str(dump)).stdout
    assert "imported 0 fact(s), skipped 3 already here" in again


def test_a_secret_is_refused_by_add_and_by_import(
    tmp_path: Path, project: Path, store: Path, user_data: Path
) -> None:
    line = one_line_error(memory(store, "add", f"The API key is {OPENAI_KEY}"), 2)
    assert "OpenAI key" in line
    assert "nothing was stored" in line
    line = one_line_error(memory(store, "add", "my password is hunter22!", "--scope", "user"), 2)
    assert "(password)" in line
    assert not (store / "memory.db").exists()
    assert not (user_data / "reins" / "memory.db").exists()

    source = tmp_path / "source"
    added(source, "The build runs in CI")
    [good] = ok(source, "export").stdout.splitlines()
    leaky = json.loads(good) | {"id": "0123456789ab", "text": f"The token: {OPENAI_KEY}"}
    dump = tmp_path / "leaky.jsonl"
    dump.write_text(good + "\n" + json.dumps(leaky) + "\n")
    line = one_line_error(memory(store, "import", str(dump)), 2)
    assert f"{dump}, line 2" in line
    assert "OpenAI key" in line
    assert "nothing was imported" in line
    assert as_json(store, "list") == []  # not even the good first line


def test_a_redaction_rule_of_the_config_refuses_a_fact(
    tmp_path: Path, project: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[memory]\nredact = ['ACME-\\d{6}']\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    line = one_line_error(memory(store, "add", "The licence is ACME-123456"), 2)
    assert "redaction rule" in line
    added(store, "The licence is ACME-12")  # not the rule's


def test_a_bad_import_line_imports_nothing(tmp_path: Path, project: Path, store: Path) -> None:
    source = tmp_path / "source"
    added(source, "Fact one about apples")
    added(source, "Fact two about pears")
    good = ok(source, "export").stdout.splitlines()
    dump = tmp_path / "bad.jsonl"
    dump.write_text(good[0] + "\n\n" + good[1] + "\n{not json\n")
    line = one_line_error(memory(store, "import", str(dump)), 2)
    assert "line 4" in line
    assert "not JSON" in line
    assert "nothing was imported" in line

    broken = json.loads(good[1]) | {"valid_at": "yesterday"}
    dump.write_text(good[0] + "\n" + json.dumps(broken) + "\n")
    line = one_line_error(memory(store, "import", str(dump)), 2)
    assert "line 2" in line
    assert "valid_at" in line
    dump.write_text(good[0] + "\n" + json.dumps(json.loads(good[1]) | {"scope": "team"}) + "\n")
    assert "line 2" in one_line_error(memory(store, "import", str(dump)), 2)
    assert as_json(store, "list", "--all") == []
    assert not (store / "memory.db").exists()
    missing = one_line_error(memory(store, "import", str(tmp_path / "nowhere.jsonl")), 2)
    assert "nowhere.jsonl" in missing


def test_session_facts_need_a_session(project: Path, store: Path) -> None:
    line = one_line_error(memory(store, "add", "A session fact", "--scope", "session"), 2)
    assert "--session" in line
    one_line_error(memory(store, "add", "x", "--scope", "user", "--session", "s1"), 2)
    one_line_error(memory(store, "add", "x", "--scope", "team"), 2)
    session = "s" + "0123456789abcdef0123"
    fact = as_json(store, "add", "The branch is feature-x", "--session", session)
    assert (fact["scope"], fact["owner"]) == ("session", session)
    later = as_json(store, "add", "The PR is open", "--scope", "session", "--session", session[:6])
    assert later["owner"] == session  # a unique start of a session's id names it
    listed = as_json(store, "list", "--scope", "session")
    assert {f["text"] for f in listed} == {"The branch is feature-x", "The PR is open"}
    assert as_json(store, "list", "--scope", "user") == []


def test_json_outputs_parse(project: Path, store: Path) -> None:
    fact = as_json(store, "add", "Releases are tagged vN.N.N", "--valid-at", "2024-02-03")
    assert fact["valid_at"] == "2024-02-03T00:00:00.000000+00:00"
    assert [f["id"] for f in as_json(store, "list")] == [fact["id"]]
    assert [f["id"] for f in as_json(store, "list", "--all")] == [fact["id"]]
    assert [f["id"] for f in as_json(store, "search", "releases tagged")] == [fact["id"]]
    assert as_json(store, "show", fact["id"][:4]) == fact
    assert as_json(store, "history", fact["id"]) == [fact]
    assert as_json(store, "forget", fact["id"]) == {"forgotten": 1, "ids": [fact["id"]]}


def test_bad_dates_say_the_format(project: Path, store: Path) -> None:
    for args in (
        ("list", "--as-of", "2024-13-01"),
        ("list", "--as-of", "last tuesday"),
        ("search", "x", "--as-of", "2024/01/01"),
        ("add", "A fact", "--valid-at", "tomorrow"),
    ):
        line = one_line_error(memory(store, *args), 2)
        assert "YYYY-MM-DD" in line
    one_line_error(memory(store, "list", "--all", "--as-of", "2024-01-01"), 2)
    assert not (store / "memory.db").exists()


def test_a_locked_memory_file_is_one_line_naming_it(
    tmp_path: Path, project: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added(store, "Kept before the lock")
    config = tmp_path / "config.toml"
    config.write_text("[memory]\ntimeout = 0.2\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    database = store / "memory.db"
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        started = datetime.now(UTC)
        line = one_line_error(memory(store, "add", "Written while locked"), 1)
        assert (datetime.now(UTC) - started).total_seconds() < 4  # the config's timeout
        assert str(database) in line
        assert "locked" in line
        assert "memory.timeout" in line
        forgot = one_line_error(memory(store, "forget", "--all", "--yes"), 1)
        assert str(database) in forgot
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [f["text"] for f in as_json(store, "list")] == ["Kept before the lock"]
