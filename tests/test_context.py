"""The context layer through the public API: token accounting, compaction, truncation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Message,
    ModelSettings,
    StopReason,
    SystemMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    tool,
)
from reins.context import ContextBuilder, ContextSettings
from reins.context._compaction import FAILURE_HEADER, SUMMARY_HEADER
from reins.context._tokens import estimate
from reins.core._events import ContextCompacted, ModelRequested
from reins.core._state import RunState
from reins.store import SQLiteLog
from reins.testing import ScriptedModel

from .helpers import call, reply

LINES = 400  # 10 KB a result


@tool(read_only=True)
def big(part: int) -> str:
    """Print a long report.

    Args:
        part: Which part.
    """
    return f"part {part}\n" + "".join(f"line {i:04d} of part {part} ....\n" for i in range(LINES))


@tool
def broken(why: str) -> str:
    """Fail on purpose.

    Args:
        why: The reason.
    """
    from reins import ToolError

    raise ToolError(f"it broke: {why}")


class Recording(ScriptedModel):
    """A scripted model that keeps every request it was sent."""

    def __init__(self, replies: Sequence[AssistantMessage | str], **kw: object) -> None:
        super().__init__(replies, **kw)  # type: ignore[arg-type]
        self.requests: list[list[Message]] = []

    async def request(self, messages, tools, settings):  # type: ignore[no-untyped-def]
        self.requests.append(list(messages))
        return await super().request(messages, tools, settings)


def script(rounds: int) -> list[AssistantMessage | str]:
    return [reply("", call("big", f"c{i}", part=i)) for i in range(rounds)] + ["FINAL_ANSWER: ok"]


def agent(model: ScriptedModel, workspace: Path, **kw: object) -> Agent:
    context = kw.pop("context", ContextSettings(window=8000))
    return Agent(
        model=model,
        workspace=workspace,
        tools=[big, broken],
        budgets=kw.pop("budgets", Budgets(max_steps=60)),  # type: ignore[arg-type]
        context=context,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def paired(messages: Sequence[Message]) -> bool:
    """Every tool result follows the reply that called it, in the same request."""
    called: set[str] = set()
    for m in messages:
        if isinstance(m, AssistantMessage):
            called |= {c.id for c in m.tool_calls}
        elif isinstance(m, ToolResultMessage) and m.call_id not in called:
            return False
    return True


async def test_a_long_session_stays_inside_its_window(workspace: Path) -> None:
    model = Recording(script(40))
    log = SQLiteLog(workspace / "log.db")
    result = await agent(model, workspace, log=log).run("read all the parts")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    assert result.final_answer == "ok"
    events = await log.events(result.run_id)
    compactions = [e for e in events if isinstance(e, ContextCompacted)]
    assert len(compactions) >= 3
    assert all(c.method == "digest" and c.tokens_after < c.tokens_before for c in compactions)
    # Every request fits, keeps its goal and system prompt, and never splits a call from its
    # result; the scripted model went through its 41 replies in order.
    assert len(model.requests) == 41
    for sent in model.requests:
        assert estimate(sent) <= 8000
        assert isinstance(sent[0], SystemMessage)
        assert UserMessage(content="read all the parts") in sent
        assert paired(sent)
    assert sum(SUMMARY_HEADER in getattr(m, "content", "") for m in model.requests[-1]) == 1
    # The log keeps the whole history: every result, in full.
    whole = result.messages
    assert sum(isinstance(m, ToolResultMessage) for m in whole) == 40
    assert all(len(m.content) > 10_000 for m in whole if isinstance(m, ToolResultMessage))


async def test_without_compaction_the_same_session_stops_before_the_window(
    workspace: Path,
) -> None:
    model = Recording(script(40))
    context = ContextSettings(window=8000, compaction=False)
    result = await agent(model, workspace, context=context).run("read all the parts")
    assert result.stop_reason is StopReason.ERROR
    assert result.detail.startswith("context too large")
    assert "compaction is off" in result.detail
    assert all(estimate(sent) <= 8000 for sent in model.requests)


async def test_a_huge_result_is_cut_in_the_request_only(workspace: Path) -> None:
    model = Recording([reply("", call("big", "c0", part=0)), "FINAL_ANSWER: ok"])
    context = ContextSettings(window=20_000, message_token_budget=1000)
    result = await agent(model, workspace, context=context).run("read part 0")
    assert result.stop_reason is StopReason.END_TURN
    sent = model.requests[-1][-1]
    assert isinstance(sent, ToolResultMessage)
    assert "tokens truncated …]" in sent.content
    assert sent.content.startswith("part 0\nline 0000")
    assert sent.content.endswith("line 0399 of part 0 ....\n")
    assert len(sent.content) <= 3000 + 100
    kept = result.messages[-2]
    assert isinstance(kept, ToolResultMessage)
    assert len(kept.content) > 10_000


async def test_pinned_items_survive_compaction(workspace: Path) -> None:
    parts = script(12)
    replies = [*parts[:5], reply("", call("broken", "b0", why="disk")), *parts[5:]]
    model = Recording(replies)
    a = agent(model, workspace, context=ContextSettings(window=8000, keep_recent=2))
    run = a.iter("read all the parts")
    async for event in run:
        if isinstance(event, ModelRequested) and event.step == 2:
            run.steer("and count the lines")
    result = await run.result()
    assert result.stop_reason is StopReason.END_TURN, result.detail
    last = model.requests[-1]
    texts = [m.content for m in last if isinstance(m, UserMessage)]
    assert "read all the parts" in texts
    assert any(t.endswith("and count the lines") for t in texts)
    assert any(t.startswith(FAILURE_HEADER) and "it broke: disk" in t for t in texts)
    summary = next(t for t in texts if t.startswith(SUMMARY_HEADER))
    assert "broken" in summary  # the digest names what was done
    assert paired(last)


async def test_the_summarizer_writes_the_summary(workspace: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(["The agent read parts 0 to 9 of the report."] * 20))
    model = Recording(script(20))
    context = ContextSettings(window=8000, compaction_model=f"script:{summary}")
    log = SQLiteLog(workspace / "log.db")
    result = await agent(model, workspace, context=context, log=log).run("read all the parts")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    events = await log.events(result.run_id)
    compaction = next(e for e in events if isinstance(e, ContextCompacted))
    assert compaction.method == "summary"
    assert compaction.model == f"script:{summary}"
    assert compaction.usage.requests == 1
    assert any(
        "The agent read parts 0 to 9" in getattr(m, "content", "") for m in model.requests[-1]
    )


async def test_a_failing_summarizer_falls_back_to_the_digest(
    workspace: Path, tmp_path: Path
) -> None:
    model = Recording(script(20))
    missing = tmp_path / "no-such-script.json"
    context = ContextSettings(window=8000, compaction_model=f"script:{missing}")
    log = SQLiteLog(workspace / "log.db")
    result = await agent(model, workspace, context=context, log=log).run("read all the parts")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    events = await log.events(result.run_id)
    compaction = next(e for e in events if isinstance(e, ContextCompacted))
    assert compaction.method == "digest"
    assert compaction.detail.startswith("the summarizer failed: ScriptError")


async def test_what_the_model_saw_is_a_fold_of_the_log_across_a_resume(workspace: Path) -> None:
    log = SQLiteLog(workspace / "log.db")
    halted = Recording(script(24))
    first = await agent(halted, workspace, log=log, budgets=Budgets(max_steps=15)).run(
        "read all the parts"
    )
    assert first.stop_reason is StopReason.MAX_STEPS
    resumed = Recording(script(24))
    result = await agent(resumed, workspace, log=log).resume(first.run_id, max_steps=60)
    assert result.stop_reason is StopReason.END_TURN, result.detail
    assert len(halted.requests) + len(resumed.requests) == 25  # the script went on in order
    # Each request, rebuilt from the events before it alone: what a replay shows.
    events = await log.events(first.run_id)
    builder = ContextBuilder(model=halted, settings=ContextSettings(window=8000), tools=())
    rebuilt = [
        builder.request(RunState.fold(events[:i]))
        for i, event in enumerate(events)
        if isinstance(event, ModelRequested)
    ]
    assert rebuilt == halted.requests + resumed.requests
    assert sum(isinstance(e, ContextCompacted) for e in events) >= 4


async def test_a_request_that_cannot_fit_stops_before_the_call(workspace: Path) -> None:
    model = Recording(["FINAL_ANSWER: never"])
    context = ContextSettings(window=1000)
    result = await agent(model, workspace, context=context).run("x " * 5000)
    assert result.stop_reason is StopReason.ERROR
    assert result.detail.startswith("context too large: the next request is about")
    assert model.requests == []


async def test_the_output_cap_shrinks_to_fit_the_window(workspace: Path) -> None:
    seen: list[int | None] = []

    class Capped(Recording):
        async def request(self, messages, tools, settings: ModelSettings):  # type: ignore[no-untyped-def, override]
            seen.append(settings.max_tokens)
            return await super().request(messages, tools, settings)

    model = Capped(["FINAL_ANSWER: ok"])
    context = ContextSettings(window=2000)
    a = agent(model, workspace, context=context, settings=ModelSettings(max_tokens=4000))
    result = await a.run("say ok")
    assert result.stop_reason is StopReason.END_TURN
    assert seen[0] is not None
    assert seen[0] < 2000
    assert seen[0] + estimate(model.requests[0], list(_specs(a))) <= 2000


def _specs(a: Agent) -> list[ToolSpec]:
    return [t.spec for t in a._tools()]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"window": 100}, "too small"),
        ({"threshold": 2.0}, "between 0.1 and 1"),
        ({"keep_recent": 0}, "at least 1"),
    ],
)
def test_bad_context_settings_say_what_is_wrong(settings: dict[str, object], message: str) -> None:
    from reins import UsageError

    with pytest.raises(UsageError, match=message):
        ContextSettings(**settings)  # type: ignore[arg-type]


async def test_a_long_result_spills_to_a_file_the_model_pages_through(workspace: Path) -> None:
    import re

    from reins.testing import FunctionModel

    def fn(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        last = messages[-1]
        if not isinstance(last, ToolResultMessage):
            return reply("", call("run_command", "c0", command="seq 1 100000"))
        if last.name == "run_command":
            found = re.search(r'read_file \(path="([^"]+)"', last.content)
            assert found is not None, last.content
            return reply(
                "", call("read_file", "c1", path=found[1], start_line=50001, end_line=50002)
            )
        return f"FINAL_ANSWER: {last.content}"

    log = SQLiteLog(workspace / ".reins")
    a = Agent(model=FunctionModel(fn), workspace=workspace, log=log, approval="allow")
    result = await a.run("count to 100000")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    assert result.final_answer is not None
    assert result.final_answer.startswith("50000\n50001\n\n[more lines")  # line 1: exit code
    shown = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert len(shown.content) < 8000
    assert shown.content.startswith("exit code: 0\n1\n2\n")
    assert shown.content.endswith("99999\n100000\n")
    assert "of 100001 not shown" in shown.content
    system = result.messages[0]
    assert isinstance(system, SystemMessage)
    assert "too long to show whole is saved to a file under .reins/spill/" in system.content
    saved = workspace / ".reins" / "spill" / result.run_id / "c0.txt"
    assert saved.read_text() == "exit code: 0\n" + "".join(f"{i}\n" for i in range(1, 100001))


async def test_without_a_log_on_disk_a_long_result_is_cut(workspace: Path) -> None:
    model = ScriptedModel([reply("", call("run_command", "c0", command="seq 1 100000")), "done"])
    result = await Agent(model=model, workspace=workspace, approval="allow").run("count")
    shown = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert len(shown.content) <= 30_100
    assert "characters cut" in shown.content
    assert shown.content.endswith("100000\n")
    assert "saved to a file" not in result.messages[0].content  # type: ignore[union-attr]


async def test_a_huge_argument_is_cut_in_the_request_only(workspace: Path) -> None:
    content = "".join(f"row {i}\n" for i in range(20_000))
    model = Recording([reply("", call("write_file", "w", path="big.txt", content=content)), "ok"])
    context = ContextSettings(window=20_000, message_token_budget=1000)
    a = Agent(model=model, workspace=workspace, context=context)
    result = await a.run("write the rows")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    assert (workspace / "big.txt").read_text() == content
    [sent] = [m for m in model.requests[-1] if isinstance(m, AssistantMessage)]
    shown = sent.tool_calls[0].arguments["content"]
    assert shown.startswith("row 0\nrow 1\n")
    assert "tokens truncated …]" in shown
    assert shown.endswith("row 19999\n")
    assert len(shown) < 3100
    [kept] = [m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls]
    assert kept.tool_calls[0].arguments["content"] == content


@pytest.mark.parametrize(
    ("goal", "kind"),
    [
        ("Fix the failing test in app.py", "coding"),
        ("Why does parse_date return None? Look in src/utils.py", "coding"),
        ("Research why the sky is blue and compare the sources", "research"),
        ("Write a blog post announcing version 2", "writing"),
        ("Deploy the service with docker and restart nginx", "ops"),
        ("Create the file hello.txt containing the text: hello", None),
    ],
)
def test_the_kind_of_work_a_goal_asks_for_is_inferred(goal: str, kind: str | None) -> None:
    from reins.context import infer_profile

    assert infer_profile(goal) == kind


async def test_a_store_outside_the_workspace_keeps_spills_readable_and_nothing_else(
    tmp_path: Path, workspace: Path
) -> None:
    import re

    from reins.testing import FunctionModel

    seen: list[str] = []

    def fn(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        last = messages[-1]
        if not isinstance(last, ToolResultMessage):
            return reply("", call("run_command", "c0", command="seq 1 100000"))
        seen.append(last.content)
        if last.name == "run_command":
            found = re.search(r'read_file \(path="([^"]+)"', last.content)
            assert found is not None
            escape = found[1].replace("c0.txt", "../../reins.db")
            return reply(
                "",
                call("read_file", "c1", path=found[1], start_line=3, end_line=3),
                call("read_file", "c2", path=escape),
                call("write_file", "c3", path=found[1], content="mine"),
            )
        return "FINAL_ANSWER: read"

    store = tmp_path / "store"
    a = Agent(model=FunctionModel(fn), workspace=workspace, log=SQLiteLog(store), approval="allow")
    result = await a.run("count to 100000")
    assert result.stop_reason is StopReason.END_TURN, result.detail
    system = result.messages[0]
    assert isinstance(system, SystemMessage)
    assert "saved to a file in the run log's folder (outside the workspace" in system.content
    assert str(store) not in system.content
    assert f'path="{store.resolve()}/spill/{result.run_id}/c0.txt"' in seen[0]
    read, escape, write = results_of(result.messages)[1:]
    assert read.content.startswith("2\n")  # line 3: the exit code line comes first
    assert escape.is_error
    assert "outside the workspace" in escape.content
    assert write.is_error
    assert (store / "spill" / result.run_id / "c0.txt").read_text().startswith("exit code: 0\n1\n")


def results_of(messages: Sequence[Message]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]
