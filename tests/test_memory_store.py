"""The memory store (`reins.memory.FactStore`) on real SQLite files, and `secret_in`.

Measured (10,000 facts over 26 owners, 1,000 of them replaced; 200 queries of five words, two
of them common; three (scope, owner) pairs): `search` 2.3 ms median, 2.5 ms p95; `current`
(limit 20) 1.0 ms median; `add` 0.3 ms (one fsync'd transaction each).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reins.core._errors import UsageError
from reins.memory import Fact, FactError, FactStore, MemoryStoreError, secret_in
from reins.memory._facts import SCHEMA_VERSION

T0 = datetime(2025, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
USER = ("user", "")


@pytest.fixture
def store(tmp_path: Path) -> FactStore:
    return FactStore(tmp_path / "memory" / "memory.db")


def fact(fact_id: str, text: str = "a fact", **fields: object) -> Fact:
    values: dict[str, object] = {
        "id": fact_id,
        "text": text,
        "scope": "user",
        "owner": "",
        "session_id": None,
        "run_id": None,
        "seq": None,
        "created_at": T0,
        "valid_at": T0,
        "invalid_at": None,
        "expired_at": None,
        "supersedes": None,
        **fields,
    }
    return Fact(**values)  # type: ignore[arg-type]


def test_reading_a_store_that_was_never_written_makes_nothing(tmp_path: Path) -> None:
    store = FactStore(tmp_path / "nowhere" / "memory.db")
    assert store.search("tabs", scopes=[USER]) == []
    assert store.current(scopes=[USER]) == []
    assert store.all() == []
    assert store.count() == 0
    assert store.get("abc") is None
    assert store.history("abc") == []
    assert store.forget(everything=True) == 0
    assert not (tmp_path / "nowhere").exists()


def test_the_first_write_makes_the_file_for_its_owner_only(store: FactStore) -> None:
    kept = store.add("the user prefers tabs", scope="user", owner="", now=T0, reason="said so")
    assert kept == fact(kept.id, "the user prefers tabs", reason="said so")
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert store.get(kept.id) == kept


def test_search_ranks_the_fact_that_matches_best_first(store: FactStore) -> None:
    store.add("the project deploys to production with a shell script", scope="user", owner="")
    tabs = store.add("the user indents with tabs, never spaces", scope="user", owner="")
    reads = store.add("the user reads the tests before the code", scope="user", owner="")

    found = store.search("how does the user indent: tabs or spaces?", scopes=[USER])

    assert found == [tabs, reads]  # stemmed: "indent" finds "indents"; "user" alone ranks lower


def test_bm25_puts_the_rarer_and_repeated_word_first(store: FactStore) -> None:
    both = store.add("pytest runs the pytest suite with pytest-xdist", scope="user", owner="")
    once = store.add("the suite runs in CI", scope="user", owner="")
    assert store.search("pytest suite", scopes=[USER]) == [both, once]


def test_each_owner_sees_only_its_own_facts(store: FactStore) -> None:
    a = store.add("builds with make", scope="project", owner="/src/a")
    b = store.add("builds with cargo", scope="project", owner="/src/b")
    mine = store.add("builds fast please", scope="user", owner="")
    here = store.add("builds are slow today", scope="session", owner="s1")

    assert store.search("builds", scopes=[("project", "/src/a")]) == [a]
    assert store.search("builds", scopes=[("project", "/src/b")]) == [b]
    assert {f.id for f in store.search("builds", scopes=[USER, ("project", "/src/a")])} == {
        a.id,
        mine.id,
    }
    assert store.search("builds", scopes=[("session", "s2")]) == []
    assert store.current(scopes=[("session", "s1")]) == [here]
    assert store.all(scopes=[("project", "/src/b")]) == [b]
    assert store.count(scopes=[("project", "/src/a"), ("project", "/src/b")]) == 2
    assert store.search("builds", scopes=[]) == []


def test_a_fact_replaced_later_is_what_a_search_as_of_before_then_finds(
    store: FactStore,
) -> None:
    old = store.add("the api runs on port 8080", scope="project", owner="/p", now=T0)
    closed, new = store.replace(
        old.id, "the api runs on port 9090", now=T0 + 5 * HOUR, reason="moved"
    )

    assert closed == fact(
        old.id,
        "the api runs on port 8080",
        scope="project",
        owner="/p",
        invalid_at=T0 + 5 * HOUR,
        expired_at=T0 + 5 * HOUR,
        closed_reason="moved",
    )
    assert new == fact(
        new.id,
        "the api runs on port 9090",
        scope="project",
        owner="/p",
        created_at=T0 + 5 * HOUR,
        valid_at=T0 + 5 * HOUR,
        supersedes=old.id,
        reason="moved",
    )
    scopes = [("project", "/p")]
    assert store.search("api port", scopes=scopes, as_of=T0 + HOUR) == [closed]
    assert store.search("api port", scopes=scopes) == [new]
    assert store.current(scopes=scopes, as_of=T0 + HOUR) == [closed]
    assert store.current(scopes=scopes) == [new]
    assert store.search("api port", scopes=scopes, as_of=T0 - HOUR) == []
    assert (closed.valid(T0 + HOUR), closed.valid(), new.valid(T0 + HOUR), new.valid()) == (
        True,
        False,
        False,
        True,
    )


def test_a_correction_true_from_before_the_old_fact_leaves_the_old_never_true(
    store: FactStore,
) -> None:
    old = store.add("the team is five people", scope="user", owner="", now=T0)
    closed, new = store.replace(old.id, "the team is six people", valid_at=T0 - HOUR)
    assert closed.invalid_at == closed.valid_at == T0
    assert not closed.valid(T0)
    assert new.valid(T0)


def test_replace_is_one_transaction(store: FactStore) -> None:
    old = store.add("deploys on fridays", scope="user", owner="")
    with sqlite3.connect(store.path) as db:  # the new version's insert fails, after the close
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON facts WHEN new.text = 'boom' "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    with pytest.raises(MemoryStoreError, match="refused"):
        store.replace(old.id, "boom")
    assert store.all() == [old]  # still open


def test_close_ends_a_fact_once(store: FactStore) -> None:
    kept = store.add("uses python 3.11", scope="user", owner="", now=T0)
    closed = store.close(kept.id, invalid_at=T0 + HOUR, expired_at=T0 + 2 * HOUR, reason="moved")
    assert closed == fact(
        kept.id,
        "uses python 3.11",
        invalid_at=T0 + HOUR,
        expired_at=T0 + 2 * HOUR,
        closed_reason="moved",
    )
    assert store.get(kept.id) == closed
    with pytest.raises(FactError, match=f"fact {kept.id} is closed already"):
        store.close(kept.id, invalid_at=T0 + 3 * HOUR)
    with pytest.raises(FactError, match="closed already"):
        store.replace(kept.id, "uses python 3.12")
    with pytest.raises(FactError, match="no fact has the id 'feedfeedfeed'"):
        store.close("feedfeedfeed", invalid_at=T0)


def test_history_follows_the_chain_both_ways(store: FactStore) -> None:
    first = store.add("lint with flake8", scope="project", owner="/p", now=T0)
    first, second = store.replace(first.id, "lint with ruff", now=T0 + HOUR)
    second, third = store.replace(second.id, "lint with ruff and mypy", now=T0 + 2 * HOUR)
    store.add("unrelated", scope="project", owner="/p")

    assert store.history(second.id) == [first, second, third]
    assert store.history(first.id[:6]) == [first, second, third]
    assert store.history(third.id) == [first, second, third]
    store.forget([first.id])
    assert store.history(third.id) == [second, third]


def test_get_takes_a_unique_prefix(store: FactStore) -> None:
    for fact_id in ("abc000000001", "abc000000002", "def000000000"):
        assert store.put(fact(fact_id))
    assert store.get("def") == fact("def000000000")
    assert store.get("ABC000000002") == fact("abc000000002")
    assert store.get("0123") is None
    assert store.get("not hex") is None
    with pytest.raises(FactError) as caught:
        store.get("abc")
    assert str(caught.value) == (
        "'abc' is the start of several facts' ids (abc000000001, abc000000002): give more of it"
    )


def test_forget_deletes_for_real_even_from_the_search_index(store: FactStore) -> None:
    gone = store.add("the staging host is zanzibar", scope="project", owner="/p")
    _, newer = store.replace(gone.id, "the staging host is zanzibar two")
    kept = store.add("the staging host has 8 cores", scope="project", owner="/p")

    assert store.forget([gone.id, newer.id, "feedfeedfeed"]) == 2

    assert store.all() == [kept]
    assert store.search("zanzibar staging", scopes=[("project", "/p")]) == [kept]
    with sqlite3.connect(store.path) as db:
        assert db.execute(
            "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'zanzibar'"
        ).fetchone() == (0,)
        blocks = [row[0] for row in db.execute("SELECT block FROM facts_fts_data")]
        assert blocks
        assert not [block for block in blocks if b"zanzibar" in block]
    files = [store.path, store.path.with_name("memory.db-wal")]
    assert not [f for f in files if f.exists() and b"zanzibar" in f.read_bytes()]


def test_forget_by_scope_owner_or_everything(store: FactStore) -> None:
    store.add("a", scope="project", owner="/a")
    store.add("b", scope="project", owner="/b")
    store.add("s", scope="session", owner="s1")
    store.add("u", scope="user", owner="")

    assert store.forget(scope="project", owner="/a") == 1
    assert store.forget(scope="session") == 1
    assert [f.text for f in store.all()] == ["b", "u"]
    assert store.forget() == 0
    assert store.forget(everything=True) == 2
    assert store.count() == 0
    with pytest.raises(UsageError, match="give ids, or a scope"):
        store.forget(["abc"], everything=True)
    with pytest.raises(UsageError, match="an owner goes with a scope"):
        store.forget(owner="/a")


@pytest.mark.parametrize(
    "query",
    ['"', "*", "NEAR(", "AND", "tabs AND", "OR OR", "text:tabs", "-tabs", "^tabs", "(tabs", "'",
     'tabs" OR "x', "tabs*", "{text}: tabs", "NOT tabs"],
)  # fmt: skip
def test_fts_syntax_in_a_query_is_only_text(store: FactStore, query: str) -> None:
    tabs = store.add("the user prefers tabs", scope="user", owner="")
    expected = [tabs] if "tabs" in query else []
    assert store.search(query, scopes=[USER]) == expected


def test_a_query_of_common_words_only_finds_nothing(store: FactStore) -> None:
    store.add("what is it", scope="user", owner="")
    assert store.search("what is it?", scopes=[USER]) == []


def test_export_and_import_round_trip(store: FactStore, tmp_path: Path) -> None:
    first = store.add("the user is in Paris", scope="user", owner="", session_id="s1", seq=4)
    store.replace(first.id, "the user is in Lyon", run_id="r1", reason="moved")
    store.add("tests: pytest -q", scope="project", owner="/p")
    exported = json.dumps([f.to_json() for f in store.all()])

    other = FactStore(tmp_path / "other.db")
    imported = [Fact.from_json(data) for data in json.loads(exported)]
    assert [other.put(f) for f in imported] == [True, True, True]
    assert other.all() == store.all()
    assert other.put(imported[0]) is False
    assert other.search("lyon", scopes=[USER]) == store.search("lyon", scopes=[USER])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"id": "abc"}, "'text' must be a str, not None"),
        ({**fact("abc000000001").to_json(), "valid_at": "yesterday"}, "not an ISO 8601 time"),
        ({**fact("abc000000001").to_json(), "valid_at": "2025-01-01T00:00:00"}, "no time zone"),
        ({**fact("abc000000001").to_json(), "seq": "4"}, "'seq' must be a int"),
        ({**fact("abc000000001").to_json(), "id": "x"}, "12 hex digits"),
        ({**fact("abc000000001").to_json(), "scope": "team"}, "use one of user, project"),
        ({**fact("abc000000001").to_json(), "owner": "/p"}, "a user fact has no owner"),
    ],
)
def test_a_malformed_import_says_what_is_wrong(data: dict[str, object], error: str) -> None:
    with pytest.raises(UsageError, match=error):
        Fact.from_json(data)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(MemoryStoreError) as caught:
        FactStore(path).count()
    assert str(caught.value) == (
        f"memory store {path} has schema version {SCHEMA_VERSION + 1}, newer than this reins "
        f"reads ({SCHEMA_VERSION}): upgrade reins, or move the file aside to start a new one"
    )


def test_a_store_locked_past_the_timeout_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = FactStore(path, timeout=0.1)
    store.add("first", scope="user", owner="")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(MemoryStoreError) as caught:
            store.add("second", scope="user", owner="")
        with pytest.raises(MemoryStoreError):
            FactStore(path, timeout=0.1).forget(everything=True)
    finally:
        holder.close()
    assert str(caught.value) == (
        f"memory store {path} is locked by another process past 0.1 s: try again, or raise "
        "memory.timeout"
    )
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert [f.text for f in store.all()] == ["first"]
    store.add("second", scope="user", owner="")  # once free, it goes on
    assert store.count() == 2


def test_a_damaged_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(MemoryStoreError, match=f"memory store {path} is damaged"):
        FactStore(path).search("bytes", scopes=[USER])


def test_a_store_that_cannot_be_made_says_where(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "memory.db"
    with pytest.raises(MemoryStoreError, match=f"memory store {path} cannot be made"):
        FactStore(path).add("x", scope="user", owner="")


def test_misuse_is_a_usage_error(store: FactStore) -> None:
    with pytest.raises(UsageError, match="has no time zone"):
        store.add("x", scope="user", owner="", valid_at=datetime(2025, 1, 1))
    with pytest.raises(UsageError, match="a project fact needs its owner"):
        store.add("x", scope="project", owner="")
    with pytest.raises(UsageError, match="scope 'team'"):
        store.add("x", scope="team", owner="t")  # type: ignore[arg-type]
    with pytest.raises(FactError, match="needs some text"):
        store.add("  ", scope="user", owner="")
    assert not store.path.exists()


async def test_calls_from_many_threads_share_one_connection(store: FactStore) -> None:
    await asyncio.gather(
        *(
            asyncio.to_thread(store.add, f"fact number {i}", scope="user", owner="")
            for i in range(40)
        ),
        *(asyncio.to_thread(store.search, "fact", scopes=[USER]) for _ in range(40)),
    )
    assert store.count() == 40


# Secrets


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("use sk-proj-Abc123def456ghi789jkl012mno345pqr for the api", "OpenAI key"),
        ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "Anthropic key"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "GitHub token"),
        ("aws key is AKIAIOSFODNN7EXAMPLE", "AWS access key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
            "JWT",
        ),
        ("xoxb-1234567890-abcdefghij", "Slack token"),
        ("sk_live_abcdefghijklmnopqrstuvwx", "Stripe key"),
        ("my password is hunter2", "password"),
        ("the password for the staging db is s3cret!", "password"),
        ("DB_PASSWORD=s3cretpw", "password"),
        ("passphrase: correct horse battery staple", "password"),
        ("the token is abc123def456", "generic API key"),
        ("api key: 9f8e7d6c5b4a", "generic API key"),
        ("secret = s3cr3tvalue", "generic API key"),
        ("Authorization: Bearer abc.def.ghi", "bearer token"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization header"),
        ("the db is postgres://u:pw@host/db", "password in a URL"),
    ],
)
def test_secrets_are_named(text: str, kind: str) -> None:
    assert secret_in(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "the user prefers tabs",
        "the project uses pytest",
        "the dev server listens on port 8080",
        "the fix landed in 3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c",
        "the password is stored in the keychain",
        "password reset is handled by the admin",
        "the token is valid for an hour",
        "the max token count is 4096",
        "API_KEY = os.environ['API_KEY']",
        "the key is in ~/.config/app/key",
        "the api uses Bearer authentication",
        "connect with postgres://app@localhost/db",
        "connect with postgres://u:${PGPASSWORD}@host/db",
        "password = '******'",
        "the secret is that users prefer dark mode",
        "the user's email is a@b.com",
        "scikit-learn is pinned below 1.5",
    ],
)
def test_ordinary_facts_are_not_secrets(text: str) -> None:
    assert secret_in(text) is None


def test_the_users_rules_are_secrets_too() -> None:
    rules = [r"ACME-\d{6}", r"(?i)project\s+bluebird"]
    assert secret_in("the badge is ACME-123456", rules) == "a redaction rule"
    assert secret_in("we work on Project Bluebird", rules) == "a redaction rule"
    assert secret_in("the badge is ACME-12", rules) is None
    assert secret_in("ghp_abcdefghijklmnopqrstuvwxyz0123456789", rules) == "GitHub token"


def test_a_bad_rule_is_named() -> None:
    with pytest.raises(UsageError, match=r"redaction rule '\(\?=x\)y' is not a regular expression"):
        secret_in("anything", ["ok", "(?=x)y"])
