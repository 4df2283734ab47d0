"""`Agent`'s settings groups besides `Budgets`: `Checks`, `Ask` and `Subagents`, each given whole
or as its main value alone; the keywords they replace still work, warned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import reins
from reins import Agent, Ask, Checks, QuestionRequest, RunState, StopReason, Subagents, UsageError
from reins.agent._agent import ReflectiveAgent  # deprecated as reins.ReflectiveAgent
from reins.events import AnswerRejected, QuestionAnswered
from reins.policies import CheckCommands
from reins.testing import ScriptedModel

from .helpers import call, reply


def agent(workspace: Path, replies: list[object] | None = None, **kw: object) -> Agent:
    model = ScriptedModel(replies or ["done"])  # type: ignore[arg-type]
    return Agent(model=model, tools=[], workspace=workspace, **kw)  # type: ignore[arg-type]


def never(state: RunState, answer: str) -> str:
    return "not yet"


def test_each_group_is_given_whole_or_as_its_main_value(workspace: Path) -> None:
    def answer(request: QuestionRequest) -> str:
        return "yes"

    child = agent(workspace)
    short = agent(workspace, checks=["pytest -q"], ask=answer, subagents={"scribe": child})
    whole = agent(
        workspace,
        checks=Checks(commands=("pytest -q",)),
        ask=Ask(answer=answer),
        subagents=Subagents(agents={"scribe": child}),
    )
    for made in (short, whole):
        assert made.checks == Checks(commands=["pytest -q"])
        assert made.ask == Ask(answer=answer, timeout=600.0)
        assert made.subagents == Subagents(agents={"scribe": child}, max_steps=10, timeout=300.0)
    assert agent(workspace, subagents=True).subagents == Subagents()
    off = agent(workspace)
    assert (off.checks, off.ask, off.subagents) == (Checks(), None, False)
    assert "spawn_agent" not in [t.name for t in off._tools()]
    assert "spawn_agent" in [t.name for t in short._tools()]


async def test_the_old_keywords_still_work_with_a_deprecation_warning(workspace: Path) -> None:
    with pytest.warns(
        DeprecationWarning,
        match=r"Agent\(stop_hooks, stop_max_rejections=\.\.\.\) is deprecated: give "
        r"checks=Checks\(stop_hooks=\.\.\., max_rejections=\.\.\.\) \(reins\.Checks\)",
    ):
        old = agent(
            workspace,
            ["a1", "a2", "a3"],
            checks=["true"],
            stop_hooks=[never],
            stop_max_rejections=1,
        )
    assert old.checks == Checks(commands=["true"], stop_hooks=[never], max_rejections=1)
    result = await old.run("go")  # the hook rejects once, and the second rejection ends it
    assert result.stop_reason is StopReason.MISSING_EVIDENCE
    events = await old.log.events(result.run_id)
    assert [e.source for e in events if isinstance(e, AnswerRejected)] == ["StopHooks"]

    with pytest.warns(DeprecationWarning, match=r"give subagents=Subagents\(max_steps=\.\.\., "):
        spawning = agent(workspace, subagents=True, subagent_steps=2, subagent_timeout=9.0)
    assert spawning.subagents == Subagents(max_steps=2, timeout=9.0)
    with pytest.warns(DeprecationWarning, match=r"give ask=Ask\(timeout=\.\.\.\)"):
        asking = agent(workspace, ask="pause", ask_timeout=5.0)
    assert asking.ask == Ask(answer="pause", timeout=5.0)
    with pytest.warns(DeprecationWarning, match=r"ReflectiveAgent\(stop_max_rejections=\.\.\.\)"):
        reflective = ReflectiveAgent(model=ScriptedModel(["done"]), stop_max_rejections=0)  # type: ignore[call-arg]
    assert (reflective.reflect, reflective.checks) == (True, Checks(max_rejections=0))
    # A group that is off keeps none of its settings (as the keyword did nothing then).
    with pytest.warns(DeprecationWarning, match="give ask=Ask"):
        assert agent(workspace, ask_timeout=5.0).ask is None


async def test_an_ask_timeout_given_in_the_group_is_kept(workspace: Path) -> None:
    import asyncio

    async def slow(request: QuestionRequest) -> str:
        await asyncio.sleep(5)
        return "too late"

    asked = reply("", call("ask_user", "q1", question="Which file?", default="a.md"))
    made = agent(workspace, [asked, "done"], ask=Ask(answer=slow, timeout=0.2))
    events = [e async for e in made.iter("go")]
    answered = next(e for e in events if isinstance(e, QuestionAnswered))
    assert (answered.answer, answered.by) == (None, "timeout")


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        (lambda: {"checks": "pytest -q"}, r"checks='pytest -q': give a list, as in checks=\[...\]"),
        (lambda: {"checks": Checks(commands=["  "])}, "a check is an empty command"),
        (lambda: {"checks": Checks(max_rejections=-1)}, "max_rejections=-1: it must be 0 or more"),
        (lambda: {"checks": Checks(stop_hooks=["  "])}, "a stop hook is an empty command"),
        (lambda: {"ask": "yes"}, r"ask='yes': give a function or 'pause'"),
        (lambda: {"ask": Ask(answer="pause", timeout=0)}, "ask.timeout=0: give a number"),
        (lambda: {"subagents": "scribe"}, "subagents='scribe': give a dict of named agents"),
        (lambda: {"subagents": Subagents(max_steps=0)}, "max_steps=0: it must be 1 or more"),
        (lambda: {"subagents": Subagents(timeout=None)}, "timeout=None: give a number"),  # type: ignore[arg-type]
    ],
)
def test_a_group_that_cannot_work_is_refused_when_it_is_made(
    workspace: Path, settings: Callable[[], dict[str, object]], error: str
) -> None:
    with pytest.raises(UsageError, match=error):
        agent(workspace, **settings())


def test_the_check_policy_has_a_name_of_its_own_and_logs_as_before() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"reins\.policies\.Checks is now reins\.policies\.CheckCommands"
    ):
        assert reins.policies.Checks is CheckCommands  # type: ignore[attr-defined]
    assert CheckCommands(["true"]).name == "Checks"  # the source `answer_rejected` has always named
