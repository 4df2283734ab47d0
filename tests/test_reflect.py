"""The Reflective agent: a reflection after each step whose tools ran, and what it decides."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Cancel,
    Guards,
    Message,
    RunState,
    SQLiteLog,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageError,
    UserMessage,
    tool,
)
from reins.cli import app
from reins.events import AnswerRejected, ModelResponded, Notice, Reflected, RunConfig, RunFinished
from reins.policies import parse_reflection
from reins.policies._reflect import FAILED_NOTE, REFLECT_TOOL, step_report
from reins.testing import FunctionModel

from .helpers import call, reply


@tool
async def poke(n: int = 0) -> str:
    """Change something.

    Args:
        n: Which.
    """
    if n < 0:
        raise ValueError("n must not be negative")
    return f"poked {n}"


def judged(assessment: str, next_action: str = "continue", reasoning: str = "", plan: str = ""):
    arguments = {
        "assessment": assessment,
        "reasoning": reasoning or f"the step was a {assessment}",
        "next_action": next_action,
        "revised_approach": plan,
    }
    return reply("", ToolCall(id="r", name="reflect", arguments=arguments))


class TwoRoles:
    """One model in two roles: the agent (`acts`, in order) and its reflection (`reflections`,
    in order); every request is kept."""

    def __init__(self, acts: Sequence[AssistantMessage | str], reflections: Sequence[Any]) -> None:
        self.acts = list(acts)
        self.reflections = list(reflections)
        self.agent_requests: list[list[Message]] = []
        self.reflection_requests: list[list[Message]] = []

    def __call__(self, messages: list[Message], tools: list[ToolSpec]) -> Any:
        if [t.name for t in tools] == ["reflect"]:
            self.reflection_requests.append(messages)
            item = self.reflections.pop(0)
            if isinstance(item, Exception):
                raise item
            return item
        self.agent_requests.append(messages)
        return self.acts.pop(0)


def agent(model: TwoRoles, workspace: Path, **kw: Any) -> Agent:
    return Agent(
        model=FunctionModel(model),
        workspace=workspace,
        tools=[poke],
        reflect=True,
        **kw,
    )


async def events(agent: Agent, goal: str = "poke things") -> list[Any]:
    return [event async for event in agent.iter(goal)]


def told(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if isinstance(m, UserMessage)]


# parsing


def test_a_reflect_call_is_read_from_its_arguments() -> None:
    parsed = parse_reflection(judged("failure", "retry", "the file was missing", "create it"))
    assert (parsed.assessment, parsed.next_action) == ("failure", "retry")
    assert (parsed.reasoning, parsed.revised_approach) == ("the file was missing", "create it")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Here it is:\n```json\n{"assessment": "success", "reasoning": "it worked", '
            '"next_action": "complete", "revised_approach": ""}\n```',
            ("success", "complete", "it worked"),
        ),
        (
            'I think {"assessment": "Partial", "reasoning": "half done", "next_action": '
            '"change plan", "revised_approach": "x"} and that is all',
            ("partial", "change_plan", "half done"),
        ),
        (
            'assessment: failure\nreasoning: "no such file"\nnext_action: retry',
            ("failure", "retry", "no such file"),
        ),
        ("The step looks fine to me.", ("unknown", "continue", "")),
        (
            '{"assessment": "great", "reasoning": "?", "next_action": "dance"}',
            ("unknown", "continue", "?"),
        ),
    ],
)
def test_a_reflection_in_text_is_parsed_tolerantly(text: str, expected: tuple[str, ...]) -> None:
    parsed = parse_reflection(AssistantMessage(text=text))
    assert (parsed.assessment, parsed.next_action, parsed.reasoning) == expected


# what a reflection decides


async def test_a_failure_tells_the_model_the_revised_approach(workspace: Path) -> None:
    model = TwoRoles(
        [reply("", call("poke", "c1", n=-1)), reply("", call("poke", "c2", n=2)), "done"],
        [judged("failure", "retry", "poke refused n=-1", "use n=2"), judged("success")],
    )
    run = await events(agent(model, workspace))
    reflections = [e for e in run if isinstance(e, Reflected)]
    assert [(r.step, r.assessment, r.next_action) for r in reflections] == [
        (1, "failure", "retry"),
        (2, "success", "continue"),
    ]
    assert reflections[0].source == "reflection"
    assert reflections[0].to_model.startswith(FAILED_NOTE)
    # The agent's second request ends with the failed result, then the reflection.
    second = model.agent_requests[1]
    assert isinstance(second[-2], ToolResultMessage)
    assert second[-2].is_error
    assert second[-1] == UserMessage(
        content=f"{FAILED_NOTE} (attempt 1 of 3). poke refused n=-1 Revised approach: use n=2]"
    )
    # A success tells the model nothing.
    assert told(model.agent_requests[2]) == told(second)
    finished = run[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.stop_reason, finished.final_answer) == (StopReason.END_TURN, "done")


async def test_the_reflection_sees_the_goal_and_each_result_cut_short(workspace: Path) -> None:
    model = TwoRoles([reply("I will poke", call("poke", "c1", n=7)), "done"], [judged("success")])
    await events(agent(model, workspace), goal="poke seven")
    [[system, report]] = model.reflection_requests
    assert "reflect tool" in system.content  # type: ignore[union-attr]
    text = report.content  # type: ignore[union-attr]
    assert text.startswith("Goal:\npoke seven")
    assert "Thought: I will poke" in text
    assert '- poke({"n": 7}) -> ok:\npoked 7' in text


def test_a_long_result_is_cut_to_500_characters_in_the_report(workspace: Path) -> None:
    long = "x" * 2000
    state = RunState(
        session_id="s",
        run_id="r",
        goal="g",
        config=RunConfig(model="m", workspace=str(workspace), max_steps=5),
        messages=[
            SystemMessage(content="sys"),
            UserMessage(content="g"),
            reply("", call("poke", "c1")),
            ToolResultMessage(call_id="c1", name="poke", content=long, is_error=True),
        ],
        acted=1,
    )
    report = step_report(state)
    assert "-> error:\n" + "x" * 500 + "… [1500 more chars]" in report
    assert "x" * 501 not in report


async def test_failures_in_a_row_end_the_run_at_max_retries(workspace: Path) -> None:
    acts = [reply("", call("poke", f"c{i}", n=i)) for i in range(1, 6)]
    model = TwoRoles(acts, [judged("failure", "retry")] * 2)
    run = await events(agent(model, workspace, reflect_max_retries=2))
    finished = run[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.STALLED
    assert "2 steps in a row failed" in finished.detail
    assert len(model.agent_requests) == 2  # no third round after the second failure


async def test_a_success_resets_the_count_of_failures(workspace: Path) -> None:
    acts = [reply("", call("poke", f"c{i}", n=i)) for i in range(1, 5)] + ["done"]
    verdicts = ["failure", "success", "failure", "partial"]
    model = TwoRoles(acts, [judged(v, "retry" if v == "failure" else "continue") for v in verdicts])
    run = await events(agent(model, workspace, reflect_max_retries=2))
    finished = run[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.END_TURN
    assert [e.assessment for e in run if isinstance(e, Reflected)] == verdicts


async def test_a_change_of_plan_and_a_retry_are_told(workspace: Path) -> None:
    acts = [reply("", call("poke", "c1", n=1)), reply("", call("poke", "c2", n=2)), "done"]
    model = TwoRoles(
        acts,
        [
            judged("partial", "change_plan", "poking [one] by one is slow", "poke all at once"),
            judged("unknown", "retry", "unclear"),
        ],
    )
    await events(agent(model, workspace))
    assert told(model.agent_requests[1])[-1] == (
        "[Reflection: change of plan. poking (one) by one is slow New plan: poke all at once]"
    )
    assert told(model.agent_requests[2])[-1] == "[Reflection: retry. unclear]"


async def test_complete_ends_the_run_with_the_reasoning_as_its_answer(workspace: Path) -> None:
    model = TwoRoles(
        [reply("", call("poke", "c1", n=1))],
        [judged("success", "complete", "Poked once, as asked.")],
    )
    run = await events(agent(model, workspace))
    finished = run[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.END_TURN
    assert finished.final_answer == "Poked once, as asked."
    assert len(model.agent_requests) == 1


async def test_complete_is_still_refused_when_the_goal_wants_an_unwritten_file(
    workspace: Path,
) -> None:
    model = TwoRoles(
        [reply("", call("poke", "c1", n=1)), "I could not write it.", "Giving up."],
        [judged("success", "complete", "All done.")],
    )
    run = await events(agent(model, workspace), goal="Create the file out.txt with hi")
    rejected = [e for e in run if isinstance(e, AnswerRejected)]
    assert [e.source for e in rejected] == ["FileActionGuard", "FileActionGuard"]
    assert len(model.agent_requests) == 3  # the refusal sent the model back to work
    assert run[-1].final_answer == "Giving up."


async def test_an_echoed_reflection_is_stripped_from_the_history_not_the_log(
    workspace: Path,
) -> None:
    echo = "[Reflection: the last step failed (attempt 1 of 3). bad Revised approach: n=2]"
    model = TwoRoles(
        [
            reply("", call("poke", "c1", n=-1)),
            reply(f"{echo}\nTrying n=2 now.", call("poke", "c2", n=2)),
            "done",
        ],
        [judged("failure", "retry", "bad", "n=2"), judged("success")],
    )
    run = await events(agent(model, workspace))
    logged = [e.message.text for e in run if isinstance(e, ModelResponded)]
    assert logged[1] == f"{echo}\nTrying n=2 now."
    history = [m for m in model.agent_requests[2] if isinstance(m, AssistantMessage)]
    assert history[1].text == "Trying n=2 now."


async def test_a_failure_resets_the_loop_guard(workspace: Path) -> None:
    same = [reply("", call("poke", f"c{i}", n=-1)) for i in range(4)]
    model = TwoRoles([*same, "gave up"], [judged("failure", "retry")] * 4)
    run = await events(agent(model, workspace, reflect_max_retries=5))
    assert not [e for e in run if isinstance(e, Notice) and e.source == "LoopGuard"]
    finished = run[-1]
    assert isinstance(finished, RunFinished)
    assert finished.final_answer == "gave up"
    # Without reflection the same calls are warned about, then stopped.
    plain = TwoRoles([*same, "gave up"], [])
    run = await events(
        Agent(model=FunctionModel(plain), workspace=workspace, tools=[poke], guards=Guards())
    )
    assert [e for e in run if isinstance(e, Notice) and e.source == "LoopGuard"]


async def test_no_reflection_after_a_step_without_tools_or_by_default(workspace: Path) -> None:
    model = TwoRoles(["just an answer"], [])
    run = await events(agent(model, workspace))
    assert not [e for e in run if isinstance(e, Reflected)]
    assert not model.reflection_requests
    model = TwoRoles([reply("", call("poke", "c1")), "done"], [])
    await events(Agent(model=FunctionModel(model), workspace=workspace, tools=[poke]))
    assert not model.reflection_requests


async def test_a_reflective_agent_reflects_and_its_calls_count_in_the_usage(
    workspace: Path,
) -> None:
    usage = Usage(input_tokens=100, output_tokens=10, requests=1)
    model = TwoRoles([reply("", call("poke", "c1")), "done"], [judged("success")])
    run_agent = Agent(
        model=FunctionModel(model, usage=usage), workspace=workspace, tools=[poke], reflect=True
    )
    result = await run_agent.run("poke")
    assert result.usage.requests == 3  # two rounds and one reflection
    assert result.usage.input_tokens == 300


async def test_a_failed_reflection_stops_resumably_and_resume_reflects(
    tmp_path: Path, workspace: Path
) -> None:
    log = SQLiteLog(tmp_path / "log")
    model = TwoRoles(
        [reply("", call("poke", "c1", n=-1)), "done"],
        [ConnectionError("down"), judged("failure", "retry", "bad", "n=2")],
    )
    first = await agent(model, workspace, log=log).run("poke")
    assert first.stop_reason is StopReason.ERROR
    assert "the reflection call failed: ConnectionError: down" in first.detail
    resumed = await agent(model, workspace, log=log).resume(first.run_id)
    assert resumed.stop_reason is StopReason.END_TURN
    state = RunState.fold(await log.events(first.run_id))
    assert (state.reflected, state.failed_attempts) == (1, 1)
    assert told(state.messages)[-1].startswith(FAILED_NOTE)
    assert len(model.reflection_requests) == 2  # the step was judged once it could be


async def test_a_resume_keeps_reflecting_as_the_run_was_started(
    tmp_path: Path, workspace: Path
) -> None:
    log = SQLiteLog(tmp_path / "log")
    model = TwoRoles(
        [reply("", call("poke", "c1")), reply("", call("poke", "c2")), "done"],
        [judged("success"), judged("success")],
    )
    first = await agent(model, workspace, log=log, budgets=Budgets(max_steps=1)).run("poke")
    assert first.stop_reason is StopReason.MAX_STEPS
    plain = Agent(model=FunctionModel(model), workspace=workspace, tools=[poke], log=log)
    resumed = await plain.resume(first.run_id, max_steps=5)  # an agent without reflect
    assert resumed.stop_reason is StopReason.END_TURN
    assert len(model.reflection_requests) == 2


async def test_cancel_while_reflecting_stops_the_run(workspace: Path) -> None:
    cancel = Cancel()

    async def slow(messages: list[Message], tools: list[ToolSpec]) -> Any:
        if [t.name for t in tools] == ["reflect"]:
            cancel.cancel()
            await asyncio.sleep(10)
        return reply("", call("poke", "c1"))

    run_agent = Agent(model=FunctionModel(slow), workspace=workspace, tools=[poke], reflect=True)
    result = await run_agent.run("poke", cancel=cancel)
    assert result.stop_reason is StopReason.CANCELLED
    assert "reflecting" in result.detail


def test_max_retries_must_be_positive(workspace: Path) -> None:
    model = TwoRoles(["x"], [])
    with pytest.raises(UsageError, match="reflect_max_retries"):
        agent(model, workspace, reflect_max_retries=0).run_sync("go")


def test_the_reflect_tool_is_what_the_issue_asks_for() -> None:
    properties = REFLECT_TOOL.parameters["properties"]
    assert properties["assessment"]["enum"] == ["success", "failure", "partial", "unknown"]
    assert properties["next_action"]["enum"] == ["continue", "change_plan", "complete", "retry"]
    assert REFLECT_TOOL.parameters["required"] == [
        "assessment",
        "reasoning",
        "next_action",
        "revised_approach",
    ]


# the command line and the config file


def _reins_run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    # A scripted model answers a reflection with the script's first reply (it counts the
    # assistant messages of a request, and a reflection's has none): read as unknown/continue.
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "list_files", "arguments": {}}]}, "ok"]))
    store = str(tmp_path / "store")
    command = ["run", "list", "-m", f"script:{script}", "-w", str(tmp_path), "--store", store]
    return CliRunner().invoke(app, [*command, *args], env=env)


def test_cli_reflects_with_the_flag_and_shows_the_reflection(tmp_path: Path) -> None:
    done = _reins_run(tmp_path, "--reflect")
    assert done.exit_code == 0, done.output
    assert "reflection on step 1: unknown, next: continue" in done.output
    done = _reins_run(tmp_path, "--json")
    assert done.exit_code == 0, done.output
    assert '"kind":"reflected"' not in done.output


def test_config_turns_reflection_on_and_the_flag_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("reflect = true\nreflect_max_retries = 2\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    done = _reins_run(tmp_path, "--json")
    assert done.exit_code == 0, done.output
    started = json.loads(done.output.splitlines()[0])
    assert started["config"]["reflect"] is True
    assert started["config"]["reflect_max_retries"] == 2
    assert '"kind":"reflected"' in done.output
    done = _reins_run(tmp_path, "--json", "--reflect-max-retries", "5")
    assert json.loads(done.output.splitlines()[0])["config"]["reflect_max_retries"] == 5
    done = _reins_run(tmp_path, "--json", "--no-reflect")
    assert '"kind":"reflected"' not in done.output
    config.write_text("reflect_max_retries = 0\n")
    done = _reins_run(tmp_path, "--json")
    assert done.exit_code == 2
    assert "reflect_max_retries" in done.output
