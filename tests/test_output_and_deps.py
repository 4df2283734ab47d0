"""Structured output (`output_type`: the answer a typed, validated value) and dependencies
(`deps`: what a run's tools read as `ctx.deps`, never in the log)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it below Python 3.12

from reins import (
    Agent,
    Budgets,
    Message,
    SQLiteLog,
    StopReason,
    ToolContext,
    ToolSpec,
    UsageError,
    tool,
)
from reins.models._json_actions import action_schema
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .test_mcp import results


class Address(BaseModel):
    city: str
    zip: str = Field(pattern=r"^\d{5}$")


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    address: Address


@dataclass
class Point:
    x: float
    y: float


class Totals(TypedDict):
    files: int
    lines: int


ANN = {"name": "Ann", "age": 41, "address": {"city": "Lyon", "zip": "69001"}}


async def test_the_answer_is_a_validated_value_of_the_type(workspace: Path) -> None:
    offered: list[list[ToolSpec]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> object:
        offered.append(tools)
        return reply("", call("final_answer", "f1", answer=ANN))

    agent = Agent(model=FunctionModel(model), tools=[], workspace=workspace, output_type=Person)  # type: ignore[arg-type]
    result = await agent.run("who is it?")
    assert result.output == Person.model_validate(ANN)
    assert json.loads(result.final_answer or "") == ANN
    spec = next(t for t in offered[0] if t.name == "final_answer")
    answer = spec.parameters["properties"]["answer"]
    assert "$defs" not in json.dumps(spec.parameters)  # written out: the grammar needs no refs
    assert answer["properties"]["address"]["properties"]["zip"]["pattern"] == r"^\d{5}$"


async def test_an_answer_that_does_not_fit_goes_back_to_the_model(workspace: Path) -> None:
    bad = {**ANN, "address": {"city": "Lyon", "zip": "69"}}
    agent = Agent(
        model=ScriptedModel(
            [
                "It is Ann, 41, from Lyon.",  # prose: not a Person
                reply("", call("final_answer", "f1", answer=bad)),
                reply("", call("final_answer", "f2", answer=ANN)),
            ]
        ),
        tools=[],
        workspace=workspace,
        output_type=Person,
    )
    events = [e async for e in agent.iter("who?")]
    rejected = [e for e in events if e.kind == "answer_rejected"]
    assert len(rejected) == 1
    assert "the answer is not a valid Person" in rejected[0].observation  # type: ignore[union-attr]
    assert "calling final_answer with `answer` as a Person" in rejected[0].observation  # type: ignore[union-attr]
    content, is_error = results(events)["f1"]
    assert is_error
    assert content == (
        "invalid arguments for final_answer: answer.address.zip: '69' does not match '^\\\\d{5}$'"
    )
    state = events[-1]
    assert state.kind == "run_finished"
    assert json.loads(state.final_answer) == ANN  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("output_type", "given", "expected"),
    [
        (int, reply("", call("final_answer", "f", answer=42)), 42),
        (int, "FINAL_ANSWER: 42", 42),
        (Point, reply("", call("final_answer", "f", answer={"x": 1, "y": 2.5})), Point(1, 2.5)),
        (
            Totals,
            reply("", call("final_answer", "f", answer={"files": 3, "lines": 9})),
            {"files": 3, "lines": 9},
        ),
        (str, "FINAL_ANSWER: plain words", "plain words"),
    ],
)
async def test_scalars_dataclasses_and_typed_dicts(
    workspace: Path, output_type: object, given: object, expected: object
) -> None:
    agent = Agent(
        model=ScriptedModel([given]),  # type: ignore[list-item]
        tools=[],
        workspace=workspace,
        output_type=output_type,
    )
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert result.output == expected


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic takes typing's TypedDict there")
def test_a_type_pydantic_cannot_describe_is_one_clear_error() -> None:
    import typing

    class Plain(typing.TypedDict):  # typing's, which pydantic refuses below Python 3.12
        a: int

    with pytest.raises(UsageError, match="output_type Plain: Please use `typing_extensions"):
        Agent(model=ScriptedModel([]), tools=[], output_type=Plain)._tools()


def test_the_embedded_models_grammar_takes_the_answers_schema() -> None:
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    agent = Agent(model=ScriptedModel([]), tools=[], output_type=Person)
    specs = [t.spec for t in agent._tools()]
    schema = action_schema(specs, max_chars=2000)
    grammar = llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    assert grammar is not None


# Dependencies ------------------------------------------------------------------------------


@dataclass
class Db:
    users: dict[str, str]


@tool(read_only=True)
def lookup(ctx: ToolContext[Db], user: str) -> str:
    """Look a user up.

    Args:
        user: The user's id.
    """
    return ctx.deps.users.get(user, "unknown")


async def test_tools_read_the_runs_deps_and_a_resume_takes_them_again(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    agent = Agent(
        model=ScriptedModel([reply("", call("lookup", "l1", user="u1")), "done"]),
        tools=[lookup],
        workspace=workspace,
        deps_type=Db,
        log=sqlite_log,
        budgets=Budgets(max_steps=1),
    )
    first = await agent.run("who is u1?", deps=Db({"u1": "Ann"}))
    assert first.stop_reason is StopReason.MAX_STEPS
    assert [m.content for m in first.messages if m.role == "tool"] == ["Ann"]  # type: ignore[union-attr]
    journal = b"".join(p.read_bytes() for p in sqlite_log.directory.rglob("*.jsonl"))
    assert b"Ann" in journal  # the result, recorded; the deps object itself is not
    assert b"Db(" not in journal
    with pytest.raises(UsageError, match="take deps of type Db"):
        await agent.resume(first.run_id, max_steps=3)
    with pytest.raises(UsageError, match="deps of type dict given where Db is wanted"):
        await agent.run("again", deps={"u1": "Ann"})
    done = await agent.resume(first.run_id, max_steps=3, deps=Db({"u1": "Ann"}))
    assert done.stop_reason is StopReason.END_TURN


def _plain(x: int) -> int:
    return x


@tool(name="final_answer")
def _my_final(text: str) -> str:
    """My own."""
    return text


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"model": "nope:thing"}, "unknown model 'nope:thing'; known forms:"),
        ({"model": object()}, "model is a object, not a reins model"),
        ({"tools": [_plain]}, "tools[0] (_plain) is not a tool: decorate it with @tool"),
        ({"tools": [_my_final]}, "a tool of yours is named final_answer, which reins' own"),
        ({"approval": "yes"}, "approval='yes': give a function or one of 'ask', 'allow', 'deny'"),
        ({"ask": "always"}, "ask='always': give a function or 'pause' (None: no ask_user)"),
        ({"checks": ["pytest", " "]}, "a check is an empty command"),
        # Of the wrong kind: a string read letter by letter, a dict failing at the first run.
        ({"checks": "pytest"}, "checks='pytest': give a list, as in checks=[...]"),
        ({"tools": "read_file"}, "tools='read_file': give a list"),
        ({"tools": print}, "tools=<built-in function print>: give a list"),
        ({"settings": {"temperature": 0}}, "settings is a dict: give a ModelSettings(...)"),
        ({"sandbox": "read-only"}, "sandbox is a str: give a SandboxPolicy(...)"),
        ({"policies": [3]}, "policies[0] is a int, not a Policy"),
        ({"log": "runs/"}, "log is a str: give an event log, as SQLiteLog(path)"),
        ({"deps_type": 3}, "deps_type=3: give a type"),
        ({"budgets": {"max_steps": 5}}, "budgets is a dict: give a Budgets(...)"),
    ],
)
def test_a_setting_that_cannot_work_is_said_when_the_agent_is_made(
    setting: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        Agent(**{"model": ScriptedModel(["done"]), **setting})  # type: ignore[arg-type]
    assert str(raised.value).startswith(message), raised.value


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"at_cap": "nope"}, "at_cap='nope': say 'stop' or 'summarize'"),
        ({"max_steps": 0}, "max_steps=0: it must be 1 or more"),
        ({"time_budget": -5}, "time_budget=-5: a budget is more than 0"),
        ({"max_steps": "5"}, "max_steps='5': give a whole number"),
        ({"cost_budget": "1"}, "cost_budget='1': give a number (None: no budget)"),
        ({"on_cap": "ask"}, "on_cap='ask': give a function (None: the run stops)"),
    ],
)
def test_a_cap_that_cannot_work_is_said_when_the_budgets_are_made(
    setting: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        Budgets(**setting)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message), raised.value


async def test_deps_of_a_generic_type_are_checked_by_their_origin() -> None:
    agent = Agent(model=ScriptedModel(["done"]), tools=[], deps_type=dict[str, int])
    assert (await agent.run("go", deps={"a": 1})).stop_reason is StopReason.END_TURN
    with pytest.raises(UsageError, match="deps of type list given where dict is wanted"):
        await agent.run("go", deps=[1])


def test_a_policy_with_a_sync_hook_is_said_when_the_agent_is_made() -> None:
    from reins.policies import CONTINUE, Policy

    class Sync(Policy):
        def before_round(self, state):  # type: ignore[no-untyped-def,override]
            return CONTINUE

    with pytest.raises(UsageError, match=r"policy Sync: its before_round is not async"):
        Agent(model=ScriptedModel(["done"]), policies=[Sync()])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"tool_choice": "any"}, "tool_choice='any': say auto, required or none"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort='extreme': say minimal"),
        ({"temperature": -3}, "temperature=-3: it is from 0 to 2"),
        ({"max_tokens": 0}, "max_tokens=0: it is 1 or more"),
    ],
)
def test_model_settings_no_provider_takes_are_said_when_made(
    setting: dict[str, object], message: str
) -> None:
    from reins import ModelSettings

    with pytest.raises(UsageError) as raised:
        ModelSettings(**setting)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message), raised.value


def test_a_goal_that_is_not_text_is_said() -> None:
    with pytest.raises(UsageError, match="the goal is a int: give it as text"):
        Agent(model=ScriptedModel(["done"])).run_sync(3)  # type: ignore[arg-type]
