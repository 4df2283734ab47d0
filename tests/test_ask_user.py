"""ask_user: one question a run about a material choice; answered by a callback, or the run
pauses with the question recorded and a resume answers it; dismissed or timed out, the model
goes on with its default; headless, the tool is not offered."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reins import Agent, Ask, Message, SQLiteLog, StopReason, ToolSpec
from reins.core._events import QuestionAnswered, QuestionAsked
from reins.core._questions import QuestionRequest
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .terminal import run_in_terminal
from .test_cli import reins, script
from .test_mcp import results

ASK = call(
    "ask_user",
    "q1",
    question="report.md exists: overwrite it or write report-2.md?",
    choices=["overwrite", "report-2.md"],
    default="report-2.md",
)


def asking(*then: str) -> ScriptedModel:
    return ScriptedModel([reply("", ASK), *then])


async def test_a_callback_answers_and_both_are_recorded(workspace: Path) -> None:
    asked: list[QuestionRequest] = []

    async def answer(request: QuestionRequest) -> str:
        asked.append(request)
        return "overwrite"

    agent = Agent(model=asking("done"), tools=[], workspace=workspace, ask=answer)
    events = [e async for e in agent.iter("write the report")]
    assert asked[0].question == "report.md exists: overwrite it or write report-2.md?"
    assert asked[0].choices == ("overwrite", "report-2.md")
    assert asked[0].default == "report-2.md"
    assert results(events)["q1"] == ("The user answered: overwrite", False)
    recorded = [e for e in events if isinstance(e, QuestionAsked | QuestionAnswered)]
    assert [e.kind for e in recorded] == ["question_asked", "question_answered"]
    assert recorded[1].answer == "overwrite"  # type: ignore[union-attr]


async def test_one_question_a_run(workspace: Path) -> None:
    second = call("ask_user", "q2", question="and the title?", default="Report")
    agent = Agent(
        model=ScriptedModel([reply("", ASK), reply("", second), "done"]),
        tools=[],
        workspace=workspace,
        ask=lambda request: "overwrite",
    )
    found = results([e async for e in agent.iter("go")])
    assert found["q2"] == (
        "You have asked your one question of this run: go on with your default.",
        True,
    )


async def test_dismissed_or_timed_out_the_model_goes_on_with_its_default(
    workspace: Path,
) -> None:
    agent = Agent(model=asking("done"), tools=[], workspace=workspace, ask=lambda r: None)
    found = results([e async for e in agent.iter("go")])
    assert found["q1"] == (
        "The question was dismissed: go on with your default (report-2.md).",
        True,
    )

    async def slow(request: QuestionRequest) -> str:
        await asyncio.sleep(5)
        return "too late"

    agent = Agent(
        model=asking("done"), tools=[], workspace=workspace, ask=Ask(answer=slow, timeout=0.2)
    )
    events = [e async for e in agent.iter("go")]
    assert results(events)["q1"] == (
        "The question timed out: go on with your default (report-2.md).",
        True,
    )
    answered = next(e for e in events if isinstance(e, QuestionAnswered))
    assert (answered.answer, answered.by) == (None, "timeout")


async def test_paused_the_run_waits_and_a_resume_answers(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    first = Agent(model=asking("done"), tools=[], workspace=workspace, log=sqlite_log, ask="pause")
    paused = await first.run("write the report")
    assert paused.stop_reason is StopReason.WAITING
    assert paused.detail == "awaiting an answer: ask_user (q1)"
    assert [q.call_id for q in paused.questions] == ["q1"]
    # Another agent (another process, say) answers from the log.
    later = Agent(model=asking("done"), tools=[], workspace=workspace, log=sqlite_log, ask="pause")
    with pytest.raises(Exception, match="no open question for call"):
        await later.resume(paused.run_id, answers={"nope": "x"})
    done = await later.resume(paused.run_id, answers={"q1": "overwrite"})
    assert done.stop_reason is StopReason.END_TURN
    told = [m for m in done.messages if m.role == "tool"]
    assert told[0].content == "The user answered: overwrite"  # type: ignore[union-attr]


async def test_headless_there_is_no_ask_user(workspace: Path) -> None:
    offered: list[set[str]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> str:
        offered.append({t.name for t in tools})
        return "done"

    await Agent(model=FunctionModel(model), tools=[], workspace=workspace).run("go")
    await Agent(model=FunctionModel(model), tools=[], workspace=workspace, ask="pause").run("go")
    assert "ask_user" not in offered[0]
    assert "ask_user" in offered[1]


# The command line -------------------------------------------------------------------------

STEPS = [
    {
        "tool_calls": [
            {
                "name": "ask_user",
                "arguments": {
                    "question": "Which format?",
                    "choices": ["markdown", "json"],
                    "default": "markdown",
                },
            }
        ]
    },
    "FINAL_ANSWER: done",
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


def test_the_terminal_puts_the_question_and_takes_a_choice_by_number(project: Path) -> None:
    model = script(project / "s.json", STEPS)
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [b"2\n"], prompt=b"Answer (empty"
    )
    assert code == 0, screen
    assert "The agent asks: Which format?" in screen
    assert "  1. markdown\r\n  2. json" in screen
    assert "The user answered: json" in screen


def test_headless_with_pause_the_run_waits_for_reins_resume_answer(project: Path) -> None:
    config = project / "config" / "reins" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('approval = "pause"\n')
    model = script(project / "s.json", STEPS)
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 10, done.stderr
    assert "awaiting an answer: ask_user" in done.stdout
    assert "? asks: Which format? (markdown / json) (default: markdown)" in done.stdout
    run = done.stdout.split()[1]  # `run ID  session ...`
    assert (  # what it needs, not an approval
        f"answer with `reins resume {run} --answer TEXT`; in a terminal, `reins resume {run}` asks"
        in done.stdout
    )
    assert "--approve" not in done.stdout
    done = reins("resume", "last", "--answer", "json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "The user answered: json" in done.stdout
    again = reins("resume", "last", "--answer", "x", cwd=project)
    assert again.returncode == 2
