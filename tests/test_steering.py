"""Steering a run while it runs, and follow-ups that start the next turn."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from reins import (
    Agent,
    AgentRun,
    AssistantMessage,
    Budgets,
    Cancel,
    Message,
    RunState,
    SQLiteLog,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    UsageError,
    UserMessage,
    tool,
)
from reins.events import (
    EVENT,
    ModelRequested,
    ResponseRejected,
    RunFinished,
    RunStarted,
    Steered,
    ToolCallFinished,
)
from reins.testing import FunctionModel

from .helpers import call, reply
from .test_cli import REINS, _env, script

STEER = "[STEER FROM USER — act on this now] "
RECONSIDER = (
    "Your tool calls above were not run: the user sent a new instruction (below) after you "
    "chose them. Reconsider them in its light: make them again if they are still right, or "
    "replace them."
)


class Recording:
    """A model that records what it was sent and replies from a script."""

    def __init__(self, replies: list[AssistantMessage | str]) -> None:
        self.replies = replies
        self.seen: list[list[Message]] = []

    def __call__(self, messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        self.seen.append(messages)
        return self.replies[len(self.seen) - 1]


def users(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if isinstance(m, UserMessage)]


async def test_a_steer_sent_before_the_first_round_is_told_at_once(workspace: Path) -> None:
    model = Recording(["ok, the other file"])
    run = Agent(model=FunctionModel(model), workspace=workspace).iter("edit a")
    run.steer("edit b instead")
    events = [e async for e in run]
    assert users(model.seen[0])[-2:] == ["edit a", STEER + "edit b instead"]
    steered = [e for e in events if isinstance(e, Steered)]
    assert [e.text for e in steered] == ["edit b instead"]
    assert isinstance(events[events.index(steered[0]) + 1], ModelRequested)


async def test_a_steer_from_another_thread_is_told_before_the_next_round(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    runs: list[AgentRun] = []

    @tool
    def work() -> str:
        """Work a while."""
        sender = threading.Thread(target=runs[0].steer, args=("stop and summarize",))
        sender.start()
        sender.join()
        return "worked"

    model = Recording([reply("", call("work", "w1")), "summary"])
    agent = Agent(model=FunctionModel(model), tools=[work], workspace=workspace, log=sqlite_log)
    runs.append(agent.iter("go"))
    events = [e async for e in runs[0]]
    kinds = [e.kind for e in events]
    at = kinds.index("steered")
    assert kinds[at - 1 : at + 2] == ["tool_call_finished", "steered", "model_request"]
    assert "response_rejected" not in kinds  # it came while the call ran: nothing to reconsider
    assert isinstance(events[at - 1], ToolCallFinished)
    assert users(model.seen[1])[-1] == STEER + "stop and summarize"
    # The log holds it: a fold (resume, replay) sees the same history.
    folded = RunState.fold(await sqlite_log.events(runs[0].state.run_id))
    assert folded.messages == runs[0].state.messages
    assert UserMessage(content=STEER + "stop and summarize") in folded.messages


async def test_no_steer_no_steered_event(workspace: Path) -> None:
    model = Recording([reply("", call("final_answer", "f", answer="done"))])
    run = Agent(model=FunctionModel(model), workspace=workspace).iter("go")
    events = [e async for e in run]
    assert not [e for e in events if isinstance(e, Steered | ResponseRejected)]
    assert [e.kind for e in events if isinstance(e, RunStarted | RunFinished)] == [
        "run_started",
        "run_finished",
    ]


class SteeredWhileAnswering:
    """A run whose model is sent a steer while it answers the first request: after it chose
    to edit a and c, before the loop runs those calls. Then it replies with `later`."""

    def __init__(self, workspace: Path, *later: AssistantMessage | str, **kw: Any) -> None:
        chosen = reply("", call("edit", "e1", path="a"), call("edit", "e2", path="c"))
        self.model = Recording([chosen, *later])
        self.edited: list[str] = []

        @tool
        def edit(path: str) -> str:
            """Edit a file.

            Args:
                path: The file.
            """
            self.edited.append(path)
            return f"edited {path}"

        model = FunctionModel(self.answer)
        self.agent = Agent(model=model, tools=[edit], workspace=workspace, **kw)
        self.run = self.agent.iter("edit a and c")

    def answer(self, messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        if not self.model.seen:
            self.run.steer("edit b instead")
        return self.model(messages, tools)


async def test_a_steer_after_the_model_chose_its_calls_has_it_reconsider_them(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    steered = SteeredWhileAnswering(
        workspace, reply("", call("edit", "e3", path="b")), "ok", log=sqlite_log
    )
    events = [e async for e in steered.run]

    assert steered.edited == ["b"]  # a and c were never edited: the model chose again
    kinds = [e.kind for e in events]
    at = kinds.index("response_rejected")
    assert kinds[at - 1 : at + 3] == [
        "model_response",
        "response_rejected",
        "steered",
        "model_request",
    ]
    rejected = events[at]
    assert isinstance(rejected, ResponseRejected)
    assert (rejected.step, rejected.source, rejected.observation) == (1, "steering", RECONSIDER)
    # The calls' results close the step before any user message (as the APIs require).
    not_run = "Not run: the user sent a new instruction after you chose this call."
    assert steered.model.seen[1][-5:] == [
        reply("", call("edit", "e1", path="a"), call("edit", "e2", path="c")),
        ToolResultMessage(call_id="e1", name="edit", content=not_run, is_error=True),
        ToolResultMessage(call_id="e2", name="edit", content=not_run, is_error=True),
        UserMessage(content=RECONSIDER),
        UserMessage(content=STEER + "edit b instead"),
    ]
    state = steered.run.state
    assert state.finished is not None
    assert state.finished.final_answer == "ok"
    # Replay and resume fold the same history from the log.
    folded = RunState.fold(await sqlite_log.events(state.run_id))
    assert folded.messages == state.messages


async def test_a_run_stopped_right_after_a_reconsidering_steer_resumes_into_it(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    steered = SteeredWhileAnswering(
        workspace,
        reply("", call("edit", "e3", path="b")),
        "ok",
        log=sqlite_log,
        budgets=Budgets(max_steps=1),
    )
    capped = await steered.run.result()
    assert capped.stop_reason is StopReason.MAX_STEPS
    assert steered.edited == []

    done = await steered.agent.resume(capped.run_id, max_steps=3)
    assert (done.stop_reason, done.final_answer) == (StopReason.END_TURN, "ok")
    assert steered.edited == ["b"]
    *_, reconsider, steer, note = users(steered.model.seen[1])
    assert (reconsider, steer) == (RECONSIDER, STEER + "edit b instead")
    assert note.startswith("[CONTINUING AFTER A CAP]")


async def test_a_steer_is_not_counted_as_a_repair(workspace: Path) -> None:
    """Empty replies are repaired twice in a row, then stop the run; the steer's rejection
    before them is none of those."""
    steered = SteeredWhileAnswering(workspace, "", "", "done")
    result = await steered.run.result()
    assert (result.stop_reason, result.final_answer) == (StopReason.END_TURN, "done")


async def test_a_follow_up_starts_the_next_turn_when_the_run_ends(workspace: Path) -> None:
    model = Recording(["first answer", "second answer"])
    run = Agent(model=FunctionModel(model), workspace=workspace).iter("first goal")
    run.follow_up("second goal")
    events = [e async for e in run]
    started = [e for e in events if isinstance(e, RunStarted)]
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.goal for e in started] == ["first goal", "second goal"]
    assert [e.final_answer for e in finished] == ["first answer", "second answer"]
    assert started[0].session_id == started[1].session_id
    assert started[0].run_id != started[1].run_id
    assert users(model.seen[1])[-2:] == ["first goal", "second goal"]


async def test_result_follows_the_follow_ups_and_a_late_steer_becomes_one(
    workspace: Path,
) -> None:
    runs: list[AgentRun] = []

    def late(messages: list[Message], tools: list[ToolSpec]) -> str:
        if len(runs) == 1:
            runs[0].steer("one more thing")  # while the final answer is being written
            runs.append(runs[0])
            return "done"
        return f"then: {users(messages)[-1]}"

    runs.append(Agent(model=FunctionModel(late), workspace=workspace).iter("go"))
    result = await runs[0].result()
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "then: one more thing"


async def test_a_cancelled_run_starts_no_follow_up(workspace: Path) -> None:
    cancel = Cancel()
    cancel.cancel()  # before it starts: it ends before its first model call
    model = Recording(["never asked"])
    run = Agent(model=FunctionModel(model), workspace=workspace).iter("go", cancel=cancel)
    run.follow_up("never")
    result = await run.result()
    assert result.stop_reason is StopReason.CANCELLED
    assert model.seen == []


SLEEPS_THEN_ANSWERS = [
    {"text": "", "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 2"}}]},
    "FINAL_ANSWER: steered",
]


def piped(tmp_path: Path, *flags: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """`reins run ... --json FLAGS`, `stdin` piped in."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    model = script(tmp_path / "s.json", SLEEPS_THEN_ANSWERS)
    return subprocess.run(
        [*REINS, "run", *flags, "-m", model, "-w", "ws", "--yes", "--json"],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )


def test_a_piped_line_steers_only_with_steer_stdin(tmp_path: Path) -> None:
    done = piped(tmp_path, "go", stdin="a file piped in for another reason\n")
    assert done.returncode == 0, done.stderr
    events = [EVENT.validate_json(line) for line in done.stdout.splitlines()]
    assert not [e for e in events if isinstance(e, Steered)]
    assert done.stderr == (
        "stdin is not a terminal: its lines do not steer the run (pass --steer-stdin for that; "
        "before 0.2 they did)\n"
    )


def test_reins_run_dash_reads_the_goal_from_stdin(tmp_path: Path) -> None:
    done = piped(tmp_path, "-", stdin="Summarize the notes.\nKeep it short.\n")
    assert done.returncode == 0, done.stderr
    started = EVENT.validate_json(done.stdout.splitlines()[0])
    assert isinstance(started, RunStarted)
    assert started.goal == "Summarize the notes.\nKeep it short."
    assert done.stderr == ""  # stdin was the goal: nothing left to steer, nothing dropped
    empty = piped(tmp_path, "-", stdin="\n")
    assert (empty.returncode, empty.stderr) == (
        2,
        "error: reins run -: stdin held no goal (it was empty)\n",
    )
    both = piped(tmp_path, "-", "--steer-stdin", stdin="go\n")
    assert both.returncode == 2
    assert "stdin is the goal, so it cannot steer too (--steer-stdin)" in both.stderr


def test_a_line_typed_while_reins_run_runs_steers_it(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = script(tmp_path / "s.json", SLEEPS_THEN_ANSWERS)
    process = subprocess.Popen(
        [*REINS, "run", "go", "-m", model, "-w", "ws", "--yes", "--json", "--steer-stdin"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    out, errors = process.communicate("use the other file\n", timeout=60)
    assert process.returncode == 0, errors
    events = [EVENT.validate_json(line) for line in out.splitlines()]
    assert [e.text for e in events if isinstance(e, Steered)] == ["use the other file"]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "steered"


async def test_a_run_is_steered_by_its_session_id_while_it_runs(workspace: Path) -> None:
    runs: list[AgentRun] = []

    @tool
    def work() -> str:
        """Work a while."""
        agent.steer(runs[0].state.session_id, "use the other file")
        return "worked"

    model = Recording([reply("", call("work", "w1")), "done"])
    agent = Agent(model=FunctionModel(model), tools=[work], workspace=workspace)
    runs.append(agent.iter("go"))
    result = await runs[0].result()
    assert users(model.seen[1])[-1] == STEER + "use the other file"
    # Once the run ended, its session id steers nothing.
    with pytest.raises(UsageError, match=f"no run of session {result.session_id} is running"):
        agent.steer(result.session_id, "too late")
    with pytest.raises(UsageError, match="no run of session nope"):
        agent.steer("nope", "hello")
