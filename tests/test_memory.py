"""Memory across sessions through the API: a turn's facts captured when it ends (by a scripted
extractor, the real loop and real SQLite), recalled in a later session's prompt and by
`memory_search`, closed when contradicted, kept to the scopes the policy allows, and failures
said, never taken for an empty memory."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reins import Agent, tool
from reins.agent._config import load_config
from reins.context import ContextSettings
from reins.core._errors import UsageError
from reins.core._messages import Message, SystemMessage, ToolSpec, UserMessage
from reins.events import MemoryUpdated, Notice, ToolCallFinished
from reins.memory import Memories, Memory
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply

TABS = ("I always indent with tabs", "The user indents with tabs.", None)
SPACES = ("I now indent with 4 spaces", "The user indents with 4 spaces.", "tabs")


def extractor(*rules: tuple[str, str, str | None], calls: list[str] | None = None) -> FunctionModel:
    """An extractor that knows what to find: for each rule (words said, the fact, the words of
    a kept fact it replaces) found in the conversation, the fact; reconciled, an update of the
    kept fact shown with it that holds those words, else new."""

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        prompt = messages[-1].content
        if [t.name for t in tools] == ["reconcile"]:
            return reply("", call("reconcile", "m2", decisions=reconciled(prompt, rules)))
        assert [t.name for t in tools] == ["remember"]
        conversation = prompt.partition("The conversation:\n")[2]
        if calls is not None:
            calls.append(conversation)
        facts = [
            {"evidence": said, "fact": fact} for said, fact, _ in rules if said in conversation
        ]
        return reply("", call("remember", "m1", facts=facts))

    return FunctionModel(extract, name="extractor")


def reconciled(prompt: str, rules: tuple[tuple[str, str, str | None], ...]) -> list[Any]:
    """The decisions for a reconcile prompt: "New fact N: TEXT", then "  Kept K: TEXT" lines."""
    decisions: list[dict[str, Any]] = []
    replaces: str | None = None
    for line in prompt.splitlines():
        if line.startswith("New fact "):
            number, _, text = line.removeprefix("New fact ").partition(": ")
            replaces = next((r for _, fact, r in rules if fact == text), None)
            decisions.append({"fact": int(number), "op": "new", "kept": 0})
        elif line.startswith("  Kept ") and replaces and replaces in line:
            decisions[-1].update(op="update", kept=int(line.split()[1].rstrip(":")))
    return decisions


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def agent(store: Path, workspace: Path, runner: Any = None, **memory: Any) -> Agent:
    """An agent whose runs (scripted by `runner`) remember, with an extractor that knows
    `TABS` and `SPACES` unless `memory` says otherwise."""
    return Agent(
        model=runner or ScriptedModel(["Noted."]),
        workspace=workspace,
        log=SQLiteLog(store),
        memory=Memory(**{"model": extractor(TABS, SPACES), **memory}),
        checkpoints=False,
    )


def system_prompt(messages: list[Message]) -> str:
    first = messages[0]
    assert isinstance(first, SystemMessage)
    return first.content


async def events_of(store: Path, run_id: str) -> list[Any]:
    return await SQLiteLog(store).events(run_id)


async def test_a_fact_captured_at_a_turns_end_is_recalled_in_a_later_session(
    store: Path, workspace: Path
) -> None:
    first = await agent(store, workspace).run(f"{TABS[0]}, keep that in mind.")
    updates = [e for e in await events_of(store, first.run_id) if isinstance(e, MemoryUpdated)]
    assert len(updates) == 1
    (update,) = updates
    assert update.trigger == "turn_end"
    assert [(c.op, c.text, c.scope) for c in update.changes] == [
        ("add", "The user indents with tabs.", "project")
    ]
    assert update.through == len(first.messages)  # the answer too
    assert update.usage.requests == 1
    # The next session starts knowing it: the prompt shows it, with its age and source.
    later = await agent(store, workspace).run("Write hello.py.")
    prompt = system_prompt(later.messages)
    assert "## What you remember" in prompt
    line = next(x for x in prompt.splitlines() if "indents with tabs" in x)
    assert f"project, just now, session {first.session_id[-8:]}" in line


async def test_a_next_turn_reads_only_its_own_messages(store: Path, workspace: Path) -> None:
    seen: list[str] = []
    model = ScriptedModel(["Noted.", "Done."])
    keeper = agent(store, workspace, model, model=extractor(TABS, calls=seen))
    first = await keeper.run(f"{TABS[0]}.")
    await keeper.run("Now say hi.", session_id=first.session_id)
    assert len(seen) == 2
    assert TABS[0] in seen[0]
    assert TABS[0] not in seen[1]
    assert "Now say hi." in seen[1]


async def test_a_contradiction_closes_the_old_fact_with_both_timestamps(
    store: Path, workspace: Path
) -> None:
    before = datetime.now(UTC)
    await agent(store, workspace).run(f"{TABS[0]}.")
    between = datetime.now(UTC)
    second = await agent(store, workspace).run(f"{SPACES[0]} instead of tabs.")
    (update,) = [e for e in await events_of(store, second.run_id) if isinstance(e, MemoryUpdated)]
    (change,) = update.changes
    assert (change.op, change.text) == ("update", "The user indents with 4 spaces.")
    memories = Memories(store / "memory.db")
    old = memories.get(change.replaced or "")
    new = memories.get(change.fact)
    assert old is not None
    assert new is not None
    assert old.text == "The user indents with tabs."
    assert old.invalid_at is not None
    assert old.expired_at is not None
    assert between <= old.invalid_at == new.valid_at
    assert new.supersedes == old.id
    assert [f.id for f in memories.history(new)] == [old.id, new.id]
    # Now: only the new one; as of before the change: the old one.
    third = await agent(store, workspace).run("Format the code.")
    prompt = system_prompt(third.messages)
    assert "4 spaces" in prompt
    assert "with tabs" not in prompt
    scopes = Memory().readable(str(workspace), None)
    was = memories.search("indents", scopes=scopes, as_of=between - timedelta(microseconds=1))
    assert [f.text for f in was] == ["The user indents with tabs."]
    assert before <= was[0].valid_at


async def test_memory_search_answers_as_of_a_date(store: Path, workspace: Path) -> None:
    memories = Memories(store / "memory.db")
    owner = str(workspace)
    old = memories.add(
        "The deploy target is staging.",
        scope="project",
        owner=owner,
        valid_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    memories.replace(
        old, "The deploy target is production.", valid_at=datetime(2026, 6, 1, tzinfo=UTC)
    )
    model = ScriptedModel(
        [
            reply("", call("memory_search", "s1", query="deploy target", as_of="2026-03-01")),
            reply("", call("memory_search", "s2", query="deploy target")),
            reply("", call("memory_search", "s3", query="deploy", as_of="March")),
            "FINAL_ANSWER: staging then",
        ]
    )
    run = await agent(store, workspace, model, capture="off").run("Where did we deploy in March?")
    results = {
        e.result.call_id: e.result
        for e in await events_of(store, run.run_id)
        if isinstance(e, ToolCallFinished)
    }
    assert "staging" in results["s1"].content
    assert "production" not in results["s1"].content
    assert "true until 2026-06-01" in results["s1"].content
    assert "production" in results["s2"].content
    assert "staging" not in results["s2"].content
    assert results["s3"].is_error
    assert "YYYY-MM-DD" in results["s3"].content


async def test_two_projects_on_one_store_do_not_see_each_others_facts(
    store: Path, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    await agent(store, one).run(f"{TABS[0]}.")
    elsewhere = await agent(store, two).run("Write hello.py.")
    assert "What you remember" not in system_prompt(elsewhere.messages)
    memories = Memories(store / "memory.db")
    memories.add("The user's name is Ada.", scope="user", owner="")
    both = [await agent(store, w).run("Hi.") for w in (one, two)]
    assert "Ada" in system_prompt(both[0].messages)
    assert "Ada" in system_prompt(both[1].messages)
    assert "tabs" in system_prompt(both[0].messages)
    assert "tabs" not in system_prompt(both[1].messages)


async def test_recall_off_reads_nothing_and_offers_no_search(store: Path, workspace: Path) -> None:
    await agent(store, workspace).run(f"{TABS[0]}.")
    run = await agent(store, workspace, recall="off").run("Hi.")
    assert "What you remember" not in system_prompt(run.messages)
    started = (await events_of(store, run.run_id))[0]
    assert "memory_search" not in started.config.tools


async def test_secrets_and_unfounded_facts_are_never_kept(store: Path, workspace: Path) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    rules = (
        (f"my key is {key}", f"The user's OpenAI key is {key}.", None),
        ("I like tea", "The user likes coffee.", None),  # its evidence is there
    )

    def made_up(messages: list[Message], tools: list[ToolSpec]) -> Any:
        facts = [{"evidence": said, "fact": fact} for said, fact, _ in rules]
        facts.append({"evidence": "I love rust", "fact": "Rust."})
        # The agent's own reply ("Noted.") is in the conversation, but it is no evidence.
        facts.append({"evidence": "Noted", "fact": "It was noted."})
        return reply("", call("remember", "m1", facts=facts))

    model = FunctionModel(made_up)
    run = await agent(store, workspace, model=model).run(f"my key is {key}; I like tea.")
    (update,) = [e for e in await events_of(store, run.run_id) if isinstance(e, MemoryUpdated)]
    assert [c.text for c in update.changes] == ["The user likes coffee."]
    assert update.left_out == (
        "a secret (OpenAI key)",
        "its evidence is not what the user said or a tool showed",
        "its evidence is not what the user said or a tool showed",
    )
    everything = Memories(store / "memory.db").all()
    assert [f.text for f in everything] == ["The user likes coffee."]
    assert key not in (store / "memory.db").read_bytes().decode("latin-1")


def damage(store: Path) -> None:
    store.mkdir()
    (store / "memory.db").write_bytes(b"not a database, but garbage " * 100)


async def test_a_recall_that_fails_says_so_and_the_run_goes_on(
    store: Path, workspace: Path
) -> None:
    damage(store)
    run = await agent(store, workspace, capture="off").run("Hi.")
    assert run.final_answer == "Noted."
    prompt = system_prompt(run.messages)
    assert "Your memory of earlier sessions could not be read" in prompt
    notices = [e for e in await events_of(store, run.run_id) if isinstance(e, Notice)]
    assert any("memory: recall failed" in n.text and "memory.db" in n.text for n in notices)


async def test_a_capture_kept_from_its_database_is_said_and_its_facts_not_lost(
    store: Path, workspace: Path
) -> None:
    """Another process holds the database past the timeout: the capture fails, is said, and
    the next turn's end reads the same messages again."""
    path = store / "memory.db"
    Memories(path).add("The user likes tea.", scope="session", owner="s-earlier")
    seen: list[str] = []
    keeper = agent(
        store,
        workspace,
        ScriptedModel(["Noted.", "Done."]),
        model=extractor(TABS, calls=seen),
        timeout=0.2,
    )
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        first = await keeper.run(f"{TABS[0]}.")
    finally:
        holder.rollback()
        holder.close()
    events = await events_of(store, first.run_id)
    assert not [e for e in events if isinstance(e, MemoryUpdated)]
    (notice,) = [e for e in events if isinstance(e, Notice) and e.source == "memory"]
    assert "locked" in notice.text
    assert str(path) in notice.text
    second = await keeper.run("Say hi.", session_id=first.session_id)
    assert TABS[0] in seen[-1]
    (update,) = [e for e in await events_of(store, second.run_id) if isinstance(e, MemoryUpdated)]
    assert [c.text for c in update.changes] == ["The user indents with tabs."]


async def test_a_capture_that_fails_is_said_and_read_again_at_the_next_turns_end(
    store: Path, workspace: Path
) -> None:
    seen: list[str] = []
    failing = [True]

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        conversation = messages[-1].content.partition("The conversation:\n")[2]
        seen.append(conversation)
        if failing.pop(0) if failing else False:
            raise ConnectionError("the extractor is down")
        return reply("", call("remember", "m1", facts=[]))

    model = ScriptedModel(["Noted.", "Done."])
    keeper = agent(store, workspace, model, model=FunctionModel(extract))
    first = await keeper.run(f"{TABS[0]}.")
    events = await events_of(store, first.run_id)
    assert not [e for e in events if isinstance(e, MemoryUpdated)]
    (notice,) = [e for e in events if isinstance(e, Notice) and e.source == "memory"]
    assert "the extractor is down" in notice.text
    assert "read again" in notice.text
    assert first.final_answer == "Noted."
    second = await keeper.run("Say hi.", session_id=first.session_id)
    assert TABS[0] in seen[1]  # the first turn's messages, read again
    assert "Say hi." in seen[1]
    (update,) = [e for e in await events_of(store, second.run_id) if isinstance(e, MemoryUpdated)]
    assert update.through == len(second.messages)


async def test_forget_removes_a_fact_for_real(store: Path, workspace: Path) -> None:
    await agent(store, workspace).run(f"{TABS[0]}.")
    memories = Memories(store / "memory.db")
    (fact,) = memories.all()
    assert memories.forget([fact]) == 1
    run = await agent(store, workspace).run("Hi.")
    assert "tabs" not in system_prompt(run.messages)
    with sqlite3.connect(store / "memory.db") as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            rows = db.execute(f"SELECT * FROM {table}").fetchall()
            assert "tabs" not in repr(rows), table


async def test_a_preface_given_is_not_captured(store: Path, workspace: Path) -> None:
    seen: list[str] = []
    keeper = agent(store, workspace, model=extractor(TABS, calls=seen))
    await keeper.run("Say hi.", message_history=[UserMessage(content=f"{TABS[0]}.")])
    assert len(seen) == 1
    assert TABS[0] not in seen[0]


@tool
def big(part: int) -> str:
    """Read a long part.

    Args:
        part: Which part.
    """
    return f"part {part}\n" + "".join(f"line {i:04d} of part {part} ....\n" for i in range(400))


async def test_what_a_compaction_takes_out_of_the_window_is_read_first(
    store: Path, workspace: Path
) -> None:
    seen: list[str] = []
    rounds = [reply("", call("big", f"c{i}", part=i)) for i in range(12)]
    keeper = Agent(
        model=ScriptedModel([*rounds, "FINAL_ANSWER: ok"]),
        workspace=workspace,
        tools=[big],
        log=SQLiteLog(store),
        context=ContextSettings(window=8000),
        memory=Memory(model=extractor(TABS, calls=seen)),
        checkpoints=False,
    )
    run = await keeper.run(f"{TABS[0]}; read all the parts.")
    assert run.final_answer == "ok"
    events = await events_of(store, run.run_id)
    kinds = [e.kind for e in events if e.kind in ("memory_updated", "context_compacted")]
    assert kinds[:2] == ["memory_updated", "context_compacted"]
    assert kinds[-1] == "memory_updated"
    updates = [e for e in events if isinstance(e, MemoryUpdated)]
    assert [u.trigger for u in updates[:-1]] == ["compaction"] * (len(updates) - 1)
    assert updates[-1].trigger == "turn_end"
    assert updates[-1].through == len(run.messages)
    throughs = [u.through for u in updates]
    assert throughs == sorted(set(throughs))  # each read on from the last
    assert TABS[0] in seen[0]
    assert "line 0000 of part 0" not in "".join(seen[1:])
    assert [c.text for c in updates[0].changes] == ["The user indents with tabs."]
    # The goal's reminder says it again later: proposed again, it is known already.
    assert not [c for u in updates[1:] for c in u.changes]
    assert "known already" in [why for u in updates[1:] for why in u.left_out]


def test_the_command_line_captures_then_a_later_session_recalls(tmp_path: Path) -> None:
    """`reins run` with `[memory] capture` on: the turn's fact is kept (shown as it is),
    `reins memory list` lists it, and the next session's prompt holds it."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    said = "I always indent with tabs"
    remember = {"evidence": said, "fact": TABS[1]}
    extract = tmp_path / "extract.json"
    extract.write_text(
        json.dumps([{"tool_calls": [{"name": "remember", "arguments": {"facts": [remember]}}]}])
    )
    config = tmp_path / "config.toml"
    config.write_text(f'[memory]\ncapture = "project"\nmodel = "script:{extract}"\n')
    noted = tmp_path / "noted.json"
    noted.write_text(json.dumps(["FINAL_ANSWER: Noted."]))
    env = {**os.environ, "REINS_CONFIG": str(config), "COLUMNS": "200"}

    def reins(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "reins", *args, "--store", str(store)]
        return subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=60)

    first = reins("run", f"{said}.", "--model", f"script:{noted}")
    assert first.returncode == 0, first.stderr
    assert f"remembered (project) {TABS[1]}" in first.stdout + first.stderr
    listed = reins("memory", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (fact,) = json.loads(listed.stdout)
    assert (fact["text"], fact["scope"], fact["owner"]) == (TABS[1], "project", str(ws))
    second = reins("run", "How do I indent?", "--model", f"script:{noted}")
    assert second.returncode == 0, second.stdout
    shown = reins("show", "last", "--json")  # the run's messages
    system = json.loads(shown.stdout)[0]["content"]
    assert "## What you remember" in system
    assert TABS[1] in system


def test_a_projects_config_can_only_narrow_what_memory_reads_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[memory]\ncapture = "project"\nrecall = "writable"\nredact = ["ACME"]\n')
    monkeypatch.setenv("REINS_CONFIG", str(user))
    project = tmp_path / "project"
    project.mkdir()
    config = project / "reins.toml"
    config.write_text(
        '[memory]\ncapture = "user"\nrecall = "all"\nredact = ["BETA"]\nbudget = 9000\n'
    )
    memory = load_config(project).memory.settings()
    assert memory is not None
    assert (memory.capture, memory.recall) == ("project", "writable")  # asked more: not given
    assert memory.redact == ("ACME", "BETA")
    assert memory.budget == 400
    config.write_text('[memory]\ncapture = "off"\nrecall = "off"\nbudget = 100\n')
    narrowed = load_config(project).memory
    assert (narrowed.capture, narrowed.recall, narrowed.budget) == ("off", "off", 100)
    assert narrowed.settings() is None
    config.write_text('[memory]\nmodel = "openai:gpt-4.1"\n')
    with pytest.raises(UsageError, match="may not choose the model your conversation"):
        load_config(project)
    config.write_text('[memory]\ncapture = "everything"\n')
    with pytest.raises(UsageError, match=r"memory\.capture"):
        load_config(project)


@pytest.mark.real_model
async def test_the_embedded_model_extracts_through_its_grammar(
    store: Path, workspace: Path
) -> None:
    """The cheapest embedded model as the extractor: held by the grammar to one `remember`
    call, which the harness reads and judges (what it proposes is not judged here)."""
    from reins.models import LocalModel

    extractor = LocalModel(embedded="smollm2", n_ctx=4096)
    run = await agent(store, workspace, model=extractor).run(
        "Remember this: the staging server is called kestrel."
    )
    events = await events_of(store, run.run_id)
    assert not [e for e in events if isinstance(e, Notice) and e.source == "memory"]
    (update,) = [e for e in events if isinstance(e, MemoryUpdated)]
    assert update.usage.output_tokens > 0
    assert update.model
    kept = Memories(store / "memory.db").all()
    assert [f.id for f in kept] == [c.fact for c in update.changes if c.op == "add"]


async def test_memory_beside_a_log_with_no_folder_is_refused_with_what_to_do(
    workspace: Path, tmp_path: Path
) -> None:
    from reins.store import MemoryLog

    keeper = Agent(model=ScriptedModel(["Noted."]), workspace=workspace, memory=Memory())
    assert isinstance(keeper.log, MemoryLog)
    with pytest.raises(UsageError, match=r"give the agent a log on disk \(SQLiteLog\)"):
        await keeper.run("Hi.")
    elsewhere = Memory(path=tmp_path / "facts.db", model=extractor(TABS))
    kept = Agent(model=ScriptedModel(["Noted."]), workspace=workspace, memory=elsewhere)
    await kept.run(f"{TABS[0]}.")
    assert [f.text for f in Memories(tmp_path / "facts.db").all()] == [TABS[1]]


async def test_an_update_of_a_fact_not_shown_keeps_the_news_as_a_fact(
    store: Path, workspace: Path
) -> None:
    """A small model says a fact changed, but names one it was not shown: the new fact is
    kept all the same, and shown before the older one it may contradict."""
    await agent(store, workspace).run(f"{TABS[0]}.")

    def vague(messages: list[Message], tools: list[ToolSpec]) -> Any:
        if tools[0].name == "reconcile":
            assert "  Kept 1: The user indents with tabs." in messages[-1].content
            decision = {"fact": 1, "op": "update", "kept": 7}
            return reply("", call("reconcile", "m2", decisions=[decision]))
        found = {"evidence": SPACES[0], "fact": SPACES[1]}
        return reply("", call("remember", "m1", facts=[found]))

    run = await agent(store, workspace, model=FunctionModel(vague)).run(f"{SPACES[0]}.")
    (update,) = [e for e in await events_of(store, run.run_id) if isinstance(e, MemoryUpdated)]
    assert [(c.op, c.text) for c in update.changes] == [("add", SPACES[1])]
    assert update.usage.requests == 2  # found, then reconciled
    later = await agent(store, workspace).run("How do I indent?")
    lines = [x for x in system_prompt(later.messages).splitlines() if "indents" in x]
    assert [SPACES[1] in lines[0], TABS[1] in lines[1]] == [True, True]


async def test_a_reconcile_may_close_a_kept_fact_or_find_it_the_same(
    store: Path, workspace: Path
) -> None:
    """The second call's other answers: a kept fact no longer true is closed and nothing
    added; a new fact that says what a kept one says is left out."""
    memories = Memories(store / "memory.db")
    owner = str(workspace)
    redis = memories.add("The project caches with Redis.", scope="project", owner=owner)
    port = memories.add("The dev server listens on port 8080.", scope="project", owner=owner)
    said = "We dropped Redis, and the dev server is on 8080"

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        if tools[0].name == "remember":
            facts = [
                {"evidence": "We dropped Redis", "fact": "The project caches without Redis."},
                {"evidence": "the dev server is on 8080", "fact": "The dev server uses 8080."},
            ]
            return reply("", call("remember", "m1", facts=facts))
        shown = messages[-1].content
        kept = {text: n for n, text in re.findall(r"Kept (\d+): (.*)", shown)}
        decisions = [
            {"fact": 1, "op": "invalidate", "kept": int(kept[redis.text])},
            {"fact": 2, "op": "same", "kept": int(kept[port.text])},
        ]
        return reply("", call("reconcile", "m2", decisions=decisions))

    run = await agent(store, workspace, model=FunctionModel(extract)).run(f"{said}.")
    (update,) = [e for e in await events_of(store, run.run_id) if isinstance(e, MemoryUpdated)]
    assert [(c.op, c.fact) for c in update.changes] == [("invalidate", redis.id)]
    assert update.left_out == ("known already",)
    now = Memories(store / "memory.db").current(scopes=[("project", owner)])
    assert [f.text for f in now] == [port.text]


async def test_a_run_that_searched_its_memory_replays_as_it_ran(
    store: Path, workspace: Path
) -> None:
    """A replay keeps no memory: `memory_search` gives what it gave the run (what the memory
    held then), so the replay sees what the run saw, and does not diverge."""
    from reins.eval import replay_run

    await agent(store, workspace).run(f"{TABS[0]}.")
    model = ScriptedModel(
        [
            reply("", call("memory_search", "s1", query="indent")),
            reply("", call("memory_search", "s2", query="nothing like it", as_of="2020-01-01")),
            reply("", call("memory_search", "s3", query="indent", as_of="March")),  # an error
            "FINAL_ANSWER: tabs",
        ]
    )
    run = await agent(store, workspace, model, capture="off").run("How do I indent?")
    results = [
        e.result for e in await events_of(store, run.run_id) if isinstance(e, ToolCallFinished)
    ]
    assert TABS[1] in results[0].content
    assert results[2].is_error
    Memories(store / "memory.db").forget(Memories(store / "memory.db").all())  # gone since
    replayed = await replay_run(SQLiteLog(store), run.run_id, workspace=workspace)
    assert replayed.divergence is None
    assert replayed.compared == len(await events_of(store, run.run_id))


async def test_chatter_is_not_kept_and_a_vaguer_fact_does_not_replace_a_concrete_one(
    store: Path, workspace: Path
) -> None:
    """What a small model proposes, held back by the harness: a "fact" resting on chatter
    ("Ok, next") or telling what the user asked is left out; an update into a fact with no
    value where the kept one had some ("the API was migrated" for "the API's host is
    api.old.dev") is kept beside it, the host still known; a plain update replaces."""
    memories = Memories(store / "memory.db")
    owner = str(workspace)
    host = memories.add("The API's host is api.old.dev.", scope="project", owner=owner)
    tabs = memories.add("The user indents Python with tabs.", scope="project", owner=owner)
    said = "Ok, next. We migrated the API. I indent Python with 4 spaces now. Add the date lib"

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        if tools[0].name == "remember":
            facts = [
                {"evidence": "Ok, next", "fact": "The user said 'Ok, next.'"},
                {"evidence": "We migrated the API", "fact": "The project's API was migrated."},
                {"evidence": "I indent Python with 4 spaces", "fact": SPACES_PY},
                {"evidence": "Add the date lib", "fact": "The user asked to add the date lib."},
            ]
            return reply("", call("remember", "m1", facts=facts))
        kept = {text: int(n) for n, text in re.findall(r"Kept (\d+): (.*)", messages[-1].content)}
        decisions = [
            {"fact": 1, "op": "update", "kept": kept[host.text]},
            {"fact": 2, "op": "update", "kept": kept[tabs.text]},
        ]
        return reply("", call("reconcile", "m2", decisions=decisions))

    run = await agent(store, workspace, model=FunctionModel(extract)).run(f"{said}.")
    (update,) = [e for e in await events_of(store, run.run_id) if isinstance(e, MemoryUpdated)]
    assert update.left_out == (
        "its evidence holds nothing to keep",
        "it tells of the conversation, not a fact",
    )
    assert [(c.op, c.text) for c in update.changes] == [
        ("add", "The project's API was migrated."),
        ("update", SPACES_PY),
    ]
    now = {f.text for f in Memories(store / "memory.db").current(scopes=[("project", owner)])}
    assert now == {host.text, "The project's API was migrated.", SPACES_PY}


SPACES_PY = "The user indents Python with 4 spaces."


async def test_an_update_into_a_fact_about_something_else_keeps_both(
    store: Path, workspace: Path
) -> None:
    """Alike by whose they are alone ("project"), a new fact that a small model says updates
    a kept one about something else is kept beside it: the codename stays."""
    owner = str(workspace)
    name = Memories(store / "memory.db").add(
        "The project codename is Bluefin Lantern.", scope="project", owner=owner
    )
    unicode = "The project's parser handles Unicode."

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        if tools[0].name == "remember":
            found = {"evidence": "the parser handles Unicode", "fact": unicode}
            return reply("", call("remember", "m1", facts=[found]))
        assert f"  Kept 1: {name.text}" in messages[-1].content
        decision = {"fact": 1, "op": "update", "kept": 1}
        return reply("", call("reconcile", "m2", decisions=[decision]))

    run = await agent(store, workspace, model=FunctionModel(extract)).run(
        "I checked: the parser handles Unicode."
    )
    (update,) = [e for e in await events_of(store, run.run_id) if isinstance(e, MemoryUpdated)]
    assert [(c.op, c.text) for c in update.changes] == [("add", unicode)]
    now = {f.text for f in Memories(store / "memory.db").current(scopes=[("project", owner)])}
    assert now == {name.text, unicode}
