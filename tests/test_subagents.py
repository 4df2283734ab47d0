"""Subagents: a subtask as a child run — in the same store and linked to the call, in the
same workspace, its events on the parent's stream, its spending in the parent's budgets,
cancelled with it, several at once; `Agent.as_tool` and `spawn_agent`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Cancel,
    Message,
    ModelResponse,
    SQLiteLog,
    StopReason,
    Subagents,
    ToolSpec,
    Usage,
    UserMessage,
)
from reins.core._events import SubagentEvent
from reins.events import RunFinished, RunStarted, ToolCallFinished
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply

USAGE = Usage(input_tokens=100, output_tokens=10, requests=1)


def spent(text: str | AssistantMessage) -> ModelResponse:
    message = AssistantMessage(text=text) if isinstance(text, str) else text
    finish = "tool_use" if message.tool_calls else "end_turn"
    return ModelResponse(message=message, usage=USAGE, finish=finish, model_name="m")


def real(path: Path) -> str:
    return str(path.resolve())


def writer() -> Agent:
    return Agent(
        model=ScriptedModel(
            [
                spent(
                    reply("", call("write_file", "w1", path="notes.txt", content="from the child"))
                ),
                spent("wrote notes.txt"),
            ]
        ),
        tools=BUILTIN_TOOLS,
    )


async def test_as_tool_runs_a_linked_child_in_the_same_store_and_workspace(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    helper = writer().as_tool("helper", "Writes notes.")
    parent = Agent(
        model=ScriptedModel(
            [spent(reply("", call("helper", "h1", task="write the notes"))), spent("done")]
        ),
        tools=[helper],
        workspace=workspace,
        log=sqlite_log,
    )
    events = [e async for e in parent.iter("take notes")]
    root = real(workspace)
    own = [e for e in events if not isinstance(e, SubagentEvent)]
    forwarded = [e for e in events if isinstance(e, SubagentEvent)]
    finished = next(e for e in own if isinstance(e, ToolCallFinished))
    outcome = json.loads(finished.result.content)
    assert outcome["result"] == "wrote notes.txt"
    assert outcome["completed"] is True
    assert (workspace / "notes.txt").read_text() == "from the child"
    # The child's events came on the parent's stream, under the call.
    assert {e.path for e in forwarded} == {("h1",)}
    kinds = [e.event.kind for e in forwarded]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_finished"
    # Recorded in the same store, linked to the parent's run and call.
    child_id = outcome["run_id"]
    child = await parent.state(child_id)
    assert child.config.parent_run_id == own[0].run_id
    assert child.config.parent_call_id == "h1"
    assert child.config.workspace == root
    assert child.session_id != own[0].session_id
    # Its spending is the parent's: two child calls and the parent's two.
    assert finished.usage == Usage(input_tokens=200, output_tokens=20, requests=2)
    result = await parent.state(own[0].run_id)
    assert result.usage == Usage(input_tokens=400, output_tokens=40, requests=4)


async def test_children_run_side_by_side(workspace: Path) -> None:
    arrived: list[str] = []
    both = asyncio.Event()

    async def child_model(messages: list[Message], tools: list[ToolSpec]) -> str:
        goal = next(m.content for m in messages if isinstance(m, UserMessage))
        arrived.append(goal)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 10)  # only if the other child runs meanwhile
        return f"did {goal}"

    child = Agent(model=FunctionModel(child_model), tools=[])
    parent = Agent(
        model=ScriptedModel(
            [
                reply(
                    "",
                    call("spawn_agent", "s1", task="part one", profile="worker"),
                    call("spawn_agent", "s2", task="part two", profile="worker"),
                ),
                "both done",
            ]
        ),
        tools=[],
        workspace=workspace,
        subagents={"worker": child},
    )
    result = await parent.run("split the work")
    outcomes = {
        m.call_id: json.loads(m.content)
        for m in result.messages
        if m.role == "tool"  # type: ignore[union-attr]
    }
    assert outcomes["s1"]["result"] == "did part one"
    assert outcomes["s2"]["result"] == "did part two"
    assert sorted(arrived) == ["part one", "part two"]


async def test_a_cancel_reaches_the_child(workspace: Path, sqlite_log: SQLiteLog) -> None:
    cancel = Cancel()

    def child_model(messages: list[Message], tools: list[ToolSpec]) -> str:
        cancel.cancel()  # the user presses Ctrl-C while the child thinks
        return "never seen"

    parent = Agent(
        model=ScriptedModel([reply("", call("helper", "h1", task="work")), "done"]),
        tools=[Agent(model=FunctionModel(child_model), tools=[]).as_tool("helper", "Works.")],
        workspace=workspace,
        log=sqlite_log,
    )
    result = await parent.run("go", cancel=cancel)
    assert result.stop_reason is StopReason.CANCELLED
    runs = await sqlite_log.runs()
    child = next(r for r in runs if r.run_id != result.run_id)
    assert child.stop_reason is StopReason.CANCELLED


async def test_the_child_gets_what_is_left_of_the_budget_and_its_caps(workspace: Path) -> None:
    seen: list[RunStarted] = []
    parent = Agent(
        model=ScriptedModel([spent(reply("", call("spawn_agent", "s1", task="dig"))), spent("ok")]),
        tools=[],
        workspace=workspace,
        subagents=Subagents(max_steps=1, timeout=42.0),
        budgets=Budgets(token_budget=1000),
    )
    events = [e async for e in parent.iter("go")]
    seen = [
        e.event for e in events if isinstance(e, SubagentEvent) and isinstance(e.event, RunStarted)
    ]
    config = seen[0].config
    assert config.max_steps == 1
    assert config.time_budget == 42.0
    assert config.token_budget == 1000 - 110  # the parent's first call spent 110
    assert "spawn_agent" not in config.tools  # one level deep
    outcome = json.loads(next(e for e in events if isinstance(e, ToolCallFinished)).result.content)
    # The copy replays the parent's script: its one step calls spawn_agent, which it lacks;
    # at the step cap it summarizes (its answer is partial, not completed).
    assert outcome["completed"] is False
    assert outcome["stop_reason"] == "max_steps"


async def test_spawn_agent_hands_over_context_and_refuses_an_unknown_profile(
    workspace: Path,
) -> None:
    firsts: list[list[Message]] = []

    def child_model(messages: list[Message], tools: list[ToolSpec]) -> str:
        firsts.append(messages)
        return "noted"

    parent = Agent(
        model=ScriptedModel(
            [
                reply("", call("read_file", "r1", path="plan.txt")),
                reply(
                    "",
                    call("spawn_agent", "s1", task="summarize", profile="nobody"),
                    call(
                        "spawn_agent", "s2", task="summarize", profile="scribe", share_context=True
                    ),
                ),
                "done",
            ]
        ),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        subagents={
            "scribe": Agent(model=FunctionModel(child_model), tools=[], instructions="Takes notes.")
        },
    )
    (workspace / "plan.txt").write_text("step one: the secret plan")
    result = await parent.run("plan")
    tool_results = {m.call_id: m for m in result.messages if m.role == "tool"}  # type: ignore[union-attr]
    assert tool_results["s1"].is_error  # type: ignore[union-attr]
    assert tool_results["s1"].content == "no profile 'nobody'; the profiles: scribe"  # type: ignore[union-attr]
    messages = firsts[0]
    assert messages[1].role == "user"
    assert "Context from the agent that hands you this task" in messages[1].content  # type: ignore[union-attr]
    assert "step one: the secret plan" in messages[1].content  # type: ignore[union-attr]
    assert messages[2] == AssistantMessage(text="Understood. What is the task?")
    assert messages[3] == UserMessage(content="summarize")


async def test_nested_subagents_forward_with_the_whole_path(workspace: Path) -> None:
    inner = Agent(model=ScriptedModel(["inner done"]), tools=[]).as_tool("inner", "Inner.")
    middle = Agent(
        model=ScriptedModel([reply("", call("inner", "i1", task="deep")), "middle done"]),
        tools=[inner],
    ).as_tool("middle", "Middle.")
    parent = Agent(
        model=ScriptedModel([reply("", call("middle", "m1", task="go down")), "top done"]),
        tools=[middle],
        workspace=workspace,
    )
    events = [e async for e in parent.iter("go")]
    paths = {e.path for e in events if isinstance(e, SubagentEvent)}
    assert paths == {("m1",), ("m1", "i1")}
    deepest = [e.event for e in events if isinstance(e, SubagentEvent) and e.depth == 2]
    assert isinstance(deepest[-1], RunFinished)
    assert deepest[-1].final_answer == "inner done"


def test_the_cli_spawns_a_profile_and_shows_its_steps_indented(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "ws").mkdir()
    (tmp_path / "child.json").write_text(json.dumps(["FINAL_ANSWER: the child's answer"]))
    (tmp_path / "parent.json").write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {
                            "name": "spawn_agent",
                            "arguments": {"task": "look it up", "profile": "helper"},
                        }
                    ]
                },
                "FINAL_ANSWER: the parent's answer",
            ]
        )
    )
    (tmp_path / "user.toml").write_text(
        f'subagents = true\n[profiles.helper]\nmodel = "script:{tmp_path / "child.json"}"\n'
        'instructions = "Looks things up."\n'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "REINS_CONFIG": str(tmp_path / "user.toml"),
        "COLUMNS": "120",
        "HOME": str(tmp_path),
    }

    def reins(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "reins",
                "run",
                "go",
                "-m",
                f"script:{tmp_path / 'parent.json'}",
                "-w",
                "ws",
                *args,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    done = reins()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("  │ goal look it up") for line in lines)
    assert "  │ FINAL_ANSWER: the child's answer" in lines  # as the child wrote it, once
    assert "  │ ✓ final answer (above)" in lines
    assert "the parent's answer" in done.stdout
    done = reins("--json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    forwarded = [r for r in records if "subagent" in r]
    assert forwarded[0]["event"]["kind"] == "run_started"
    assert forwarded[0]["event"]["config"]["profile"] == "helper"
    assert forwarded[-1]["event"]["final_answer"] == "the child's answer"
    call_ids = {r["subagent"][0] for r in forwarded}
    assert len(call_ids) == 1


def test_the_cli_offers_spawn_agent_without_profiles(tmp_path: Path) -> None:
    """`--subagents` with no [profiles] in the config offers a copy of the agent itself."""
    import subprocess
    import sys

    (tmp_path / "ws").mkdir()
    (tmp_path / "script.json").write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "spawn_agent", "arguments": {"task": "say hi"}}]},
                "FINAL_ANSWER: hi",
            ]
        )
    )
    model = f"script:{tmp_path / 'script.json'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reins",
            "run",
            "go",
            "--subagents",
            "--json",
            "-w",
            "ws",
            "-m",
            model,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "REINS_CONFIG": "/dev/null"},
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    started = next(r for r in records if r.get("kind") == "run_started")
    assert "spawn_agent" in started["config"]["tools"]
    # The child is a copy on the same script, without spawn_agent: its first reply's call
    # is refused, its second answers.
    child = [r["event"] for r in records if "subagent" in r]
    assert child[0]["config"]["profile"] is None
    assert "spawn_agent" not in child[0]["config"]["tools"]
    assert child[-1]["final_answer"] == "hi"


def test_spawn_agent_with_profiles_keeps_its_argument_descriptions() -> None:
    scribe = Agent(model=ScriptedModel(["x"]), tools=[], instructions="Writes notes.")
    for subagents in (True, {"scribe": scribe}):
        agent = Agent(model=ScriptedModel(["x"]), subagents=subagents)
        spec = next(t.spec for t in agent._tools() if t.name == "spawn_agent")
        assert spec.parameters["properties"]["task"]["description"].startswith("The whole subtask")
        assert "Args:" not in spec.description
    assert "- scribe: Writes notes." in spec.description


async def test_a_child_that_said_nothing_reports_no_answer_not_its_preface(
    workspace: Path,
) -> None:
    def broken(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise RuntimeError("the provider is down")

    helper = Agent(model=FunctionModel(broken), tools=[], workspace=workspace)
    parent = Agent(
        model=ScriptedModel(
            [reply("", call("helper", "h1", task="look it up")), "FINAL_ANSWER: done"]
        ),
        tools=[helper.as_tool("helper", "Looks things up.", context=True)],
        workspace=workspace,
    )
    result = await parent.run("go")
    told = json.loads(next(m.content for m in result.messages if m.role == "tool"))  # type: ignore[union-attr]
    assert told["stop_reason"] == "error"
    assert told["result"] == ""  # not the "Understood" of the shared-context preface


async def test_a_named_agent_runs_with_its_own_step_cap(workspace: Path) -> None:
    scribe = Agent(
        model=ScriptedModel(["noted"]), tools=[], workspace=workspace, budgets=Budgets(max_steps=2)
    )
    parent = Agent(
        model=ScriptedModel(
            [
                reply("", call("spawn_agent", "a", task="note it", profile="scribe")),
                reply("", call("spawn_agent", "b", task="note it")),
                "done",
            ]
        ),
        tools=[],
        workspace=workspace,
        subagents=Subagents(agents={"scribe": scribe}, max_steps=3),
    )
    caps = {
        e.path[0]: e.event.config.max_steps
        async for e in parent.iter("go")
        if isinstance(e, SubagentEvent) and isinstance(e.event, RunStarted)
    }
    assert caps == {"a": 2, "b": 3}  # the profile's own; a copy's from subagent_steps
