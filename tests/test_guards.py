"""The guards through the public API: each fires when it should, and not when it should not."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Guards,
    MemoryLog,
    Message,
    RunState,
    StopReason,
    ToolResultMessage,
    UsageError,
    UserMessage,
    tool,
)
from reins.agent._config import load_config
from reins.cli import app
from reins.core._repetition import collapse_repeats
from reins.events import (
    EVENT,
    AnswerRejected,
    ModelResponded,
    Notice,
    ResponseRejected,
    RunFinished,
    RunResumed,
    RunStarted,
    ToolCallFinished,
)
from reins.testing import FunctionModel, ScriptedModel

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

NO_BLOCK = Guards().without("repeat-block")
"""The repeat-block guard rejects an immediate repeat before the cache sees it."""


async def test_exact_repeat_of_a_read_is_answered_from_the_cache(workspace: Path) -> None:
    global reads
    reads = 0
    replies = [
        reply("", call("lookup", "a", key="k")),
        reply("", call("lookup", "b", key="k")),
        reply("", call("lookup", "c", key="other")),
        "FINAL_ANSWER: value of k",
    ]
    agent = agent_for(replies, workspace, tools=[lookup], guards=NO_BLOCK)
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
    agent = agent_for(
        replies, workspace, tools=[lookup], log=log, budgets=Budgets(max_steps=1), guards=NO_BLOCK
    )
    first = await agent.run("what is k")
    assert first.stop_reason is StopReason.MAX_STEPS
    resumed = await agent_for(replies, workspace, tools=[lookup], log=log, guards=NO_BLOCK).resume(
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
    assert anchors[0].text == (
        "Reminder of your goal (keep working toward it; once it is reached, call final_answer "
        "with your answer rather than do again what is done):\npoke many things"
    )
    agent = agent_for(replies, workspace, tools=[poke], guards=Guards().without("goal-anchor"))
    assert notices(await events_of(agent, "poke"), "GoalAnchor") == []


async def test_a_successful_change_asks_whether_the_goal_is_reached(workspace: Path) -> None:
    replies = [
        reply("", call("write_file", "w1", path="out.txt", content="hi")),
        reply("", call("read_file", "r1", path="out.txt")),  # no change: not asked
        reply("", call("write_file", "w2", path="../outside.txt", content="no")),  # refused
        reply("", call("run_command", "c1", command="echo no > other.txt; exit 3")),  # failed
        reply("", call("edit_file", "e1", path="out.txt", old="hi", new="ho")),
        "FINAL_ANSWER: done",
    ]
    goal = "Create out.txt containing ho"
    events = await events_of(agent_for(replies, workspace, approval="allow"), goal)
    asked = notices(events, "DoneCheck")
    assert [n.text for n in asked] == [
        f"That change succeeded. Is the goal reached now? The goal: {goal}\n"
        "If it is, call final_answer with your answer now; if not, take the next step (do "
        "not redo this one)."
    ] * 2
    off = agent_for(replies, workspace, guards=Guards().without("done-check"))
    assert notices(await events_of(off, goal), "DoneCheck") == []


async def test_the_done_check_repeats_what_a_change_s_result_warns_of(workspace: Path) -> None:
    # Seen on the default model: its fix doubled print('hi'), the result said so, and the
    # done-check's "That change succeeded" drew "fixed" at once.
    (workspace / "greet.py").write_text("def greet()\n    print('hi')\n\ngreet()\n")
    (workspace / "old.log").write_text("x\n")
    replies = [
        reply(
            "",
            call(
                "edit_file",
                "e1",
                path="greet.py",
                old="def greet()",
                new="def greet():\n    print('hi')",
            ),
        ),
        reply("", call("write_file", "w1", path="old.log", content="")),
        reply("", call("write_file", "w2", path="new.txt", content="fine")),
        "FINAL_ANSWER: done",
    ]
    goal = "Fix greet.py, empty old.log, write new.txt"
    unread = Guards().without("read-first")  # the script changes files it did not read
    events = await events_of(agent_for(replies, workspace, approval="allow", guards=unread), goal)
    asked = [n.text.split(". Is the goal")[0] for n in notices(events, "DoneCheck")]
    assert asked == [
        "That change was made, but its result warns: lines 2 and 3 are now the same line: new "
        "repeats a line next to old; if it should be there once, delete one",
        "That change was made, but its result warns: old.log is now empty (it held 2 bytes); it "
        "still exists",
        "That change succeeded",
    ]


async def test_a_repeated_successful_write_is_not_run_again_until_its_path_changes(
    workspace: Path,
) -> None:
    write = {"path": "out.txt", "content": "hi"}
    replies = [
        reply("", call("write_file", "w1", **write)),
        reply("", call("write_file", "w2", **write)),
        reply("", call("edit_file", "e1", path="out.txt", old="hi", new="ho")),
        reply("", call("write_file", "w3", **write)),
        "FINAL_ANSWER: done",
    ]
    result = await agent_for(replies, workspace, guards=NO_BLOCK).run(
        "Create out.txt containing hi"
    )
    results = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results[0].startswith("Wrote")
    assert results[1].startswith("Already done: you made this exact call before and it succeeded")
    assert not results[3].startswith("Already done")  # the edit touched the path: run again
    assert (workspace / "out.txt").read_text() == "hi"
    off = agent_for(
        [*replies[:2], "FINAL_ANSWER: done"],
        workspace,
        guards=Guards(repeat_cache=False, repeat_block=False),
    )
    result = await off.run("Create out.txt containing hi")
    results = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results[1].startswith("Wrote")


# schema echo


async def test_an_argument_that_copies_the_schema_is_not_run(workspace: Path) -> None:
    echo = "The number, name or text the user asked for, or what you changed and where."
    replies = [
        reply("", call("final_answer", "f1", answer=echo)),
        reply("", call("write_file", "w1", path="file_path", content="hi")),
        reply("", call("write_file", "w2", path="out.txt", content="hi")),
        reply("", call("final_answer", "f2", answer="Wrote out.txt.")),
    ]
    result = await agent_for(replies, workspace).run("Create out.txt containing hi")
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results[0].is_error
    assert results[0].content.startswith(
        f"Not run: {echo!r} is what the schema says of the argument `answer`"
    )
    assert results[1].is_error
    assert "the argument `path`" in results[1].content
    assert not (workspace / "file_path").exists()
    assert (workspace / "out.txt").read_text() == "hi"
    assert (result.stop_reason, result.final_answer) == (StopReason.END_TURN, "Wrote out.txt.")


async def test_a_value_the_goal_asks_for_is_no_echo_and_the_guard_switches_off(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("a pattern here\n")
    replies = [reply("", call("grep", "g1", pattern="pattern")), "FINAL_ANSWER: a.txt"]
    result = await agent_for(replies, workspace).run("Which file mentions the word pattern?")
    [found] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert not found.is_error
    assert "a pattern here" in found.content
    replies = [reply("", call("final_answer", "f1", answer="The final answer."))]
    off = agent_for(replies, workspace, guards=Guards(schema_echo=False))
    result = await off.run("Say something")
    assert result.final_answer == "The final answer."


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


# 7. repetition in a reply's text

REPEATING = (
    "I will read the file. " * 5 + "\n" + "Checking the config now.\n" * 30 + "Then the fix."
)
COLLAPSED = (
    "I will read the file. [… repeated 5 times] \n"
    "Checking the config now. [… repeated 30 times]\nThen the fix."
)


async def test_repeated_sentences_and_lines_are_collapsed_in_the_history_not_in_the_log(
    workspace: Path,
) -> None:
    requests: list[list[Message]] = []
    content = "same line\n" * 5  # a call's arguments are never touched
    script = [
        reply(REPEATING, call("write_file", "w", path="a.txt", content=content)),
        "FINAL_ANSWER: done",
    ]

    def model(messages: list[Message], tools: object) -> AssistantMessage | str:
        requests.append(messages)
        return script[len(requests) - 1]

    agent = Agent(model=FunctionModel(model), workspace=workspace)
    events = await events_of(agent, "go on")
    [raw, _] = [e.message for e in events if isinstance(e, ModelResponded)]
    assert raw.text == REPEATING  # the log keeps what the model said
    sent = [m for m in requests[1] if isinstance(m, AssistantMessage)]
    assert sent == [reply(COLLAPSED, call("write_file", "w", path="a.txt", content=content))]
    assert (workspace / "a.txt").read_text() == content
    state = RunState.fold(events)  # type: ignore[arg-type]
    assert state.messages[2] == sent[0]  # a replay folds the same history


async def test_a_final_answer_given_as_text_is_collapsed_too(workspace: Path) -> None:
    result = await agent_for([REPEATING], workspace).run("go on")
    assert result.final_answer == COLLAPSED


async def test_text_that_merely_looks_alike_is_left_as_it_is(workspace: Path) -> None:
    text = (
        "Plan:\n- read a.py\n- read b.py\n- read c.py\n"
        "Steps done: I read the file. I read the file. Then I wrote.\n"  # twice is not a run
        "```python\nx = compute(1)\nx = compute(1)\nx = compute(1)\n```\n"  # code in a fence
        "| a | b |\n|---|---|\n| 1 | 1 |\n| 1 | 1 |\n| 1 | 1 |\n"  # no letters
        "}\n}\n}\nok ok ok ok"  # too short
    )
    result = await agent_for([text], workspace).run("plan")
    assert result.final_answer == text
    for item in range(12):  # lines alike but for a number
        text = "\n".join(f"- item {i}: read file_{i}.py and check x" for i in range(item, 40))
        assert collapse_repeats(text) is text


def test_phrases_repeated_back_to_back_are_collapsed() -> None:
    assert collapse_repeats("let me check the file " * 4 + "now") == (
        "let me check the file [… repeated 4 times] now"
    )
    assert collapse_repeats("Okay. " + "I think I should read it. " * 3 + "I will re") == (
        "Okay. I think I should read it. [… repeated 3 times] I will re"
    )
    assert collapse_repeats("Thinking...\n" * 40) == "Thinking... [… repeated 40 times]\n"
    two = "\n".join(["Step one is done.", "Now step two."] * 3)
    assert collapse_repeats(two) == "Step one is done.\nNow step two. [… repeated 3 times]"
    action = '{"name": "write_file", "arguments": {"content": "' + "Same text here. " * 4 + '"}}'
    assert collapse_repeats(action) is action  # maybe a JSON action: never touched


def test_long_texts_take_little_time() -> None:
    sentence = "I will read the file and then I will fix the bug in it. "
    texts = [
        sentence * 400,  # 22 KB, one run
        "".join(f"Line {i}: " + sentence for i in range(350)),  # alike, no run
        "0 " * 10_000,
        ("0 " * 3000 + "x ") * 3,
        "ab" * 10_000,
        " ".join(["a", "b", "the", "file."][i * 7 % 4] for i in range(5000)),
    ]
    for text in texts:
        began = time.perf_counter()
        collapse_repeats(text)
        assert time.perf_counter() - began < 0.2, text[:40]
    assert collapse_repeats(texts[0]) == sentence + "[… repeated 400 times] "


async def test_the_repetition_guard_can_be_switched_off(workspace: Path) -> None:
    agent = agent_for([REPEATING], workspace, guards=Guards(repetition=False))
    result = await agent.run("go on")
    assert result.final_answer == REPEATING
    assert Guards().without("repetition") == Guards(repetition=False)


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


def test_cli_and_config_switch_the_repetition_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "say.json"
    path.write_text(json.dumps([REPEATING]))
    store = str(tmp_path / "store")

    def answer(*flags: str) -> str | None:
        command = ["run", "say", "-m", f"script:{path}", "-w", str(tmp_path), "--store", store]
        done = CliRunner().invoke(app, [*command, "--json", *flags])
        assert done.exit_code == 0, done.output
        finished = EVENT.validate_json(done.output.splitlines()[-1])
        assert isinstance(finished, RunFinished)
        return finished.final_answer

    assert answer() == COLLAPSED
    assert answer("--no-guard", "repetition") == REPEATING
    config = tmp_path / "config.toml"
    config.write_text("[guards]\nrepetition = false\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    assert answer() == REPEATING
    assert answer("--guard", "repetition") == COLLAPSED


async def test_strict_json_replies_are_left_to_strict_actions(workspace: Path) -> None:
    model = ScriptedModel(['{"name": "poke", "arguments": {}}', "FINAL_ANSWER: ok"])
    model.actions = "json"  # type: ignore[attr-defined]
    agent = Agent(model=model, workspace=workspace, tools=[poke])
    events = await events_of(agent, "poke")
    assert [e.source for e in events if isinstance(e, ResponseRejected)] == []


async def test_a_loop_warning_survives_a_resume(workspace: Path) -> None:
    log = MemoryLog()
    replies = [reply("", call("poke", f"p{i}")) for i in range(8)]
    agent = agent_for(replies, workspace, tools=[poke], log=log, budgets=Budgets(max_steps=4))
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


def test_cli_resume_keeps_the_run_s_guards_unless_the_flags_change_them(tmp_path: Path) -> None:
    for flags, code in (([], 0), (["--guard", "loop"], 11)):
        where = tmp_path / f"exit{code}"
        where.mkdir()
        done = _reins_run(where, "--max-steps", "4", "--no-guard", "loop")
        assert done.exit_code == 3, done.output
        store = str(where / "store")
        resumed = CliRunner().invoke(app, ["resume", "last", *flags, "--json", "--store", store])
        assert resumed.exit_code == code, resumed.output  # 11: the loop guard is back
        first = EVENT.validate_json(resumed.output.splitlines()[0])
        assert isinstance(first, RunResumed)
        assert first.guards == (Guards() if flags else None)  # None: the run's, unchanged


# the guards in the run's log


async def test_a_resume_keeps_the_guards_the_run_was_started_with(workspace: Path) -> None:
    log = MemoryLog()
    replies = [reply("", call("poke", f"p{i}")) for i in range(6)] + ["FINAL_ANSWER: ok"]
    agent = agent_for(replies, workspace, tools=[poke], log=log, guards=Guards(loop=False))
    agent.budgets = Budgets(max_steps=3)
    first = await agent.run("poke")
    assert first.stop_reason is StopReason.MAX_STEPS
    started = (await log.events(first.run_id))[0]
    assert isinstance(started, RunStarted)
    assert started.config.guards == Guards(loop=False)
    # An agent with the default guards (the loop guard on) resumes it: the loop stays unwarned.
    resumed = agent_for(replies, workspace, tools=[poke], log=log)
    events = [e async for e in resumed.resume_iter(first.run_id, max_steps=10)]
    assert isinstance(events[0], RunResumed)
    assert events[0].guards is None
    assert notices(events, "LoopGuard") == []
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.stop_reason, finished.final_answer) == (StopReason.END_TURN, "ok")


async def test_a_resume_may_change_the_guards_and_its_event_says_so(workspace: Path) -> None:
    log = MemoryLog()
    replies = [reply("", call("poke", f"p{i}")) for i in range(8)] + ["FINAL_ANSWER: ok"]
    agent = agent_for(replies, workspace, tools=[poke], log=log, guards=Guards(loop=False))
    agent.budgets = Budgets(max_steps=2)
    first = await agent.run("poke")
    events = [e async for e in agent.resume_iter(first.run_id, max_steps=10, guards=Guards())]
    assert isinstance(events[0], RunResumed)
    assert events[0].guards == Guards()
    assert len(notices(events, "LoopGuard")) == 1
    assert events[-1] == RunFinished.model_validate(
        {**events[-1].model_dump(), "stop_reason": StopReason.STALLED}
    )
    state = await agent.state(first.run_id)
    assert state.config.guards == Guards()


async def test_a_log_older_than_the_guards_folds_and_resumes_with_the_agent_s(
    workspace: Path,
) -> None:
    log = MemoryLog()
    text = " ".join(["I will poke it now."] * 4)
    replies = [reply(text, call("poke", f"p{i}")) for i in range(6)] + ["FINAL_ANSWER: ok"]
    first = await agent_for(
        replies, workspace, tools=[poke], log=log, budgets=Budgets(max_steps=3)
    ).run("poke")
    old = MemoryLog()  # the same run as a log written before the guards were recorded
    for event in await log.events(first.run_id):
        data = json.loads(EVENT.dump_json(event))
        if isinstance(event, RunStarted):
            del data["config"]["guards"]
        await old.append(EVENT.validate_json(json.dumps(data)))
    state = RunState.fold(await old.events(first.run_id))
    assert state.config.guards is None
    said = [m.text for m in state.messages if isinstance(m, AssistantMessage)]
    assert said == [text] * 3  # then, no reply's text was collapsed: a replay shows it so
    resumed = agent_for(replies, workspace, tools=[poke], log=old, guards=Guards(loop=False))
    events = [e async for e in resumed.resume_iter(first.run_id, max_steps=10)]
    assert isinstance(events[0], RunResumed)
    assert events[0].guards == Guards(loop=False)  # the resuming agent's, recorded
    assert notices(events, "LoopGuard") == []
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason is StopReason.END_TURN
    state = await resumed.state(first.run_id)
    said = [m.text for m in state.messages if isinstance(m, AssistantMessage)]
    assert said == [text] * 3 + ["I will poke it now. [… repeated 4 times]"] * 3 + [
        "FINAL_ANSWER: ok"
    ]


# the guard settings on the command line


def test_cli_guard_settings_win_over_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[guards]\nloop_threshold = 6\ngoal_anchor = 0\n")
    monkeypatch.setenv("REINS_CONFIG", str(config))
    done = _reins_run(tmp_path)
    assert done.exit_code == 0, done.output  # 5 calls in a row: under 6
    events = [EVENT.validate_json(line) for line in done.output.splitlines()]
    assert isinstance(events[0], RunStarted)
    assert events[0].config.guards == Guards(loop_threshold=6, goal_anchor=0)
    assert notices(events, "GoalAnchor") == []
    done = _reins_run(tmp_path, "--loop-threshold", "4", "--goal-anchor", "2")
    assert done.exit_code == 11, done.output
    events = [EVENT.validate_json(line) for line in done.output.splitlines()]
    assert isinstance(events[0], RunStarted)
    assert events[0].config.guards == Guards(loop_threshold=4, goal_anchor=2)
    assert len(notices(events, "GoalAnchor")) == 2  # before rounds 3 and 5
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (
        finished.detail
        == "no progress after a warning: the same call (list_files) 5 times in a row"
    )


def test_cli_stall_threshold(tmp_path: Path) -> None:
    flags = ["--no-guard", "repeat-cache", "--loop-threshold", "10", "--stall-threshold", "2"]
    done = _reins_run(tmp_path, *flags)
    assert done.exit_code == 11, done.output  # the same listing: nothing new after the first
    assert "no progress after a warning: 3 rounds with no change and no new result" in done.output


def test_cli_shows_the_guards_that_differ_from_the_defaults(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    command = ["run", "list", "-m", _looping_script(tmp_path), "-w", str(tmp_path)]
    flags = ["--no-guard", "loop", "--guard", "one-call", "--goal-anchor", "3"]
    done = CliRunner().invoke(app, [*command, "--store", store, *flags])
    assert done.exit_code == 0, done.output
    assert "guards: loop off, goal_anchor 3, one-call on\n" in done.output
    replayed = CliRunner().invoke(app, ["replay", "last", "--store", store])
    assert "guards: loop off, goal_anchor 3, one-call on\n" in replayed.output
    done = CliRunner().invoke(app, [*command, "--store", store, "--no-guard", "repetition"])
    assert "guards: repetition off\n" in done.output
    done = CliRunner().invoke(app, [*command, "--store", store])
    assert "guards:" not in done.output  # the defaults: not said


@pytest.mark.parametrize(
    ("flag", "value", "least"),
    [
        ("--loop-threshold", "1", 2),
        ("--loop-threshold", "three", 2),
        ("--stall-threshold", "0", 1),
        ("--goal-anchor", "-1", 0),
        ("--goal-anchor", "2.5", 0),
    ],
)
def test_cli_bad_guard_settings_are_one_line_and_exit_2(
    tmp_path: Path, flag: str, value: str, least: int
) -> None:
    done = _reins_run(tmp_path, flag, value)
    assert done.exit_code == 2, done.output
    assert done.output == f"error: {flag} {value!r}: say a whole number, {least} or more\n"


def test_cli_resume_takes_guard_settings(tmp_path: Path) -> None:
    done = _reins_run(tmp_path, "--max-steps", "4", "--no-guard", "loop")
    assert done.exit_code == 3, done.output
    store = str(tmp_path / "store")
    flags = ["--guard", "loop", "--loop-threshold", "6"]
    resumed = CliRunner().invoke(app, ["resume", "last", *flags, "--json", "--store", store])
    assert resumed.exit_code == 0, resumed.output  # the loop guard is on, at 6: not reached
    first = EVENT.validate_json(resumed.output.splitlines()[0])
    assert isinstance(first, RunResumed)
    assert first.guards == Guards(loop_threshold=6)
    bad = CliRunner().invoke(app, ["resume", "last", "--goal-anchor", "x", "--store", store])
    assert (bad.exit_code, bad.output) == (
        2,
        "error: --goal-anchor 'x': say a whole number, 0 or more\n",
    )


async def test_a_read_only_tool_that_may_answer_differently_is_run_again(
    workspace: Path,
) -> None:
    global reads
    reads = 0
    clock = dataclasses.replace(lookup, cached=False)  # as an MCP server's tools are
    replies = [
        reply("", call("lookup", "a", key="k")),
        reply("", call("lookup", "b", key="k")),
        "FINAL_ANSWER: value of k",
    ]
    result = await agent_for(replies, workspace, tools=[clock]).run("what is k")
    assert reads == 2
    assert not any(
        m.content.startswith("Cached") for m in result.messages if isinstance(m, ToolResultMessage)
    )
