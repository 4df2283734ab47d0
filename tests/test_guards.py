"""The guards through the public API: each fires when it should, and not when it should not."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reins import (
    Agent,
    AnswerRejected,
    AssistantMessage,
    Guards,
    MemoryLog,
    Notice,
    ResponseRejected,
    RunFinished,
    StopReason,
    ToolCallFinished,
    ToolResultMessage,
    UsageError,
    UserMessage,
    tool,
)
from reins._config import load_config
from reins.cli import app
from reins.testing import ScriptedModel

from .helpers import call, reply

reads = 0


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    global reads
    reads += 1
    return f"value of {key}"


@tool
async def poke(n: int = 0) -> str:
    """Change something.

    Args:
        n: Which.
    """
    return f"poked {n}"


def agent_for(replies: Sequence[AssistantMessage | str], workspace: Path, **kw: object) -> Agent:
    return Agent(model=ScriptedModel(replies), workspace=workspace, **kw)  # type: ignore[arg-type]


async def events_of(agent: Agent, goal: str) -> list[object]:
    return [event async for event in agent.iter(goal)]


def notices(events: Sequence[object], source: str) -> list[Notice]:
    return [e for e in events if isinstance(e, Notice) and e.source == source]


# 1. file-action honesty


async def test_final_answer_without_the_file_is_refused_until_it_is_written(
    workspace: Path,
) -> None:
    replies = [
        "Here is hello.py:\nprint('hi')",
        reply("", call("write_file", "w", path="hello.py", content="print('hi')\n")),
        "FINAL_ANSWER: wrote hello.py",
    ]
    agent = agent_for(replies, workspace)
    events = await events_of(agent, "Create a file hello.py that prints hi")
    refused = [e for e in events if isinstance(e, AnswerRejected)]
    assert [e.source for e in refused] == ["FileActionGuard"]
    assert refused[0].observation.startswith("You have not written the file yet")
    assert "does not create the file" in refused[0].observation
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.stop_reason, finished.final_answer) == (StopReason.END_TURN, "wrote hello.py")
    assert (workspace / "hello.py").read_text() == "print('hi')\n"


async def test_final_answer_tool_is_refused_too_and_at_most_twice(workspace: Path) -> None:
    replies = [
        reply("", call("final_answer", "a", answer="done")),
        "FINAL_ANSWER: done",
        "done, really",
    ]
    result = await agent_for(replies, workspace).run("Save the report to report.md")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "done, really"
    refusals = [
        m
        for m in result.messages
        if isinstance(m, UserMessage) and m.content.startswith("You have not written")
    ]
    assert len(refusals) == 2


async def test_goal_without_a_file_is_answered_at_once(workspace: Path) -> None:
    for goal in ("Write a summary of main.py", "Explain what the file does", "say hi"):
        result = await agent_for(["hi"], workspace).run(goal)
        assert (result.stop_reason, result.final_answer, result.steps) == (
            StopReason.END_TURN,
            "hi",
            1,
        )


async def test_file_action_guard_can_be_switched_off(workspace: Path) -> None:
    agent = agent_for(["print('hi')"], workspace, guards=Guards(file_action=False))
    result = await agent.run("Create hello.py")
    assert (result.stop_reason, result.steps) == (StopReason.END_TURN, 1)


# 2. repeat-call cache


async def test_exact_repeat_of_a_read_is_answered_from_the_cache(workspace: Path) -> None:
    global reads
    reads = 0
    replies = [
        reply("", call("lookup", "a", key="k")),
        reply("", call("lookup", "b", key="k")),
        reply("", call("lookup", "c", key="other")),
        "FINAL_ANSWER: value of k",
    ]
    agent = agent_for(replies, workspace, tools=[lookup])
    events = await events_of(agent, "what is k")
    assert reads == 2  # the repeat did not run
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    cached = finished[1].result
    assert cached.call_id == "b"
    assert not cached.is_error
    assert cached.content.startswith("Cached: ")
    assert "value of k" in cached.content
    assert "do not repeat the call" in cached.content


async def test_a_change_invalidates_the_reads_of_its_path(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    replies = [
        reply("", call("read_file", "r1", path="a.txt")),
        reply("", call("list_files", "l1")),
        reply("", call("write_file", "w", path="./a.txt", content="two\n")),
        reply("", call("read_file", "r2", path="a.txt")),
        reply("", call("list_files", "l2")),
        "FINAL_ANSWER: two",
    ]
    result = await agent_for(replies, workspace).run("read a.txt, change it, read it")
    contents = {m.call_id: m.content for m in result.messages if isinstance(m, ToolResultMessage)}
    assert "two" in contents["r2"]
    assert not contents["r2"].startswith("Cached")
    assert not contents["l2"].startswith("Cached")


async def test_failed_reads_are_not_cached(workspace: Path) -> None:
    replies = [
        reply("", call("read_file", "r1", path="missing.txt")),
        reply("", call("read_file", "r2", path="missing.txt")),
        "FINAL_ANSWER: no file",
    ]
    result = await agent_for(replies, workspace).run("read missing.txt")
    second = [m for m in result.messages if isinstance(m, ToolResultMessage)][1]
    assert second.is_error
    assert not second.content.startswith("Cached")


async def test_cache_is_rebuilt_from_the_log_on_resume(workspace: Path) -> None:
    global reads
    reads = 0
    log = MemoryLog()
    replies = [
        reply("", call("lookup", "a", key="k")),
        reply("", call("lookup", "b", key="k")),
        "FINAL_ANSWER: k",
    ]
    agent = agent_for(replies, workspace, tools=[lookup], log=log, max_steps=1)
    first = await agent.run("what is k")
    assert first.stop_reason is StopReason.MAX_STEPS
    resumed = await agent_for(replies, workspace, tools=[lookup], log=log).resume(
        first.run_id, max_steps=5
    )
    assert resumed.stop_reason is StopReason.END_TURN
    assert reads == 1
    last = [m for m in resumed.messages if isinstance(m, ToolResultMessage)][-1]
    assert last.content.startswith("Cached: ")


# 3. loops and stalls


async def test_same_call_is_warned_about_then_the_run_stops_stalled(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}")) for i in range(10)]
    agent = agent_for(replies, workspace, tools=[poke])
    events = await events_of(agent, "poke")
    warnings = notices(events, "LoopGuard")
    assert len(warnings) == 1
    assert "the same call (poke) 3 times in a row" in warnings[0].text
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.STALLED
    assert finished.detail == "no progress after a warning: the same call (poke) 4 times in a row"


async def test_oscillation_is_a_loop(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}", n=i % 2)) for i in range(12)]
    result = await agent_for(replies, workspace, tools=[poke]).run("poke")
    assert result.stop_reason is StopReason.STALLED
    assert "alternating 3 times" in result.detail


async def test_no_progress_stalls(workspace: Path) -> None:
    # Different reads with the same answer each time: nothing new is learned.
    @tool(read_only=True)
    async def probe(n: int) -> str:
        """Probe.

        Args:
            n: Which.
        """
        return "nothing"

    replies = [reply("", call("probe", f"p{i}", n=i)) for i in range(12)]
    agent = agent_for(replies, workspace, tools=[probe], guards=Guards(anti_stall_threshold=4))
    events = await events_of(agent, "probe")
    assert "4 rounds with no change and no new result" in notices(events, "LoopGuard")[0].text
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.STALLED
    assert (
        finished.detail == "no progress after a warning: 5 rounds with no change and no new result"
    )


async def test_varied_progress_is_not_a_loop(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}", n=i)) for i in range(12)]
    replies.append("FINAL_ANSWER: done")
    agent = agent_for(replies, workspace, tools=[poke], guards=Guards(goal_anchor=0))
    events = await events_of(agent, "poke")
    assert notices(events, "LoopGuard") == []
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.END_TURN


async def test_a_warned_loop_that_recovers_goes_on(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}")) for i in range(3)]
    replies += [reply("", call("poke", "q", n=5)), "FINAL_ANSWER: done"]
    result = await agent_for(replies, workspace, tools=[poke]).run("poke")
    assert result.stop_reason is StopReason.END_TURN


async def test_loop_guard_can_be_switched_off(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}")) for i in range(6)] + ["FINAL_ANSWER: ok"]
    result = await agent_for(replies, workspace, tools=[poke], guards=Guards(loop=False)).run(
        "poke"
    )
    assert result.stop_reason is StopReason.END_TURN


# 4. leaked markup


async def test_leaked_tool_call_markup_is_nudged_then_reissued(workspace: Path) -> None:
    replies = [
        '<tool_call>{"name": "poke", "arguments": {}}</tool_call>',
        "Calling it: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>poke<｜tool▁sep｜>{}",
        reply("", call("poke", "p")),
        "FINAL_ANSWER: poked",
    ]
    agent = agent_for(replies, workspace, tools=[poke])
    events = await events_of(agent, "poke it")
    rejected = [e for e in events if isinstance(e, ResponseRejected)]
    assert [e.source for e in rejected] == ["LeakedMarkup", "LeakedMarkup"]
    assert "re-issue the call" in rejected[0].observation
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.final_answer == "poked"


async def test_json_action_in_prose_is_nudged_at_most_twice_and_stripped(
    workspace: Path,
) -> None:
    leak = 'I will run ```json\n{"name": "poke", "arguments": {"n": 1}}\n```'
    replies = [leak, leak, "<thought>hmm</thought>The answer is 3.<tool_call>x</tool_call>"]
    result = await agent_for(replies, workspace, tools=[poke]).run("what is 1+2")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "The answer is 3."


async def test_plain_answers_and_unknown_json_pass(workspace: Path) -> None:
    text = 'Use {"name": "x", "arguments": 1} or <b>bold</b>.'
    result = await agent_for([text], workspace, tools=[poke]).run("explain")
    assert (result.final_answer, result.steps) == (text, 1)


# 5. goal anchoring


async def test_goal_is_restated_every_five_rounds(workspace: Path) -> None:
    replies = [reply("", call("poke", f"p{i}", n=i)) for i in range(11)] + ["FINAL_ANSWER: ok"]
    agent = agent_for(replies, workspace, tools=[poke])
    events = await events_of(agent, "poke many things")
    anchors = notices(events, "GoalAnchor")
    assert len(anchors) == 2
    assert anchors[0].text == "Reminder of your goal (keep working toward it):\npoke many things"
    agent = agent_for(replies, workspace, tools=[poke], guards=Guards().without("goal-anchor"))
    assert notices(await events_of(agent, "poke"), "GoalAnchor") == []


# 6. one call per step


async def test_one_call_per_step_runs_only_the_first(workspace: Path) -> None:
    replies = [
        reply("", call("poke", "a", n=1), call("poke", "b", n=2)),
        "FINAL_ANSWER: ok",
    ]
    result = await agent_for(replies, workspace, tools=[poke], guards=Guards(one_call=True)).run(
        "poke"
    )
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results[0] == ToolResultMessage(call_id="a", name="poke", content="poked 1")
    assert results[1].is_error
    assert results[1].content.startswith("Not run: one call per step")
    # Off by default: both run.
    result = await agent_for(replies, workspace, tools=[poke]).run("poke")
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["poked 1", "poked 2"]


# the switches: command line and config file


def _looping_script(tmp_path: Path) -> str:
    replies: list[object] = [
        {"tool_calls": [{"name": "list_files", "arguments": {}}]} for _ in range(5)
    ]
    replies.append("FINAL_ANSWER: listed")
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(replies))
    return f"script:{path}"


def _reins_run(tmp_path: Path, *args: str) -> Result:
    model = _looping_script(tmp_path)
    store = str(tmp_path / "store")
    command = ["run", "list", "-m", model, "-w", str(tmp_path), "--json", "--store", store]
    return CliRunner().invoke(app, [*command, *args])


def test_cli_stops_a_loop_with_exit_code_11_unless_the_guard_is_off(tmp_path: Path) -> None:
    done = _reins_run(tmp_path)
    assert done.exit_code == 11, done.output
    assert '"stop_reason":"stalled"' in done.output
    done = _reins_run(tmp_path, "--no-guard", "loop")
    assert done.exit_code == 0, done.output
    assert '"final_answer":"listed"' in done.output


def test_cli_refuses_an_unknown_guard(tmp_path: Path) -> None:
    done = _reins_run(tmp_path, "--no-guard", "nonsense")
    assert done.exit_code == 2
    assert "no guard 'nonsense'" in done.output


def test_config_guards_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[guards]\nloop = false\ngoal_anchor = 2\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    assert load_config().guards.guards() == Guards(loop=False, goal_anchor=2)
    assert load_config().guards.guards(on=["loop", "one-call"], off=["markup"]) == Guards(
        goal_anchor=2, markup=False, one_call=True
    )
    done = _reins_run(tmp_path)
    assert done.exit_code == 0, done.output
    config.write_text("[guards]\nloop_threshold = 1\n")
    with pytest.raises(UsageError, match=r"guards\.loop_threshold"):
        load_config()


async def test_strict_json_replies_are_left_to_strict_actions(workspace: Path) -> None:
    model = ScriptedModel(['{"name": "poke", "arguments": {}}', "FINAL_ANSWER: ok"])
    model.actions = "json"  # type: ignore[attr-defined]
    agent = Agent(model=model, workspace=workspace, tools=[poke])
    events = await events_of(agent, "poke")
    assert [e.source for e in events if isinstance(e, ResponseRejected)] == []


async def test_a_loop_warning_survives_a_resume(workspace: Path) -> None:
    log = MemoryLog()
    replies = [reply("", call("poke", f"p{i}")) for i in range(8)]
    agent = agent_for(replies, workspace, tools=[poke], log=log, max_steps=4)
    first = await agent.run("poke")  # warned before round 4, capped before round 5
    assert first.stop_reason is StopReason.MAX_STEPS
    warned = [m for m in first.messages if isinstance(m, UserMessage) and "circles" in m.content]
    assert len(warned) == 1
    resumed = agent_for(replies, workspace, tools=[poke], log=log)
    events = [e async for e in resumed.resume_iter(first.run_id, max_steps=8)]
    assert notices(events, "LoopGuard") == []  # not warned again: stopped at once
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.STALLED
    state = await resumed.state(first.run_id)
    assert state.step == 4


async def test_a_repeated_final_answer_call_is_not_answered_from_cache(workspace: Path) -> None:
    replies = [reply("", call("final_answer", f"f{i}", answer="done")) for i in range(3)]
    result = await agent_for(replies, workspace).run("Write notes.txt")
    assert (result.stop_reason, result.final_answer, result.steps) == (
        StopReason.END_TURN,
        "done",
        3,
    )
    contents = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert contents == ["Final answer recorded."] * 3


def test_guard_settings_are_checked() -> None:
    with pytest.raises(UsageError, match="loop_threshold must be at least 2"):
        Guards(loop_threshold=1)
    with pytest.raises(UsageError, match="no guard 'loops'"):
        Guards().without("loops")


def test_cli_resume_takes_the_guard_flags(tmp_path: Path) -> None:
    done = _reins_run(tmp_path, "--max-steps", "4", "--no-guard", "loop")
    assert done.exit_code == 3, done.output
    store = str(tmp_path / "store")
    resumed = CliRunner().invoke(app, ["resume", "last", "--json", "--store", store])
    assert resumed.exit_code == 11, resumed.output  # the loop guard is back: warned, then stopped
    resumed = CliRunner().invoke(
        app, ["resume", "last", "--no-guard", "loop", "--json", "--store", store]
    )
    assert resumed.exit_code == 0, resumed.output
