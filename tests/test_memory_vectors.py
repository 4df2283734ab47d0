"""Recall by meaning: facts' embeddings kept beside them (real SQLite), the nearest found by
cosine similarity and merged with the words' matches, from a real OpenAI-compatible embeddings
server (llama.cpp's `llama-server --embeddings` on SmolLM2) through the agent; an embedder that
is down is said, and the words' matches still come."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from reins import Agent
from reins.agent._config import load_config
from reins.agent._resolve import resolve_embeddings
from reins.cli import app
from reins.core._errors import UsageError
from reins.core._messages import SystemMessage
from reins.events import Notice, ToolCallFinished
from reins.memory import Embeddings, FactStore, Memories, Memory
from reins.memory._facts import SCHEMA_VERSION
from reins.memory._vectors import fused
from reins.models._embedded import embedded_gguf
from reins.store import SQLiteLog
from reins.testing import ScriptedModel

from .helpers import call, reply
from .llama_server import built_llama_server, run_llama_server
from .servers import free_port

MODEL = "test-embedder"


def unit(*values: float) -> bytes:
    vector = np.asarray(values, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).tobytes()


@pytest.fixture
def facts(tmp_path: Path) -> Iterator[FactStore]:
    with FactStore(tmp_path / "memory.db") as store:
        yield store


MINE = [("project", "/p")]


def test_the_nearest_facts_come_first_and_only_those_of_the_scopes_read(
    facts: FactStore,
) -> None:
    vim = facts.add("The user edits in vim.", scope="project", owner="/p")
    port = facts.add("The dev server listens on 8080.", scope="project", owner="/p")
    theirs = facts.add("The user edits in emacs.", scope="project", owner="/q")
    assert {i for i, _ in facts.unembedded(MODEL, scopes=MINE, limit=10)} == {vim.id, port.id}
    facts.put_vectors(
        MODEL, [(vim.id, unit(1, 0.1, 0)), (port.id, unit(0, 1, 0)), (theirs.id, unit(1, 0, 0))]
    )
    assert facts.unembedded(MODEL, scopes=MINE, limit=10) == []
    found = facts.nearest(unit(1, 0, 0), MODEL, scopes=MINE, limit=5)
    assert [f.id for _, f in found] == [vim.id, port.id]  # never the other project's
    assert found[0][0] == pytest.approx(0.995, abs=1e-3)
    # Vectors of another model are not compared, and are made again for it.
    assert facts.nearest(unit(1, 0, 0), "another", scopes=MINE) == []
    assert len(facts.unembedded("another", scopes=MINE, limit=10)) == 2


def test_a_closed_fact_is_found_by_meaning_only_as_of_when_it_was_true(
    facts: FactStore,
) -> None:
    old = facts.add(
        "Deploys go to staging.",
        scope="project",
        owner="/p",
        valid_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    _, new = facts.replace(
        old.id, "Deploys go to production.", valid_at=datetime(2026, 6, 1, tzinfo=UTC)
    )
    facts.put_vectors(MODEL, [(old.id, unit(1, 0)), (new.id, unit(0.9, 0.1))])
    now = facts.nearest(unit(1, 0), MODEL, scopes=MINE)
    assert [f.text for _, f in now] == ["Deploys go to production."]
    march = facts.nearest(unit(1, 0), MODEL, scopes=MINE, as_of=datetime(2026, 3, 1, tzinfo=UTC))
    assert [f.text for _, f in march] == ["Deploys go to staging."]


def test_a_forgotten_fact_takes_its_vector_with_it(facts: FactStore) -> None:
    fact = facts.add("The user edits in vim.", scope="project", owner="/p")
    vector = unit(0.25, 0.5, 0.75, 1.0)
    facts.put_vectors(MODEL, [(fact.id, vector)])
    assert vector in facts.path.read_bytes() + Path(f"{facts.path}-wal").read_bytes()
    assert facts.forget([fact.id]) == 1
    facts.disconnect()
    with sqlite3.connect(facts.path) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (0,)
    assert vector not in facts.path.read_bytes()


def test_a_file_of_the_first_version_gains_vectors_and_keeps_its_facts(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with FactStore(path) as store:
        kept = store.add("The user edits in vim.", scope="project", owner="/p")
    with sqlite3.connect(path) as db:  # as version 1 made it
        db.execute("DROP TRIGGER facts_unembedded")
        db.execute("DROP TABLE vectors")
        db.execute("PRAGMA user_version = 1")
    with FactStore(path) as store:
        assert [f.id for f in store.search("vim", scopes=MINE)] == [kept.id]
        store.put_vectors(MODEL, [(kept.id, unit(1, 0))])
        assert [f.id for _, f in store.nearest(unit(1, 0), MODEL, scopes=MINE)] == [kept.id]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_rankings_fuse_by_reciprocal_rank(facts: FactStore) -> None:
    a, b, c = (facts.add(t, scope="project", owner="/p") for t in ("A.", "B.", "C."))
    # b is second in both lists; a first in one, absent from the other.
    assert [f.id for f in fused([[a, b], [c, b]])] == [b.id, a.id, c.id]


def test_embeddings_are_named_as_models_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    made = resolve_embeddings("openai:text-embedding-3-small")
    assert (made.model, made.api_key) == ("text-embedding-3-small", "sk-test")
    ollama = resolve_embeddings("ollama:nomic-embed-text")
    assert ollama.base_url == "http://localhost:11434/v1"
    assert resolve_embeddings("http://127.0.0.1:8080/v1").base_url == "http://127.0.0.1:8080/v1"
    for wrong in ("local", "anthropic:claude-haiku-4-5", "nonsense"):
        with pytest.raises(UsageError, match="OpenAI-compatible /v1/embeddings"):
            resolve_embeddings(wrong)


def test_a_projects_file_may_not_choose_the_embedder(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / "reins.toml").write_text('[memory]\nembeddings = "http://attacker.example/v1"\n')
    with pytest.raises(UsageError, match=r"memory\.embeddings: a project's file may not choose"):
        load_config(project).trusting_project()


# Through the agent


def agent(store: Path, workspace: Path, model: ScriptedModel, embeddings: Embeddings) -> Agent:
    return Agent(
        model=model,
        workspace=workspace,
        log=SQLiteLog(store),
        memory=Memory(capture="off", embeddings=embeddings),
        checkpoints=False,
    )


def keep(store: Path, workspace: Path, *texts: str) -> str:
    """Keep these facts of the workspace's project; its owner name."""
    memories, owner = Memories(store / "memory.db"), os.path.realpath(workspace)
    for text in texts:
        memories.add(text, scope="project", owner=owner)
    return owner


async def searched(store: Path, workspace: Path, query: str, embeddings: Embeddings) -> str:
    model = ScriptedModel([reply("", call("memory_search", "s1", query=query, limit=1)), "Done."])
    run = await agent(store, workspace, model, embeddings).run("What do I use?")
    (finished,) = [
        e for e in await SQLiteLog(store).events(run.run_id) if isinstance(e, ToolCallFinished)
    ]
    return finished.result.content


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[str]:
    binary = built_llama_server()
    gguf = embedded_gguf("smollm2")
    extra = ("--embeddings", "--pooling", "mean")
    with run_llama_server(binary, gguf, extra_args=extra) as base_url:
        yield base_url + "/v1"


@pytest.mark.real_model
async def test_memory_search_finds_a_fact_by_meaning_with_no_word_in_common(
    embeddings_server: str, tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    owner = keep(
        store,
        workspace,
        "The user edits code in vim.",
        "The staging server is called kestrel.",
        "Releases ship on Thursdays.",
    )
    embeddings = Embeddings(model="smollm2", base_url=embeddings_server)
    # No word of the query is in any fact: by words, nothing; by meaning, the editor.
    assert (
        Memories(store / "memory.db").search(
            "Which text editor do I like?", scopes=[("project", owner)]
        )
        == []
    )
    found = await searched(store, workspace, "Which text editor do I like?", embeddings)
    assert found.splitlines()[1].startswith("- The user edits code in vim.")
    # Every fact got its vector on the way, under the embedder's name.
    with sqlite3.connect(store / "memory.db") as db:
        assert db.execute("SELECT count(*), min(model) FROM vectors").fetchone() == (
            3,
            embeddings.name,
        )


async def test_an_embedder_that_is_down_is_said_and_words_still_recall(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    keep(store, workspace, "The staging server is called kestrel.")
    down = Embeddings(model="m", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    model = ScriptedModel([reply("", call("memory_search", "s1", query="staging server")), "Done."])
    run = await agent(store, workspace, model, down).run("Which staging server?")
    first = run.messages[0]
    assert isinstance(first, SystemMessage)
    assert "(Recall by meaning failed (embeddings server http://127.0.0.1:" in first.content
    assert "- The staging server is called kestrel." in first.content
    events = await SQLiteLog(store).events(run.run_id)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any("recall by meaning failed: embeddings server" in n for n in notices)
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert "kestrel" in finished.result.content
    assert "(Search by meaning failed (embeddings server" in finished.result.content
    assert run.final_answer == "Done."


# Through the command line


def cli_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embeddings: str) -> Result:
    """`reins memory search --json` in a project with three facts, the user's config naming
    `embeddings`."""
    config = tmp_path / "config.toml"
    config.write_text(f'[memory]\nembeddings = "{embeddings}"\n')
    monkeypatch.setenv("REINS_CONFIG", str(config))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    store = tmp_path / "store"
    keep(store, project, "The user edits code in vim.", "Releases ship on Thursdays.")
    query = "Which text editor do I like?"
    return CliRunner().invoke(app, ["memory", "search", query, "--json", "--store", str(store)])


@pytest.mark.real_model
def test_reins_memory_search_finds_by_meaning_with_the_configs_embedder(
    embeddings_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = cli_search(tmp_path, monkeypatch, embeddings_server)
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)[0]["text"] == "The user edits code in vim."


def test_reins_memory_search_says_when_the_embedder_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = cli_search(tmp_path, monkeypatch, f"http://127.0.0.1:{free_port()}/v1")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == []  # no word in common
    assert "search by meaning failed (embeddings server http://127.0.0.1:" in done.stderr
