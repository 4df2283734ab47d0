"""The Python API's surface (issue 28): a model string, per-run overrides (model, output_type,
message_history), run_sync(cancel=...), and `Agent[Deps, Output]` typed for a type checker."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Cancel,
    MemoryLog,
    StopReason,
    UsageError,
    UserMessage,
)
from reins.events import RunStarted
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .servers import SlowOpenAI


class City(BaseModel):
    name: str
    country: str


@pytest.mark.real_model  # a real OpenAI-compatible server, started here, not the internet
def test_a_model_string_is_resolved_and_recorded(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    with SlowOpenAI(["Paris."], gap=0) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        log = MemoryLog()
        agent = Agent(model="openai:gpt-4o-mini", tools=[], workspace=workspace, log=log)
        result = agent.run_sync("capital of France?")
        assert result.final_answer == "Paris."
        assert server.requests[0]["model"] == "gpt-4o-mini"
    events = asyncio.run(log.events(result.run_id))
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.config.model == "openai:gpt-4o-mini"  # a resume resolves it again


def test_a_model_string_that_names_nothing_is_one_error() -> None:
    with pytest.raises(UsageError, match="unknown model 'gpt5'; known forms"):
        Agent(model="gpt5")


async def test_a_run_may_use_another_model_and_output_type(workspace: Path) -> None:
    log = MemoryLog()
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: mine"]), tools=[], log=log)
    other = ScriptedModel([reply("", call("final_answer", "c1", answer=CITY))], name="other")
    typed = await agent.run("where?", model=other, output_type=City)
    assert typed.output == City(name="Lyon", country="France")
    started = next(e for e in await log.events(typed.run_id) if isinstance(e, RunStarted))
    assert started.config.model == "other"
    plain = await agent.run("again")  # the agent's own model and answer, untouched
    assert (plain.output, plain.final_answer) == ("mine", "mine")


CITY = {"name": "Lyon", "country": "France"}


async def test_what_is_only_recorded_is_not_a_constructor_keyword(workspace: Path) -> None:
    """`profile`, `profile_inferred` and `model_id` are for the record: 0.1's keywords still
    set them, warned; the CLI records them through `_record`, and an agent's copies (a run's
    other model aside) keep them."""
    log = MemoryLog()
    with pytest.warns(DeprecationWarning, match=r"Agent\(model_id, profile=\.\.\.\) is deprecated"):
        agent = Agent(
            model=ScriptedModel(["done"] * 3),
            tools=[],
            log=log,
            profile="coding",  # type: ignore[call-arg]
            model_id="openai:mine",  # type: ignore[call-arg]
        )
    assert (agent.profile, agent.profile_inferred, agent.model_id) == (
        "coding",
        False,
        "openai:mine",
    )
    made = Agent(model=ScriptedModel(["done"] * 3), tools=[], log=log)._record(
        profile="writing", profile_inferred=True, model_id="local"
    )
    copy = made._copy(instructions="more")
    assert (copy.profile, copy.profile_inferred, copy.model_id) == ("writing", True, "local")
    for each, recorded in (
        (agent, ("coding", False, "openai:mine")),
        (copy, ("writing", True, "local")),
    ):
        result = await each.run("go")
        started = next(e for e in await log.events(result.run_id) if isinstance(e, RunStarted))
        config = started.config
        assert (config.profile, config.profile_inferred, config.model) == recorded
    other = await copy.run("go", model=ScriptedModel(["done"], name="other"))
    started = next(e for e in await log.events(other.run_id) if isinstance(e, RunStarted))
    assert (started.config.model, started.config.profile) == ("other", "writing")


async def test_a_run_starts_from_a_message_history_recorded_in_its_log() -> None:
    seen: list[list[object]] = []

    def model(messages: list[object], tools: object) -> str:
        seen.append(list(messages))
        return "FINAL_ANSWER: blue"

    log = MemoryLog()
    agent = Agent(model=FunctionModel(model), tools=[], log=log)
    first = await agent.run("my favourite colour is blue")
    second = await agent.run("what is my favourite colour?", message_history=first)
    sent = seen[-1]
    assert [type(m).__name__ for m in sent] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    assert sent[1] == UserMessage(content="my favourite colour is blue")
    assert second.session_id != first.session_id  # a new session, from those messages
    # The log holds them: the run's state folded from it starts with them.
    state = await agent.state(second.run_id)
    assert state.messages[1:3] == first.messages[1:3]

    third = await agent.run(
        "and mine?",
        message_history=[UserMessage(content="I like red"), AssistantMessage(text="Noted.")],
    )
    assert third.messages[1] == UserMessage(content="I like red")


@pytest.mark.parametrize(
    ("history", "session", "message"),
    [
        ([{"role": "user", "content": "x"}], None, r"message_history\[0\] is a dict, not a reins"),
        ("hello", None, "message_history is a str: give a list of messages"),
        ([], "s1", "message_history starts a new session; session_id goes on with one"),
    ],
)
def test_a_bad_message_history_is_one_error(
    history: object, session: str | None, message: str
) -> None:
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: x"]), tools=[])
    with pytest.raises(UsageError, match=message):
        agent.run_sync("go", message_history=history, session_id=session)  # type: ignore[arg-type]


def test_run_sync_is_cancelled_from_another_thread(workspace: Path) -> None:
    async def slow(messages: list[object], tools: object) -> AssistantMessage:
        await asyncio.sleep(0.2)
        return reply("", call("list_files", path="."))  # never an answer: on until cancelled

    cancel = Cancel()
    agent = Agent(model=FunctionModel(slow), workspace=workspace, budgets=Budgets(max_steps=50))
    threading.Timer(0.5, cancel.cancel).start()
    began = time.monotonic()
    result = agent.run_sync("think forever", cancel=cancel)
    assert result.stop_reason is StopReason.CANCELLED
    assert time.monotonic() - began < 5


SNIPPET = """
from dataclasses import dataclass
from pydantic import BaseModel
from reins import Agent, ToolContext, tool
from reins.testing import ScriptedModel

class Answer(BaseModel):
    text: str

@dataclass
class Db:
    url: str

agent = Agent(model=ScriptedModel([]), output_type=Answer, deps_type=Db)
reveal_type(agent)
result = agent.run_sync("go", deps=Db("x"))
reveal_type(result)
reveal_type(result.output)
reveal_type(agent.run_sync("go", output_type=int).output)
reveal_type(Agent(model="openai:gpt-4o-mini").run_sync("go").output)
agent.run_sync("go", deps="not a Db")
"""


def test_agent_is_generic_in_deps_and_output_for_a_type_checker(tmp_path: Path) -> None:
    (tmp_path / "snippet.py").write_text(SNIPPET)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--strict", "snippet.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    notes = [line.split(": ", 2)[2] for line in lines if ": note: Revealed type" in line]
    assert notes == [
        'Revealed type is "reins.agent._agent.Agent[snippet.Db, snippet.Answer]"',
        'Revealed type is "reins.agent._run.RunResult[snippet.Answer]"',
        'Revealed type is "snippet.Answer | None"',
        'Revealed type is "int | None"',
        'Revealed type is "str | None"',
    ], done.stdout
    [error] = [line for line in lines if ": error: " in line]  # deps of the wrong type
    assert 'No overload variant of "run_sync" of "Agent" matches argument types "str", "str"' in (
        error
    )
