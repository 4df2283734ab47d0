"""plan and todo: the planner's two calls (no extended thinking), the steps as the run's todo
list (in its log), a complex plan put to the user first, re-planning, evidence for a step
with a validation, and the anti-stall guard counting steps done."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from reins import (
    Agent,
    AssistantMessage,
    Guards,
    Message,
    ModelResponse,
    ModelSettings,
    ToolSpec,
    Usage,
)
from reins.events import Notice
from reins.policies._guards import LOOP_NOTE
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .test_mcp import results

ANALYSIS = {
    "task": "Add a CLI flag",
    "goal": "the flag works and is tested",
    "unknowns": ["where options are parsed"],
    "complexity": "medium",
    "subtasks": ["find", "change", "test"],
}
STEPS = {
    "steps": [
        {"step": "Find where options are parsed", "executor": "TOOL: grep"},
        {"step": "Read that module", "executor": "TOOL: read_file"},
        {"step": "Add the flag", "executor": "TOOL: edit_file"},
        {"step": "Add a test", "executor": "TOOL: nonexistent_tool"},
        {"step": "Run the tests", "executor": "TOOL: run_command"},
    ]
}


class Planner(ScriptedModel):
    """A scripted planner that records the settings of each call."""

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__(list(replies), name="planner")
        self.settings: list[ModelSettings] = []
        self.calls = 0

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        self.settings.append(settings)
        reply_text = self.replies[self.calls]
        self.calls += 1
        assert isinstance(reply_text, str)
        return ModelResponse(
            message=AssistantMessage(text=reply_text),
            usage=Usage(input_tokens=50, output_tokens=20, requests=1),
            finish="end_turn",
            model_name="planner",
        )


def planning_agent(workspace: Path, planner: Planner, *replies: object, **kw: object) -> Agent:
    return Agent(
        model=ScriptedModel(list(replies)),  # type: ignore[arg-type]
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        planning=True,
        planner=planner,
        settings=ModelSettings(thinking_budget=4000),
        **kw,  # type: ignore[arg-type]
    )


async def test_a_plan_becomes_the_todo_list_and_costs_the_run(workspace: Path) -> None:
    planner = Planner([json.dumps(ANALYSIS), "```json\n" + json.dumps(STEPS) + "\n```"])
    agent = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    result = await agent.run("add a --verbose flag")
    text = next(m for m in result.messages if m.role == "tool").content  # type: ignore[union-attr]
    assert text.startswith("Plan (medium, 5 steps) for: the flag works and is tested")
    assert "To find out first:\n- where options are parsed" in text
    assert "[ ] 1. Find where options are parsed (TOOL: grep)" in text
    assert "[ ] 4. Add a test\n" in text  # an unknown tool: the agent's own step
    assert text.endswith("Proceed with step 1; keep the todo list current with `todo` as you go.")
    state = await agent.state(result.run_id)
    assert [(i.id, i.status) for i in state.todo] == [(n, "pending") for n in range(1, 6)]
    assert state.usage.requests == 2 + 2  # the run's two calls and the planner's two
    assert all(s.thinking_budget is None for s in planner.settings)  # never extended thinking


async def test_a_complex_plan_is_put_to_the_user_first(workspace: Path) -> None:
    complex_ = {**ANALYSIS, "complexity": "complex"}
    steps = {"steps": [{"step": f"step {n}"} for n in range(1, 11)]}
    planner = Planner([json.dumps(complex_), json.dumps(steps)])
    agent = planning_agent(
        workspace, planner, reply("", call("plan", "p1")), "done", ask=lambda r: "yes"
    )
    result = await agent.run("rewrite the storage layer")
    text = next(m for m in result.messages if m.role == "tool").content  # type: ignore[union-attr]
    assert "present this plan to the user and wait for their confirmation" in text
    assert "ask with ask_user" in text
    planner = Planner([json.dumps(complex_), json.dumps(steps)])
    headless = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    result = await headless.run("rewrite the storage layer")
    text = next(m for m in result.messages if m.role == "tool").content  # type: ignore[union-attr]
    assert "nobody can be asked to confirm the plan in this run" in text


async def test_a_bad_reply_is_repaired_once_and_a_plan_out_of_range_asked_again(
    workspace: Path,
) -> None:
    too_many = {"steps": [{"step": f"s{n}"} for n in range(12)]}
    planner = Planner(
        ["I think it is medium.", json.dumps(ANALYSIS), json.dumps(too_many), json.dumps(STEPS)]
    )
    agent = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    result = await agent.run("go")
    text = next(m for m in result.messages if m.role == "tool").content  # type: ignore[union-attr]
    assert text.startswith("Plan (medium, 5 steps)")
    assert planner.calls == 4
    planner = Planner(["no", "still no"])
    agent = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    content, is_error = results([e async for e in agent.iter("go")])["p1"]
    assert is_error
    assert content.startswith("the planner did not reply with a usable plan")


async def test_todo_updates_need_evidence_for_a_validation_and_a_replan_replaces(
    workspace: Path,
) -> None:
    items = [
        {"text": "write the parser", "validation": "pytest tests/test_parser.py passes"},
        {"text": "update the docs"},
    ]
    planner = Planner([json.dumps(ANALYSIS), json.dumps(STEPS)])
    agent = planning_agent(
        workspace,
        planner,
        reply("", call("todo", "t1", action="set", items=items)),
        reply("", call("todo", "t2", action="update", id=1, status="done")),
        reply("", call("todo", "t3", action="update", id=1, status="done", evidence="3 passed")),
        reply("", call("todo", "t4", action="update", id=7, status="done")),
        reply("", call("plan", "p1", reason="the parser exists already")),
        "done",
    )
    events = [e async for e in agent.iter("parse things")]
    found = results(events)
    assert found["t1"][0].splitlines()[0] == (
        "[ ] 1. write the parser — done when: pytest tests/test_parser.py passes"
    )
    assert found["t2"][1]
    assert "Check that, then mark it done with the `evidence`" in found["t2"][0]
    assert found["t3"][0].splitlines()[:3] == [
        "[x] 1. write the parser — done when: pytest tests/test_parser.py passes",
        "[ ] 2. update the docs",
        "Next: 2. update the docs",
    ]
    assert found["t4"] == ("no step 7; the steps: 1, 2", True)
    state = await agent.state(events[0].run_id)
    assert next(i.text for i in state.todo) == "Find where options are parsed"  # replaced
    assert state.todo[0].status == "pending"


async def test_the_anti_stall_guard_counts_steps_done_not_bookkeeping(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a")
    items = [{"text": "one"}, {"text": "two"}, {"text": "three"}]

    def run(status: str) -> Agent:
        return Agent(
            model=ScriptedModel(
                [
                    reply("", call("todo", "t0", action="set", items=items)),
                    reply("", call("read_file", "r1", path="a.txt")),
                    reply("", call("todo", "t1", action="update", id=1, status=status)),
                    reply("", call("todo", "t2", action="update", id=2, status=status)),
                    reply("", call("todo", "t3", action="update", id=3, status=status)),
                    "done",
                ]
            ),
            tools=BUILTIN_TOOLS,
            workspace=workspace,
            planning=True,
            guards=Guards(anti_stall_threshold=2),
        )

    def warned(events: list[object]) -> bool:
        return any(isinstance(e, Notice) and e.text.startswith(LOOP_NOTE) for e in events)

    done = [e async for e in run("done").iter("go")]
    assert not warned(done)
    busy = [e async for e in run("in_progress").iter("go")]
    assert warned(busy)
