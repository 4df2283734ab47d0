"""The ReAct loop through the public API: stop reasons, policies, cancel, tool concurrency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Cancel,
    Continue,
    Inject,
    Message,
    ModelError,
    ModelResponse,
    Policy,
    Reject,
    Replace,
    RunState,
    Stop,
    StopReason,
    StreamItem,
    SystemMessage,
    ThinkingChunk,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageError,
    UserMessage,
    tool,
)
from reins.events import (
    ModelRequested,
    Notice,
    ResponseRejected,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from reins.policies import AfterResponse, AfterTools, BeforeRound, BeforeTool, OnFinal
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply


@tool
async def noop() -> str:
    """Do nothing."""
    return "ok"


def agent_for(replies: Sequence[AssistantMessage | str], workspace: Path, **kw: object) -> Agent:
    return Agent(model=ScriptedModel(replies), workspace=workspace, **kw)  # type: ignore[arg-type]


async def test_plain_reply_ends_the_turn_with_its_text(workspace: Path) -> None:
    result = await agent_for(["All done."], workspace).run("say done")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "All done."
    assert result.steps == 1
    assert isinstance(result.messages[0], SystemMessage)
    assert result.messages[1:] == [
        UserMessage(content="say done"),
        AssistantMessage(text="All done."),
    ]


async def test_final_answer_tool_ends_the_turn_after_the_other_calls_ran(workspace: Path) -> None:
    replies = [reply("", call("noop", "a"), call("final_answer", "b", answer="42"))]
    result = await agent_for(replies, workspace, tools=[noop]).run("answer")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "42"
    assert result.messages[-2:] == [
        ToolResultMessage(call_id="a", name="noop", content="ok"),
        ToolResultMessage(call_id="b", name="final_answer", content="Final answer recorded."),
    ]


async def test_final_answer_line_ends_the_turn(workspace: Path) -> None:
    replies = [reply("thinking aloud\nFINAL_ANSWER: the answer\nis two lines")]
    result = await agent_for(replies, workspace).run("answer")
    assert result.final_answer == "the answer\nis two lines"


@pytest.mark.parametrize("marker", ["Final_ANSWER:", "final answer :", "  Final Answer:"])
async def test_final_answer_marker_is_read_in_any_case(workspace: Path, marker: str) -> None:
    result = await agent_for([f"{marker} hello.txt"], workspace).run("answer")
    assert result.final_answer == "hello.txt"


async def test_invalid_final_answer_call_does_not_end_the_turn(workspace: Path) -> None:
    replies = [reply("", call("final_answer", "a")), "FINAL_ANSWER: fixed"]
    result = await agent_for(replies, workspace).run("answer")
    first_result = result.messages[3]
    assert isinstance(first_result, ToolResultMessage)
    assert first_result.is_error
    assert "answer: Field required" in first_result.content
    assert result.final_answer == "fixed"
    assert result.steps == 2


async def test_step_cap_stops_before_the_next_model_call(workspace: Path) -> None:
    replies = [reply("", call("noop", f"c{i}")) for i in range(5)]
    result = await agent_for(replies, workspace, tools=[noop], budgets=Budgets(max_steps=3)).run(
        "loop"
    )
    assert result.stop_reason is StopReason.MAX_STEPS
    assert result.steps == 3
    assert result.detail == "reached the cap of 3 steps"


async def test_model_error_stops_the_run_with_error(workspace: Path) -> None:
    result = await agent_for([reply("", call("noop"))], workspace, tools=[noop]).run("go")
    assert result.stop_reason is StopReason.ERROR
    assert "the script has 1 replies and all were used" in result.detail
    assert result.steps == 1


async def test_events_have_gap_free_seq_and_one_envelope(workspace: Path) -> None:
    run = agent_for([reply("hello there", call("noop")), "bye"], workspace, tools=[noop]).iter("go")
    events = [e async for e in run]
    logged = [e for e in events if not isinstance(e, TextDelta)]
    assert [e.seq for e in logged] == list(range(1, len(logged) + 1))
    # A delta is on the stream only: it carries the seq of the event after it.
    for i, event in enumerate(events):
        if isinstance(event, TextDelta):
            assert event.seq == next(e.seq for e in events[i:] if not isinstance(e, TextDelta))
    assert {(e.session_id, e.run_id) for e in events} == {(run.state.session_id, run.state.run_id)}
    kinds = [e.kind for e in events]
    assert kinds == [
        "run_started",
        "model_request",
        "text_delta",
        "text_delta",
        "model_response",
        "tool_call_started",
        "tool_call_finished",
        "model_request",
        "text_delta",
        "model_response",
        "run_finished",
    ]
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "hello therebye"
    assert all(e.ts.tzinfo is not None for e in events)


async def test_state_is_a_fold_of_the_events(workspace: Path) -> None:
    replies = [reply("a", call("noop", "x"), call("noop", "y")), "done"]
    agent = agent_for(replies, workspace, tools=[noop])
    run = agent.iter("go")
    events = [e async for e in run]
    folded = RunState.fold(events)
    assert folded == run.state
    assert folded == await agent.state(run.state.run_id)


async def test_session_continues_as_a_new_turn(workspace: Path) -> None:
    agent = agent_for(["first answer", "second answer"], workspace)
    first = await agent.run("one")
    second = await agent.run("two", session_id=first.session_id)
    assert second.session_id == first.session_id
    assert second.run_id != first.run_id
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages) :] == [
        UserMessage(content="two"),
        AssistantMessage(text="second answer"),
    ]


async def test_unknown_session_is_a_usage_error(workspace: Path) -> None:
    with pytest.raises(UsageError, match="no session 'nope'"):
        await agent_for(["x"], workspace).run("go", session_id="nope")


async def test_empty_goal_is_a_usage_error(workspace: Path) -> None:
    with pytest.raises(UsageError, match="goal is empty"):
        await agent_for(["x"], workspace).run("  ")


# --- tools: errors come back as observations -------------------------------------------------


@tool(timeout=0.05)
async def slow() -> str:
    """Sleep too long."""
    await asyncio.sleep(5)
    return "never"


@tool
def broken(x: int) -> str:
    """Raise."""
    raise RuntimeError(f"bad {x}")


async def test_tool_failures_are_observations_and_the_run_goes_on(workspace: Path) -> None:
    calls = [
        call("nope", "1"),
        call("broken", "2", x="not a number"),
        call("broken", "3", x=7),
        call("slow", "4"),
    ]
    result = await agent_for([reply("", *calls), "recovered"], workspace, tools=[broken, slow]).run(
        "go"
    )
    assert result.stop_reason is StopReason.END_TURN
    observations = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [(o.call_id, o.is_error) for o in observations] == [
        ("1", True),
        ("2", True),
        ("3", True),
        ("4", True),
    ]
    assert observations[0].content == (
        "unknown tool 'nope'; available tools: broken, final_answer, slow"
    )
    assert (
        "invalid arguments for broken: x: Input should be a valid integer"
        in observations[1].content
    )
    assert observations[2].content == "broken failed: RuntimeError: bad 7"
    assert observations[3].content == "slow timed out and was stopped"


@tool(timeout=5)
async def patient() -> str:
    """Take a little while, well within its own limit."""
    await asyncio.sleep(0.2)
    return "done"


async def test_each_call_keeps_its_own_timeout(workspace: Path) -> None:
    # The long limit is armed first; the short one, armed next, must still fire on time.
    calls = [call("patient", "1"), call("slow", "2"), call("patient", "3")]
    agent = agent_for([reply("", *calls), "ok"], workspace, tools=[patient, slow])
    start = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - start
    observations = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [(o.content, o.is_error) for o in observations] == [
        ("done", False),
        ("slow timed out and was stopped", True),
        ("done", False),
    ]
    assert elapsed < 2  # not the 5 s the slow tool sleeps


async def test_repeated_or_missing_call_ids_are_made_unique(workspace: Path) -> None:
    calls = (
        ToolCall(id="x", name="act", arguments={"mode": "1"}),
        ToolCall(id="x", name="act", arguments={"mode": "2"}),
        ToolCall(id="", name="act", arguments={"mode": "3"}),
    )

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        return "done" if len(messages) > 2 else AssistantMessage(tool_calls=calls)

    result = await Agent(model=FunctionModel(model), tools=[act], workspace=workspace).run("go")
    response = result.messages[2]
    assert isinstance(response, AssistantMessage)
    assert [c.id for c in response.tool_calls] == ["x", "x_1_1", "call_1_2"]
    results = [(m.call_id, m.content) for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results == [("x", "ran 1"), ("x_1_1", "ran 2"), ("call_1_2", "ran 3")]


async def test_calls_run_concurrently_and_results_keep_call_order(workspace: Path) -> None:
    order: list[str] = []

    @tool
    async def wait(name: str, delay: float) -> str:
        """Wait, then note the name."""
        await asyncio.sleep(delay)
        order.append(name)
        return name

    calls = [call("wait", "a", name="a", delay=0.3), call("wait", "b", name="b", delay=0.0)]
    run = agent_for([reply("", *calls), "done"], workspace, tools=[wait]).iter("go")
    events = [e async for e in run]
    finished = [e.result.call_id for e in events if isinstance(e, ToolCallFinished)]
    assert order == ["b", "a"]  # b finished first: they ran at the same time
    assert finished == ["b", "a"]  # events in completion order
    results = [m.call_id for m in run.state.messages if isinstance(m, ToolResultMessage)]
    assert results == ["a", "b"]  # the transcript in call order


async def test_parallelism_is_bounded(workspace: Path) -> None:
    running = 0
    peak = 0

    @tool
    async def busy(n: int) -> str:
        """Be busy a moment."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return str(n)

    calls = [call("busy", str(i), n=i) for i in range(6)]
    agent = agent_for([reply("", *calls), "done"], workspace, tools=[busy], max_parallel_tools=2)
    await agent.run("go")
    assert peak == 2


async def test_writes_to_one_path_are_serialized(workspace: Path) -> None:
    active: dict[str, int] = {}
    overlaps: list[str] = []

    @tool(path_args=("path",))
    async def slow_write(path: str, text: str) -> str:
        """Append slowly."""
        file = (workspace / path).resolve()
        active[str(file)] = active.get(str(file), 0) + 1
        if active[str(file)] > 1:
            overlaps.append(path)
        before = file.read_text() if file.exists() else ""
        await asyncio.sleep(0.02)
        file.write_text(before + text)
        active[str(file)] -= 1
        return "ok"

    calls = [
        call("slow_write", "1", path="a.txt", text="1"),
        call("slow_write", "2", path="./a.txt", text="2"),
        call("slow_write", "3", path="b.txt", text="3"),
        call("slow_write", "4", path="sub/../a.txt", text="4"),
    ]
    (workspace / "sub").mkdir()
    await agent_for([reply("", *calls), "done"], workspace, tools=[slow_write]).run("go")
    assert overlaps == []
    assert sorted((workspace / "a.txt").read_text()) == ["1", "2", "4"]


# --- policies ----------------------------------------------------------------------------------


class Recorder(Policy):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def before_round(self, state: RunState) -> Continue:
        self.seen.append(f"round {state.step}")
        return Continue()

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        self.seen.append(f"response {response.text}")
        return Continue()

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        self.seen.append(f"tool {call.id}")
        return Continue()

    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        self.seen.append(f"results {[r.call_id for r in results]}")
        return Continue()

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        self.seen.append(f"final {answer}")
        return Continue()


async def test_hooks_run_at_their_stages_in_order(workspace: Path) -> None:
    recorder = Recorder()
    replies = [reply("r1", call("noop", "a"), call("noop", "b")), "r2"]
    await agent_for(replies, workspace, tools=[noop], policies=[recorder]).run("go")
    assert recorder.seen == [
        "round 0",
        "response r1",
        "tool a",
        "tool b",
        "results ['a', 'b']",
        "round 1",
        "response r2",
        "final r2",
    ]


class RejectFirstResponse(Policy):
    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        return Reject("no tools yet, think first") if state.step == 1 else Continue()


async def test_rejected_response_is_not_acted_on_and_the_model_is_told(workspace: Path) -> None:
    ran: list[str] = []

    @tool
    def effect() -> str:
        """Side effect."""
        ran.append("x")
        return "done"

    replies = [reply("", call("effect", "a")), "ok then"]
    run = agent_for(replies, workspace, tools=[effect], policies=[RejectFirstResponse()]).iter("go")
    events = [e async for e in run]
    assert ran == []
    rejected = [e for e in events if isinstance(e, ResponseRejected)]
    assert [(r.step, r.source, r.observation) for r in rejected] == [
        (1, "RejectFirstResponse", "no tools yet, think first")
    ]
    assert run.state.messages[-4:-1] == [
        AssistantMessage(tool_calls=(call("effect", "a"),)),
        ToolResultMessage(
            call_id="a", name="effect", content="Not run: the response was rejected.", is_error=True
        ),
        UserMessage(content="no tools yet, think first"),
    ]


class NeedsEvidence(Policy):
    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        if "evidence" not in answer:
            return Reject("show your evidence")
        return Continue()


async def test_stop_hook_can_refuse_a_final_answer(workspace: Path) -> None:
    agent = agent_for(
        ["just trust me", "here is the evidence"], workspace, policies=[NeedsEvidence()]
    )
    result = await agent.run("go")
    assert result.final_answer == "here is the evidence"
    assert UserMessage(content="show your evidence") in result.messages


class Gate(Policy):
    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        match call.arguments.get("mode"):
            case "cached":
                return Replace("from cache")
            case "deny":
                return Reject("denied by policy")
            case "halt":
                return Stop(StopReason.MISSING_EVIDENCE, "halted")
        return Continue()


@tool
def act(mode: str) -> str:
    """Do something."""
    return f"ran {mode}"


async def test_before_tool_answers_denies_or_stops(workspace: Path) -> None:
    calls = [
        call("act", "1", mode="cached"),
        call("act", "2", mode="deny"),
        call("act", "3", mode="go"),
    ]
    replies = [
        reply("", *calls),
        reply("", call("act", "4", mode="halt"), call("act", "5", mode="go")),
    ]
    run = agent_for(replies, workspace, tools=[act], policies=[Gate()]).iter("go")
    events = [e async for e in run]
    started = [e.call.id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["3"]
    first = [m for m in run.state.messages if isinstance(m, ToolResultMessage)]
    assert [(m.content, m.is_error) for m in first] == [
        ("from cache", False),
        ("denied by policy", True),
        ("ran go", False),
    ]
    assert run.state.finished is not None
    assert run.state.finished.stop_reason is StopReason.MISSING_EVIDENCE
    transcript = run.state.transcript()
    assert [m.content for m in transcript[-2:] if isinstance(m, ToolResultMessage)] == [
        "Not run: the run ended.",
        "Not run: the run ended.",
    ]


class Nudge(Policy):
    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        return Inject("keep going") if state.step == 1 else Continue()


async def test_after_tools_can_inject_a_message(workspace: Path) -> None:
    run = agent_for(
        [reply("", call("noop")), "done"], workspace, tools=[noop], policies=[Nudge()]
    ).iter("go")
    events = [e async for e in run]
    notices = [e for e in events if isinstance(e, Notice)]
    assert [(n.text, n.source, n.to_model) for n in notices] == [("keep going", "Nudge", True)]
    assert run.state.messages[-2] == UserMessage(content="keep going")


# --- cancel ------------------------------------------------------------------------------------


async def test_cancel_before_a_model_call(workspace: Path) -> None:
    cancel = Cancel()
    cancel.cancel()
    result = await agent_for(["never"], workspace).run("go", cancel=cancel)
    assert result.stop_reason is StopReason.CANCELLED
    assert result.steps == 0


async def test_cancel_during_a_silent_model_call(workspace: Path) -> None:
    cancel = Cancel()

    async def hang(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.sleep(30)
        return "late"

    agent = Agent(model=FunctionModel(hang), workspace=workspace)
    asyncio.get_running_loop().call_later(0.05, cancel.cancel)
    result = await asyncio.wait_for(agent.run("go", cancel=cancel), 5)
    assert result.stop_reason is StopReason.CANCELLED
    assert result.detail == "cancelled while the model answered"


async def test_cancel_during_tools_stops_them_and_records_it(workspace: Path) -> None:
    cancel = Cancel()

    @tool
    async def sleepy() -> str:
        """Sleep."""
        cancel.cancel()
        await asyncio.sleep(30)
        return "late"

    run = agent_for([reply("", call("sleepy", "s")), "never"], workspace, tools=[sleepy]).iter(
        "go", cancel=cancel
    )
    events = await asyncio.wait_for(_collect(run), 5)
    assert run.state.finished is not None
    assert run.state.finished.stop_reason is StopReason.CANCELLED
    assert run.state.messages[-1] == ToolResultMessage(
        call_id="s",
        name="sleepy",
        content="Cancelled by the user before it finished.",
        is_error=True,
    )
    assert not any(isinstance(e, ModelRequested) and e.step == 2 for e in events)


async def test_cancel_from_another_thread(workspace: Path) -> None:
    cancel = Cancel()

    @tool
    async def sleepy() -> str:
        """Sleep."""
        await asyncio.sleep(30)
        return "late"

    run = agent_for([reply("", call("sleepy", "s"))], workspace, tools=[sleepy]).iter(
        "go", cancel=cancel
    )

    async def cancel_soon() -> None:
        await asyncio.sleep(0.05)
        await asyncio.to_thread(cancel.cancel)

    task = asyncio.create_task(cancel_soon())
    await asyncio.wait_for(_collect(run), 5)
    await task
    assert run.state.finished is not None
    assert run.state.finished.stop_reason is StopReason.CANCELLED


async def _collect(run: object) -> list[object]:
    return [e async for e in run]  # type: ignore[attr-defined]


def test_run_sync_wraps_the_async_api(workspace: Path) -> None:
    result = agent_for(["sync ok"], workspace).run_sync("go")
    assert result.final_answer == "sync ok"


async def test_function_model_sees_messages_and_tool_specs(workspace: Path) -> None:
    seen: list[list[str]] = []

    def answer(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append([t.name for t in tools])
        return f"{len(messages)} messages"

    result = await Agent(model=FunctionModel(answer), tools=[noop], workspace=workspace).run("go")
    assert result.final_answer == "2 messages"
    assert seen == [["noop", "final_answer"]]


async def test_model_errors_are_typed(workspace: Path) -> None:
    def fail(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise ModelError("upstream said 503")

    result = await Agent(model=FunctionModel(fail), workspace=workspace).run("go")
    assert (result.stop_reason, result.detail) == (
        StopReason.ERROR,
        "model call failed: upstream said 503",
    )


class Anchor(Policy):
    """Reminds the model of the goal before every round but the first, and stops on refusal."""

    async def before_round(self, state: RunState) -> BeforeRound:
        return Inject(f"Remember the goal: {state.goal}") if state.step else Continue()

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if "I refuse" in response.text:
            return Stop(StopReason.REFUSAL, "the model refused")
        return Continue()


async def test_before_round_injects_and_after_response_stops(workspace: Path) -> None:
    replies = [reply("", call("noop", "a")), reply("I refuse", call("noop", "b"))]
    agent = agent_for(replies, workspace, tools=[noop], policies=[Anchor()])
    result = await agent.run("count")
    assert (result.stop_reason, result.detail) == (StopReason.REFUSAL, "the model refused")
    assert result.messages[4] == UserMessage(content="Remember the goal: count")
    assert [
        c.id for m in result.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ] == [
        "a",
        "b",
    ]
    last = result.messages[-1]  # the refused response's call never ran
    assert last == ToolResultMessage(
        call_id="b", name="noop", content="Not run: the run ended.", is_error=True
    )


class StopAfterTools(Policy):
    async def after_tools(
        self, state: RunState, results: Sequence[ToolResultMessage]
    ) -> AfterTools:
        return Stop(StopReason.TOKEN_BUDGET, "spent")


async def test_after_tools_can_stop(workspace: Path) -> None:
    agent = agent_for(
        [reply("", call("noop")), "never"], workspace, tools=[noop], policies=[StopAfterTools()]
    )
    result = await agent.run("go")
    assert (result.stop_reason, result.detail, result.steps) == (
        StopReason.TOKEN_BUDGET,
        "spent",
        1,
    )


class BrokenStream:
    """A provider whose stream ends early, or fails with a non-reins exception."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.name = "broken"
        self.offline = True

    async def request(self, *args: object) -> object:
        raise NotImplementedError

    async def stream(self, *args: object) -> AsyncIterator[StreamItem]:
        yield ThinkingChunk("hmm ")
        if self.fail:
            raise ConnectionResetError("peer reset")


async def test_broken_streams_stop_the_run_with_error(workspace: Path) -> None:
    ended = await Agent(model=BrokenStream(fail=False), workspace=workspace).run("go")  # type: ignore[arg-type]
    assert (ended.stop_reason, ended.detail) == (
        StopReason.ERROR,
        "the model stream ended without a response",
    )
    failed = Agent(model=BrokenStream(fail=True), workspace=workspace)  # type: ignore[arg-type]
    run = failed.iter("go")
    events = [e async for e in run]
    assert [e.kind for e in events[-3:]] == ["model_request", "thinking_delta", "run_finished"]
    assert run.state.finished is not None
    assert run.state.finished.detail == "model call failed: ConnectionResetError: peer reset"


async def test_thinking_streams_as_deltas(workspace: Path) -> None:
    thought = AssistantMessage(thinking="let me see", text="ok")
    run = agent_for([thought], workspace).iter("go")
    events = [e async for e in run]
    assert [(e.kind, e.text) for e in events if isinstance(e, ThinkingDelta | TextDelta)] == [
        ("thinking_delta", "let me see"),
        ("text_delta", "ok"),
    ]
    assert run.state.messages[-1] == thought


def cut_off(*calls: ToolCall) -> ModelResponse:
    """A response the output-token limit cut short."""
    return ModelResponse(
        message=AssistantMessage(text="partial", tool_calls=calls),
        usage=Usage(output_tokens=100, requests=1),
        finish="max_tokens",
        model_name="scripted",
    )


async def test_a_cut_off_response_is_not_acted_on_and_the_model_recovers(
    workspace: Path,
) -> None:
    ran: list[str] = []

    @tool
    def effect(text: str) -> str:
        """Side effect."""
        ran.append(text)
        return "done"

    replies = [
        cut_off(call("effect", "a", text="trunc")),
        reply("", call("effect", "b", text="ok")),
        "fine",
    ]
    run = agent_for(replies, workspace, tools=[effect]).iter("go")
    events = [e async for e in run]
    assert ran == ["ok"]  # the truncated call never ran
    [rejected] = [e for e in events if isinstance(e, ResponseRejected)]
    assert rejected.source == "MaxTokensRecovery"
    assert "split a large write into several smaller actions" in rejected.observation
    assert run.state.finished is not None
    assert run.state.finished.final_answer == "fine"


async def test_two_failed_recoveries_stop_the_run_with_max_tokens(workspace: Path) -> None:
    replies = [cut_off(), cut_off(), cut_off(), "never"]
    result = await agent_for(replies, workspace).run("go")
    assert (result.stop_reason, result.steps) == (StopReason.MAX_TOKENS, 3)
    assert result.detail == "the output was cut off by the token limit 3 times in a row"
