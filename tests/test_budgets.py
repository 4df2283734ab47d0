"""Budgets through the public API: token, time and cost caps, the notices, summarize at a cap,
and resume after a cap."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    CapOffer,
    Message,
    ModelResponse,
    ModelSettings,
    RunState,
    StopReason,
    ToolSpec,
    Usage,
    UsageError,
    UserMessage,
    tool,
)
from reins.agent._agent import ReflectiveAgent  # deprecated as reins.ReflectiveAgent
from reins.events import (
    EVENT,
    BudgetExtended,
    ModelRequested,
    Notice,
    RunConfig,
    RunFinished,
    RunResumed,
    RunStarted,
)
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply


@tool
async def noop(i: int = 0) -> str:
    """Do nothing.

    Args:
        i: Which call this is.
    """
    return f"ok {i}"


def busy(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage:
    """Calls noop, each time anew (the loop guard stops a repeated call, and one with no new
    result); asked for the summary at a cap, it summarizes."""
    last = messages[-1]
    if isinstance(last, UserMessage) and last.content.startswith("[CAP REACHED]"):
        return AssistantMessage(text="Partial: called noop, not done.")
    return reply("working", call("noop", f"c{len(messages)}", i=len(messages)))


class Busy(FunctionModel):
    """`busy`, recording what each request offered: the tools' names and the tool choice."""

    def __init__(self, usage: Usage) -> None:
        super().__init__(busy, usage=usage)
        self.offered: list[tuple[list[str], str]] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        self.offered.append(([t.name for t in tools], settings.tool_choice))
        return await super().request(messages, tools, settings)


def busy_agent(workspace: Path, **kw: object) -> Agent:
    usage = Usage(input_tokens=50, output_tokens=50, requests=1)
    model = Busy(usage)
    return Agent(model=model, tools=[noop], workspace=workspace, **kw)  # type: ignore[arg-type]


async def notices_of(agent: Agent, run_id: str) -> list[Notice]:
    """The run's notices, but the goal anchor's (another policy's, every few rounds)."""
    events = await agent.log.events(run_id)
    return [e for e in events if isinstance(e, Notice) and e.source != "GoalAnchor"]


async def test_token_budget_stops_the_run(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(token_budget=250))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.detail == "used 300 of the budget of 250 tokens"
    assert result.steps == 3
    assert result.final_answer is None
    assert not result.partial


async def test_token_budget_not_reached_does_not_stop(workspace: Path) -> None:
    usage = Usage(input_tokens=50, output_tokens=50, requests=1)
    model = ScriptedModel([reply("", call("noop")), "FINAL_ANSWER: done"], usage=usage)
    agent = Agent(
        model=model, tools=[noop], workspace=workspace, budgets=Budgets(token_budget=10_000)
    )
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "done"


async def test_cost_budget_stops_the_run(workspace: Path) -> None:
    # gpt-4o: $2.5 in, $10 out per million tokens: $0.35 a call
    usage = Usage(input_tokens=100_000, output_tokens=10_000, requests=1)
    model = FunctionModel(busy, name="gpt-4o", usage=usage)
    agent = Agent(model=model, tools=[noop], workspace=workspace, budgets=Budgets(cost_budget=1.0))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.COST_BUDGET
    assert result.steps == 3
    assert result.detail == "spent $1.0500 of the budget of $1"


async def test_cost_budget_not_reached_does_not_stop(workspace: Path) -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, requests=1)
    model = ScriptedModel([reply("", call("noop")), "done"], name="gpt-4o", usage=usage)
    agent = Agent(model=model, tools=[noop], workspace=workspace, budgets=Budgets(cost_budget=1.0))
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert 0 < result.cost < 1.0


async def test_time_budget_stops_the_run(workspace: Path) -> None:
    async def slow(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage:
        await asyncio.sleep(0.05)
        return busy(messages, tools)

    agent = Agent(
        model=FunctionModel(slow),
        tools=[noop],
        workspace=workspace,
        budgets=Budgets(time_budget=0.12),
    )
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert 2 <= result.steps <= 4
    assert result.detail.endswith("of the budget of 0.12 seconds")


async def test_time_budget_not_reached_does_not_stop(workspace: Path) -> None:
    model = ScriptedModel([reply("", call("noop")), "done"])
    agent = Agent(model=model, tools=[noop], workspace=workspace, budgets=Budgets(time_budget=600))
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN


async def test_a_budget_set_tells_the_model_what_is_left_each_round(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(token_budget=250))
    result = await agent.run("loop")
    texts = [(n.source, n.text, n.to_model) for n in await notices_of(agent, result.run_id)]
    assert texts == [
        ("BudgetNotices", "[BUDGET] step 1 of 30; 0 of 250 tokens.", True),
        ("BudgetNotices", "[BUDGET] step 2 of 30; 100 of 250 tokens.", True),
        (
            "BudgetNotices",
            "[BUDGET] step 3 of 30; 200 of 250 tokens.\n[WRAP UP] 70 % of the token budget is "
            "used (200 of 250 tokens). Start wrapping up: finish the essential part and "
            "prepare your final answer.",
            True,
        ),
    ]
    # the model saw them
    assert UserMessage(content="[BUDGET] step 2 of 30; 100 of 250 tokens.") in result.messages


async def test_no_budget_no_per_round_notice(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=9))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert await notices_of(agent, result.run_id) == []  # under 10 steps: no checkpoint either


async def test_step_marks_scope_checkpoint_and_wrap_up(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=20))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS
    notices = await notices_of(agent, result.run_id)
    assert [n.mark for n in notices] == ["steps 50% of 20", "steps 70% of 20", "steps 90% of 20"]
    assert notices[0].text.startswith("[SCOPE CHECKPOINT] Half of the step budget is used")
    assert notices[1].text.startswith("[WRAP UP] 70 % of the step budget is used (14 of 20")
    assert notices[2].text.startswith("[WRAP UP] 90 % of the step budget is used (18 of 20")
    state = await agent.state(result.run_id)
    assert state.marks == {"steps 50% of 20", "steps 70% of 20", "steps 90% of 20"}


async def test_budget_notices_switched_off_say_nothing_and_a_resume_keeps_that(
    workspace: Path,
) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=20, token_budget=1500, notices=False))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.TOKEN_BUDGET  # the caps still stop the run
    assert await notices_of(agent, result.run_id) == []
    resumed = await busy_agent(workspace, log=agent.log).resume(result.run_id)  # notices on
    assert resumed.stop_reason is StopReason.MAX_STEPS  # its 20 steps used, silently
    notices = await notices_of(agent, result.run_id)
    assert [n.text.split("]")[0] for n in notices] == ["[CONTINUING AFTER A CAP"]


async def test_a_short_cap_has_the_checkpoint_only(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=12))
    result = await agent.run("loop")
    assert [n.mark for n in await notices_of(agent, result.run_id)] == ["steps 50% of 12"]


async def test_time_warnings(workspace: Path) -> None:
    async def slow(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage:
        await asyncio.sleep(0.02)
        return busy(messages, tools)

    model = FunctionModel(slow)
    agent = Agent(
        model=model,
        tools=[noop],
        workspace=workspace,
        budgets=Budgets(time_budget=1, max_steps=500),
    )
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.TIME_BUDGET
    marks = [n.mark for n in await notices_of(agent, result.run_id) if n.mark]
    # a round is 2 % of the budget: both marks, unless a slow machine jumps over the first
    assert marks in (["time 80% of 1", "time 90% of 1"], ["time 90% of 1"])


async def test_summarize_at_a_cap_returns_the_partial_work(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=2, at_cap="summarize"))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.partial
    assert result.final_answer == "Partial: called noop, not done."
    assert result.detail == "reached the cap of 2 steps; the answer summarizes the partial work"
    assert result.steps == 3  # the summary call counts
    # It is offered the run's tools, to be called none (a history with calls needs them).
    assert isinstance(agent.model, Busy)
    tools = agent.model.offered[0][0]
    assert "noop" in tools
    assert agent.model.offered == [(tools, "auto"), (tools, "auto"), (tools, "none")]
    [asked] = await notices_of(agent, result.run_id)
    assert asked.source == "MaxSteps"
    assert asked.text.startswith("[CAP REACHED] reached the cap of 2 steps.")
    finished = (await agent.log.events(result.run_id))[-1]
    assert isinstance(finished, RunFinished)
    assert finished.partial


async def test_summarize_at_a_token_budget(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(token_budget=150, at_cap="summarize"))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert (result.partial, result.final_answer) == (True, "Partial: called noop, not done.")


async def test_summarize_does_not_apply_to_other_stops(workspace: Path) -> None:
    agent = Agent(
        model=ScriptedModel(["done"]), workspace=workspace, budgets=Budgets(at_cap="summarize")
    )
    result = await agent.run("go")
    assert (result.stop_reason, result.partial) == (StopReason.END_TURN, False)


async def test_resume_after_a_cap_continues_with_a_note_and_more_budget(workspace: Path) -> None:
    seen: list[list[Message]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        seen.append(messages)
        if any("[CONTINUING AFTER A CAP]" in getattr(m, "content", "") for m in messages):
            return "FINAL_ANSWER: finished after the cap"
        return busy(messages, tools)

    usage = Usage(input_tokens=50, output_tokens=50, requests=1)
    agent = Agent(
        model=FunctionModel(model, usage=usage),
        tools=[noop],
        workspace=workspace,
        budgets=Budgets(token_budget=250),
    )
    capped = await agent.run("loop")
    assert capped.stop_reason is StopReason.TOKEN_BUDGET
    done = await agent.resume(capped.run_id)
    assert done.stop_reason is StopReason.END_TURN
    assert done.final_answer == "finished after the cap"
    events = await agent.log.events(capped.run_id)
    [resumed] = [e for e in events if isinstance(e, RunResumed)]
    assert (resumed.max_steps, resumed.token_budget) == (30, 300 + 250)  # as much again
    note = events[resumed.seq]  # the event right after
    assert isinstance(note, Notice)
    assert (note.source, note.to_model) == ("budgets", True)
    assert note.text == (
        "[CONTINUING AFTER A CAP] The run stopped at a cap (used 300 of the budget of 250 "
        "tokens) and is continued with new caps: 30 steps, 550 tokens in all. Go on with the "
        "task from where you stopped."
    )


async def test_resume_sets_new_caps(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(token_budget=250, cost_budget=5.0))
    capped = await agent.run("loop")
    again = await agent.resume(capped.run_id, token_budget=450, max_steps=40, time_budget=60)
    assert again.stop_reason is StopReason.TOKEN_BUDGET
    assert again.detail == "used 500 of the budget of 450 tokens"
    state = await agent.state(capped.run_id)
    caps = state.config
    assert (caps.max_steps, caps.token_budget, caps.time_budget, caps.cost_budget) == (
        40,
        450,
        60,
        5.0,
    )


async def test_resume_after_a_summary_goes_on(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=2, at_cap="summarize"))
    capped = await agent.run("loop")
    assert capped.partial
    resumed = await agent.resume(capped.run_id)  # not ended by the summary's text
    assert resumed.stop_reason is StopReason.MAX_STEPS
    assert resumed.steps == 6  # the new cap: 3 + 2 steps, then its summary
    assert resumed.partial


async def test_a_resume_after_an_error_gets_no_cap_note(workspace: Path) -> None:
    agent = Agent(model=ScriptedModel([reply("", call("noop"))]), tools=[noop], workspace=workspace)
    failed = await agent.run("go")
    assert failed.stop_reason is StopReason.ERROR
    agent.model = ScriptedModel([reply("", call("noop")), "done"])
    done = await agent.resume(failed.run_id)
    assert done.stop_reason is StopReason.END_TURN
    assert await notices_of(agent, failed.run_id) == []


def test_elapsed_time_is_a_fold_of_the_active_spans() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    config = RunConfig(model="m", workspace="/w", max_steps=5, time_budget=10)
    ids = {"session_id": "s", "run_id": "r"}

    def at(seconds: float) -> datetime:
        return t0 + timedelta(seconds=seconds)

    events = [
        RunStarted(**ids, seq=1, ts=at(0), goal="g", config=config, messages=()),
        ModelRequested(**ids, seq=2, ts=at(2), step=1),
        # a crash here; resumed 100 s later
        RunResumed(**ids, seq=3, ts=at(102), max_steps=5, time_budget=10),
        RunFinished(**ids, seq=4, ts=at(105), stop_reason=StopReason.TIME_BUDGET),
        RunResumed(**ids, seq=5, ts=at(200), max_steps=5, time_budget=20),
    ]
    state = RunState.fold(events)
    assert state.elapsed == 5.0  # 2 s before the crash, 3 s after it
    assert state.elapsed_at(at(201)) == 6.0
    assert state.config.time_budget == 20


def test_old_events_without_budgets_still_read() -> None:
    old = (
        '{"v":1,"session_id":"s","run_id":"r","seq":3,"ts":"2026-01-01T00:00:00Z",'
        '"kind":"run_resumed","max_steps":7}'
    )
    resumed = EVENT.validate_json(old)
    assert isinstance(resumed, RunResumed)
    assert (resumed.max_steps, resumed.token_budget, resumed.time_budget) == (7, None, None)
    config = RunConfig.model_validate_json('{"model":"m","workspace":"/w","max_steps":3}')
    assert (config.token_budget, config.cost_budget, config.at_cap) == (None, None, "stop")


async def test_at_a_cap_the_handler_may_choose_to_go_on(workspace: Path) -> None:
    offers: list[CapOffer] = []

    def choose(offer: CapOffer) -> str | None:
        offers.append(offer)
        return "+20 steps" if len(offers) == 1 else None

    agent = busy_agent(workspace, budgets=Budgets(max_steps=10, on_cap=choose))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.steps == 30
    assert result.detail == "reached the cap of 30 steps"
    assert [o.choices for o in offers] == [("+20 steps", "+60 steps")] * 2
    assert offers[0].detail == "reached the cap of 10 steps"
    events = await agent.log.events(result.run_id)
    [extended] = [e for e in events if isinstance(e, BudgetExtended)]
    assert (extended.source, extended.choice, extended.max_steps) == ("MaxSteps", "+20 steps", 30)
    marks = [e.mark for e in events if isinstance(e, Notice) and e.mark]
    # re-armed by the new cap: 50 % of 30 is step 15, past the 10 of the first cap
    assert marks == ["steps 50% of 10", "steps 50% of 30", "steps 70% of 30", "steps 90% of 30"]
    offered = [e.text for e in events if isinstance(e, Notice) and "offered" in e.text]
    assert offered[0] == "reached the cap of 10 steps; offered to continue: +20 steps or +60 steps"
    state = await agent.state(result.run_id)
    assert state.config.max_steps == 30  # folded from the log


async def test_an_async_handler_extends_a_token_budget(workspace: Path) -> None:
    async def more(offer: CapOffer) -> str | None:
        return "+20000 tokens" if offer.reason is StopReason.TOKEN_BUDGET else None

    agent = busy_agent(workspace, budgets=Budgets(token_budget=250, max_steps=5, on_cap=more))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS  # the tokens went on; the steps did not
    state = await agent.state(result.run_id)
    assert state.config.token_budget == 20_250


async def test_headless_or_no_choice_stops_at_the_cap(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=2, on_cap=lambda offer: "+1000 steps"))
    result = await agent.run("loop")  # not one of the choices: stop
    assert (result.stop_reason, result.steps) == (StopReason.MAX_STEPS, 2)
    events = await agent.log.events(result.run_id)
    assert not any(isinstance(e, BudgetExtended) for e in events)
    headless = busy_agent(workspace, budgets=Budgets(max_steps=2))
    result = await headless.run("loop")
    assert (result.stop_reason, result.steps) == (StopReason.MAX_STEPS, 2)
    assert await notices_of(headless, result.run_id) == []  # nothing offered


async def test_a_failing_handler_stops_and_says_why(workspace: Path) -> None:
    def broken(offer: CapOffer) -> str | None:
        raise RuntimeError("boom")

    agent = busy_agent(workspace, budgets=Budgets(max_steps=2, on_cap=broken))
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.detail.endswith("the offer to continue failed: RuntimeError: boom")


async def test_no_offer_at_the_cost_cap(workspace: Path) -> None:
    usage = Usage(input_tokens=100_000, output_tokens=10_000, requests=1)
    model = FunctionModel(busy, name="gpt-4o", usage=usage)
    asked: list[CapOffer] = []
    agent = Agent(
        model=model,
        tools=[noop],
        workspace=workspace,
        budgets=Budgets(cost_budget=0.5, on_cap=lambda offer: asked.append(offer) or "+20 steps"),  # type: ignore[func-returns-value]
    )
    result = await agent.run("loop")
    assert result.stop_reason is StopReason.COST_BUDGET
    assert asked == []


async def test_the_old_budget_keywords_still_work_with_a_deprecation_warning(
    workspace: Path,
) -> None:
    """`Agent(max_steps=..., budget_notices=...)`, 0.1's spelling: warned, and the same agent as
    `budgets=Budgets(...)` makes; one given with budgets changes only what it names."""
    with pytest.warns(DeprecationWarning, match=r"give budgets=Budgets\(max_steps=\.\.\., "):
        agent = busy_agent(workspace, max_steps=2, budget_notices=False, at_cap="summarize")
    assert agent.budgets == Budgets(max_steps=2, notices=False, at_cap="summarize")
    assert (agent.max_steps, agent.at_cap) == (2, "summarize")  # still read where they were
    result = await agent.run("loop")
    assert (result.stop_reason, result.partial) == (StopReason.MAX_STEPS, True)  # summarized
    with pytest.warns(DeprecationWarning, match=r"ReflectiveAgent\(token_budget=\.\.\.\)"):
        reflective = ReflectiveAgent(
            model=ScriptedModel(["done"]),
            workspace=workspace,
            budgets=Budgets(max_steps=7, cost_budget=1.0),
            token_budget=900,  # type: ignore[call-arg]
        )
    assert reflective.budgets == Budgets(max_steps=7, cost_budget=1.0, token_budget=900)
    with (
        pytest.raises(UsageError, match="max_steps=0: it must be 1 or more"),
        pytest.warns(DeprecationWarning, match="budgets=Budgets"),
    ):
        busy_agent(workspace, max_steps=0)


def test_a_copy_of_an_agent_keeps_its_budgets(workspace: Path) -> None:
    agent = busy_agent(workspace, budgets=Budgets(max_steps=4, time_budget=60.0))
    copy = dataclasses.replace(agent, instructions="more")
    assert copy.budgets == agent.budgets
    assert (copy.max_steps, copy.time_budget, copy.token_budget) == (4, 60.0, None)
    copy.max_steps = 9  # set where it was before budgets held it: the budgets change
    assert (copy.budgets.max_steps, agent.max_steps) == (9, 4)
    with pytest.raises(UsageError, match="token_budget=0: a budget is more than 0"):
        copy.token_budget = 0
