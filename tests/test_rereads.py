"""Confirming by rereading: a file the run read whole, read again with another range (or whole
again), is answered from what was read with a nudge to answer, while the file holds exactly
that; a file changed since, by a tool or from outside, is read for real."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Guards,
    MemoryLog,
    Message,
    StopReason,
    ToolResultMessage,
    ToolSpec,
)
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply

TEXT = "".join(f"line {i}: value {i * 7}\n" for i in range(1, 41))
NEAR = "Cached: you read all of notes.txt before (40 lines) and it has not changed since"


def note(last: int) -> str:
    return (
        "[40 lines in all]"
        if last == 40
        else f"[40 lines in all; read on with start_line={last + 1}]"
    )


def results(messages: Sequence[Message]) -> dict[str, ToolResultMessage]:
    return {m.call_id: m for m in messages if isinstance(m, ToolResultMessage)}


async def run(workspace: Path, replies: list[AssistantMessage | str], **kw: object) -> dict:  # type: ignore[type-arg]
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, **kw)  # type: ignore[arg-type]
    result = await agent.run("what is the value on line 12 of notes.txt?")
    return results(result.messages)


async def real_reads(workspace: Path, *ranges: dict[str, int]) -> list[str]:
    """What read_file gives for these ranges, with the repeat cache off."""
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", f"r{k}", path="notes.txt", **r)) for k, r in enumerate(ranges)
    ]
    found = await run(
        workspace, [*replies, "FINAL_ANSWER: 84"], guards=Guards(repeat_cache=False, rereads=False)
    )
    return [found[f"r{k}"].content for k in range(len(ranges))]


async def test_a_range_of_a_file_read_whole_is_answered_from_what_was_read(
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text(TEXT)
    ranges = [{"start_line": 12, "end_line": 12}, {"start_line": 38}, {"start_line": 1}]
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "whole", path="notes.txt")),
        *(
            reply("", call("read_file", f"n{k}", path="./notes.txt", **r))
            for k, r in enumerate(ranges)
        ),
        reply("", call("read_file", "past", path="notes.txt", start_line=41)),
        "FINAL_ANSWER: 84",
    ]
    found = await run(workspace, replies)
    assert found["whole"].content == TEXT + "\n[40 lines in all]"
    assert found["past"].content == "[notes.txt has 40 lines; start_line=41 is past its end]"
    real = await real_reads(workspace, *ranges)
    assert real[0].startswith("line 12: value 84\n\n[")
    for k, expected in enumerate(real):
        answer = found[f"n{k}"]
        assert not answer.is_error
        assert answer.content.startswith(NEAR)
        assert "once the goal is reached give your final answer" in answer.content
        first, last = (ranges[k]["start_line"], ranges[k].get("end_line", 40))
        page = expected.rsplit("\n[", 1)[0]  # the real read's lines (its note may say less)
        assert answer.content.endswith(f"Lines {first}-{last} of it:\n{page}\n{note(last)}")


async def test_a_file_changed_by_a_tool_since_is_read_again(workspace: Path) -> None:
    (workspace / "notes.txt").write_text(TEXT)
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "whole", path="notes.txt")),
        reply("", call("edit_file", "e", path="notes.txt", old="value 84", new="value 85")),
        reply("", call("read_file", "again", path="notes.txt", start_line=12, end_line=12)),
        "FINAL_ANSWER: 85",
    ]
    found = await run(workspace, replies)
    assert (
        found["again"].content
        == "line 12: value 85\n\n[more lines follow; read on with start_line=13]"
    )


async def test_a_file_changed_from_outside_is_read_again(workspace: Path) -> None:
    notes = workspace / "notes.txt"
    notes.write_text(TEXT)
    script: list[AssistantMessage | str] = [
        reply("", call("read_file", "whole", path="notes.txt")),
        reply("", call("read_file", "same", path="notes.txt", start_line=12, end_line=12)),
        reply("", call("read_file", "changed", path="notes.txt", start_line=12, end_line=12)),
        reply("", call("read_file", "grown", path="notes.txt", start_line=40)),
        "FINAL_ANSWER: 99",
    ]
    edits: dict[int, Callable[[], object]] = {
        # Before the third read: the same length, another value (no tool saw it change).
        2: lambda: notes.write_text(TEXT.replace("value 84", "value 99")),
        # Before the fourth: a line added.
        3: lambda: notes.write_text(TEXT.replace("value 84", "value 99") + "line 41\n"),
    }
    turn = 0

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        nonlocal turn
        if turn in edits:
            edits[turn]()
        turn += 1
        return script[turn - 1]

    agent = Agent(model=FunctionModel(model), workspace=workspace)
    found = results((await agent.run("what is on line 12?")).messages)
    assert found["same"].content.startswith(NEAR)
    assert (
        found["changed"].content
        == "line 12: value 99\n\n[more lines follow; read on with start_line=13]"
    )
    assert found["grown"].content == "line 40: value 280\nline 41\n\n[41 lines in all]"


async def test_only_a_whole_read_answers_near_repeats(workspace: Path) -> None:
    (workspace / "notes.txt").write_text(TEXT)
    long = workspace / "long.txt"
    long.write_text("".join(f"row {i}\n" for i in range(1, 3001)))  # past one page of 2000 lines
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "part", path="notes.txt", start_line=1, end_line=20)),
        reply("", call("read_file", "other", path="notes.txt", start_line=12, end_line=12)),
        reply("", call("read_file", "paged", path="long.txt")),
        reply("", call("read_file", "page2", path="long.txt", start_line=2001)),
        "FINAL_ANSWER: 84",
    ]
    found = await run(workspace, replies)
    assert not found["other"].content.startswith("Cached")
    assert "read on with start_line=2001" in found["paged"].content
    assert found["page2"].content.startswith("row 2001\n")


async def test_a_near_repeat_after_a_resume_is_answered_too_and_the_guard_switches_off(
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text(TEXT)
    log = MemoryLog()
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "whole", path="notes.txt")),
        reply("", call("read_file", "again", path="notes.txt", start_line=12, end_line=12)),
        "FINAL_ANSWER: 84",
    ]
    agent = Agent(
        model=ScriptedModel(replies), workspace=workspace, log=log, budgets=Budgets(max_steps=1)
    )
    first = await agent.run("what is on line 12?")
    assert first.stop_reason is StopReason.MAX_STEPS
    again = Agent(model=ScriptedModel(replies), workspace=workspace, log=log)
    resumed = await again.resume(first.run_id, max_steps=5)
    assert results(resumed.messages)["again"].content.startswith(NEAR)
    alone = await run(workspace, replies, guards=Guards(repeat_cache=False))
    assert alone["again"].content.startswith(NEAR)  # a guard of its own
    off = await run(workspace, replies, guards=Guards().without("rereads"))
    assert (
        off["again"].content
        == "line 12: value 84\n\n[more lines follow; read on with start_line=13]"
    )
