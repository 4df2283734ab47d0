"""A change half done: a final answer after an edit that replaced a name still found in the
workspace is sent back once, with the places and a short diff, so that the model can finish the
rename; a rename done everywhere, a value changed, an answer given again, or a run at its cap
on rejected answers is let through."""

from __future__ import annotations

from pathlib import Path

from reins import Agent, AssistantMessage, Checks, Guards, RunResult, StopReason, UserMessage
from reins.events import AnswerRejected
from reins.testing import ScriptedModel

from .helpers import call, reply

GOAL = "Rename the function old_total to new_total everywhere"


def project(workspace: Path) -> None:
    (workspace / "calc.py").write_text("def old_total(xs):\n    return sum(xs)\n")
    (workspace / "main.py").write_text("from calc import old_total\n\nprint(old_total([1, 2]))\n")
    (workspace / "notes.md").write_text("Nothing about it here.\n")


RENAME_DEF = call("edit_file", "e1", path="calc.py", old="def old_total(", new="def new_total(")
RENAME_USES = call(
    "edit_file", "e2", path="main.py", old="old_total", new="new_total", replace_all=True
)


async def run(workspace: Path, replies: list[AssistantMessage | str], **kw: object) -> RunResult:
    kw.setdefault("guards", Guards().without("read-first"))  # the scripts edit unread files
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, **kw)  # type: ignore[arg-type]
    return await agent.run(GOAL)


def reviews(result: RunResult) -> list[str]:
    return [
        m.content
        for m in result.messages
        if isinstance(m, UserMessage) and m.content.startswith("Before your answer stands")
    ]


async def test_a_rename_left_half_done_is_shown_before_the_answer_stands(workspace: Path) -> None:
    project(workspace)
    replies: list[AssistantMessage | str] = [
        reply("", RENAME_DEF),
        "FINAL_ANSWER: renamed",
        reply("", RENAME_USES),
        "FINAL_ANSWER: renamed everywhere",
    ]
    result = await run(workspace, replies)
    assert (result.stop_reason, result.final_answer) == (
        StopReason.END_TURN,
        "renamed everywhere",
    )
    assert reviews(result) == [
        "Before your answer stands: you replaced `old_total`, and it still occurs here:\n"
        "main.py:1: from calc import old_total\n"
        "main.py:3: print(old_total([1, 2]))\n"
        "What you changed:\n"
        "calc.py:\n"
        "@@ -1 +1 @@\n"
        "-def old_total(\n"
        "+def new_total(\n"
        "If those places should change too (a rename changes every use), change them now "
        "(edit_file with path `main.py`, old `old_total`, new `new_total`, replace_all true, "
        "replaces it throughout that file); if they should stay as they are, give your final "
        "answer again."
    ]
    assert "old_total" not in (workspace / "main.py").read_text()


async def test_a_rename_done_everywhere_is_answered_at_once(workspace: Path) -> None:
    project(workspace)
    replies: list[AssistantMessage | str] = [
        reply("", RENAME_DEF, RENAME_USES),
        "FINAL_ANSWER: renamed",
    ]
    result = await run(workspace, replies)
    assert (result.final_answer, reviews(result)) == ("renamed", [])


async def test_the_answer_given_again_stands_and_a_later_change_is_checked_again(
    workspace: Path,
) -> None:
    project(workspace)
    (workspace / "report.py").write_text("from calc import old_total\n")
    replies: list[AssistantMessage | str] = [
        reply("", RENAME_DEF),
        "FINAL_ANSWER: renamed",  # shown: main.py and report.py
        reply("", RENAME_USES),
        "FINAL_ANSWER: renamed",  # a change since: shown again, report.py
        "FINAL_ANSWER: report.py keeps the old name on purpose",  # no change since: stands
    ]
    result = await run(workspace, replies)
    assert result.final_answer == "report.py keeps the old name on purpose"
    shown = reviews(result)
    assert len(shown) == 2
    assert "main.py:1:" in shown[0]
    assert "report.py:1: from calc import old_total" in shown[0]
    assert "path `main.py`, old `old_total`, new `new_total`" in shown[0]
    assert "throughout that file (then the same for `report.py`));" in shown[0]
    assert "main.py" not in shown[1].split("What you changed:")[0]
    assert "report.py:1:" in shown[1]
    assert "main.py (every occurrence):\n" in shown[1]  # the diff of each change


async def test_the_cap_on_rejected_answers_is_respected(workspace: Path) -> None:
    project(workspace)
    (workspace / "report.py").write_text("from calc import old_total\n")
    replies: list[AssistantMessage | str] = [
        reply("", RENAME_DEF),
        "FINAL_ANSWER: renamed",
        reply("", RENAME_USES),
        "FINAL_ANSWER: renamed",  # report.py is left, but the cap of 1 is reached
    ]
    result = await run(workspace, replies, checks=Checks(max_rejections=1))
    assert (result.stop_reason, result.final_answer) == (StopReason.END_TURN, "renamed")
    assert len(reviews(result)) == 1


async def test_what_is_ignored_big_or_binary_is_not_searched(workspace: Path) -> None:
    project(workspace)
    (workspace / "main.py").write_text("print('no use here')\n")
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "calc.py").write_text("def old_total(xs): ...\n")
    (workspace / "big.txt").write_text("old_total\n" + "x" * 300_000)
    (workspace / "blob.bin").write_bytes(b"\0old_total\0")
    replies: list[AssistantMessage | str] = [reply("", RENAME_DEF), "FINAL_ANSWER: renamed"]
    result = await run(workspace, replies)
    assert (result.final_answer, reviews(result)) == ("renamed", [])


async def test_a_value_changed_or_a_text_deleted_is_no_rename(workspace: Path) -> None:
    (workspace / "config.json").write_text('{"debug": true, "name": "demo"}\n')
    (workspace / "other.json").write_text('{"debug": true}\n')
    (workspace / "calc.py").write_text("def old_total(xs):\n    return sum(xs)\n# old_total\n")
    replies: list[AssistantMessage | str] = [
        reply("", call("edit_file", "e1", path="config.json", old="true", new="false")),
        reply("", call("edit_file", "e2", path="calc.py", old="# old_total\n", new="")),
        "FINAL_ANSWER: done",
    ]
    result = await run(workspace, replies)
    assert (result.final_answer, reviews(result)) == ("done", [])


async def test_the_review_is_a_guard_of_its_own(workspace: Path) -> None:
    project(workspace)
    replies: list[AssistantMessage | str] = [reply("", RENAME_DEF), "FINAL_ANSWER: renamed"]
    read = reply("", call("read_file", "r1", path="calc.py"))
    agent = Agent(model=ScriptedModel([read, *replies * 2]), workspace=workspace)
    events = [e async for e in agent.iter(GOAL)]
    assert [e.source for e in events if isinstance(e, AnswerRejected)] == ["ChangeReview"]
    project(workspace)
    off = await run(workspace, replies, guards=Guards().without("change-review", "read-first"))
    assert (off.final_answer, reviews(off)) == ("renamed", [])


async def test_what_the_goal_asks_to_replace_is_looked_for_too(workspace: Path) -> None:
    # Seen on the default model: one of three files changed, "replaced in all the files". A
    # URL is no name (`replaced_names` finds none in it): the goal says what to replace.
    (workspace / "docs").mkdir()
    (workspace / "docs/index.md").write_text("[guide](http://docs.old-site.org/guide)\n")
    (workspace / "docs/faq.md").write_text("See http://docs.old-site.org/faq.\n")
    # outside the folder the goal names: not shown (seen: the model went to change it)
    (workspace / "README.md").write_text("Old docs: http://docs.old-site.org (archived).\n")
    edit = call(
        "edit_file",
        "e1",
        path="docs/index.md",
        old="http://docs.old-site.org/guide",
        new="https://docs.example.com/guide",
    )
    agent = Agent(model=ScriptedModel([reply("", edit), "done", "done"]), workspace=workspace)
    result = await agent.run(
        "Our docs moved: replace http://docs.old-site.org with https://docs.example.com in "
        "every file under docs/"
    )
    [review] = reviews(result)
    assert review.startswith(
        "Before your answer stands: you replaced `http://docs.old-site.org`, and it still "
        "occurs here:\ndocs/faq.md:1: See http://docs.old-site.org/faq.\nWhat you changed:"
    )
    assert "README.md" not in review
