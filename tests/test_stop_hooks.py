"""Stop hooks and the verification gate: policies that may refuse a final answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Checks,
    Guards,
    RunState,
    SQLiteLog,
    StopReason,
    ToolResultMessage,
    UsageError,
    UserMessage,
    tool,
)
from reins.events import EVENT, AnswerRejected, Event, Notice, RunFinished, RunStarted
from reins.policies import CommandHook
from reins.policies._verify import NO_VERIFIER
from reins.sandbox import SandboxMode, SandboxPolicy, run_process
from reins.testing import ScriptedModel

from .helpers import call, reply
from .test_cli import project, reins, script

__all__ = ["project"]  # a fixture


def agent_for(replies: Sequence[AssistantMessage | str], workspace: Path, **kw: object) -> Agent:
    return Agent(model=ScriptedModel(replies), workspace=workspace, **kw)  # type: ignore[arg-type]


async def events_of(agent: Agent, goal: str = "go") -> tuple[list[Event], RunState]:
    run = agent.iter(goal)
    events = [e async for e in run]
    return events, run.state


def rejections(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.source, e.observation) for e in events if isinstance(e, AnswerRejected)]


def told(reason: str) -> str:
    return f"Your final answer was not accepted: {reason}\nFix this, then answer again."


# Python stop hooks


def wants_tests(state: RunState, answer: str) -> str | None:
    return None if "tests pass" in answer else "say whether the tests pass"


async def test_a_function_hook_rejects_and_the_model_is_told(workspace: Path) -> None:
    agent = agent_for(
        ["done", "done, tests pass"], workspace, checks=Checks(stop_hooks=[wants_tests])
    )
    events, state = await events_of(agent)
    reason = told("stop hook wants_tests: say whether the tests pass")
    assert rejections(events) == [("StopHooks", reason)]
    assert state.finished is not None
    assert state.finished.stop_reason is StopReason.END_TURN
    assert state.finished.final_answer == "done, tests pass"
    assert UserMessage(content=reason) in state.messages
    assert state.answer_rejections == 1


async def test_an_async_hook_that_accepts_does_not_fire(workspace: Path) -> None:
    seen: list[tuple[int, str]] = []

    async def accept(state: RunState, answer: str) -> None:
        seen.append((state.step, answer))

    events, state = await events_of(
        agent_for(["all good"], workspace, checks=Checks(stop_hooks=[accept]))
    )
    assert seen == [(1, "all good")]
    assert rejections(events) == []
    assert state.finished is not None
    assert state.finished.final_answer == "all good"


async def test_the_cap_ends_the_run_with_missing_evidence_and_the_last_reason(
    workspace: Path,
) -> None:
    def never(state: RunState, answer: str) -> str:
        return f"no ({answer})"

    agent = agent_for(["a1", "a2", "a3", "a4", "a5"], workspace, checks=Checks(stop_hooks=[never]))
    events, state = await events_of(agent)
    assert rejections(events) == [
        ("StopHooks", told(f"stop hook never: no (a{i})")) for i in (1, 2, 3)
    ]
    assert state.finished == events[-1]
    assert isinstance(state.finished, RunFinished)
    assert state.finished.stop_reason is StopReason.MISSING_EVIDENCE
    assert state.finished.final_answer is None
    assert state.finished.detail == (
        "final answer rejected 4× (the cap is 3); last reason: stop hook never: no (a4)"
    )
    assert state.step == 4


async def test_a_cap_of_zero_ends_at_the_first_rejection(workspace: Path) -> None:
    agent = agent_for(
        ["done"], workspace, checks=Checks(stop_hooks=[wants_tests], max_rejections=0)
    )
    result = await agent.run("go")
    assert result.stop_reason is StopReason.MISSING_EVIDENCE
    assert result.detail == (
        "final answer rejected 1× (the cap is 0); last reason: "
        "stop hook wants_tests: say whether the tests pass"
    )


async def test_a_hook_that_raises_stops_the_run_with_error(workspace: Path) -> None:
    def broken(state: RunState, answer: str) -> str | None:
        raise RuntimeError("bug in the hook")

    result = await agent_for(["done"], workspace, checks=Checks(stop_hooks=[broken])).run("go")
    assert result.stop_reason is StopReason.ERROR
    assert result.detail.endswith("failed: RuntimeError: bug in the hook")


async def test_the_count_survives_a_resume(workspace: Path, sqlite_log: SQLiteLog) -> None:
    def never(state: RunState, answer: str) -> str:
        return "not yet"

    first = agent_for(
        ["a1", "a2"], workspace, checks=Checks(stop_hooks=[never], max_rejections=1), log=sqlite_log
    )
    capped = await first.run("go")
    assert capped.stop_reason is StopReason.MISSING_EVIDENCE
    assert (await first.state(capped.run_id)).answer_rejections == 1
    again = agent_for(
        ["a3"], workspace, checks=Checks(stop_hooks=[never], max_rejections=1), log=sqlite_log
    )
    resumed = await again.resume(capped.run_id)
    assert resumed.stop_reason is StopReason.MISSING_EVIDENCE  # no fresh allowance
    assert resumed.steps == 2  # the standing answer is judged again, without a model call
    assert resumed.detail == "final answer rejected 2× (the cap is 1); last reason: " + (
        "stop hook never: not yet"
    )
    fixed = agent_for(["a3"], workspace, log=sqlite_log)  # the hook is gone: it stands
    assert (await fixed.resume(capped.run_id)).final_answer == "a2"


# command hooks


REJECT_UNLESS_DONE = (
    "cat > event.json; grep -q DONE event.json || { echo 'write DONE' >&2; exit 2; }"
)


async def test_a_command_hook_reads_the_event_and_rejects_with_exit_2(workspace: Path) -> None:
    agent = agent_for(
        ["working", "DONE"], workspace, checks=Checks(stop_hooks=[REJECT_UNLESS_DONE])
    )
    events, state = await events_of(agent)
    assert rejections(events) == [
        ("StopHooks", told(f"stop hook `{REJECT_UNLESS_DONE}`: write DONE"))
    ]
    assert state.finished is not None
    assert state.finished.final_answer == "DONE"
    event = json.loads((workspace / "event.json").read_text())
    assert event == {
        "hook_event_name": "Stop",
        "session_id": state.session_id,
        "run_id": state.run_id,
        "step": 2,
        "workspace": state.config.workspace,
        "answer": "DONE",
        "rejections": 1,
        "stop_hook_active": True,
    }


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        # stderr is the reason: what the hook printed on stdout meanwhile is not
        ("echo 'checking...'; echo 'add a test' >&2; exit 2", "add a test"),
        ("echo 'add a test'; exit 2", "add a test"),  # nothing on stderr: stdout
        ("""echo '{"decision": "block", "reason": "add a test"}'""", "add a test"),
    ],
)
async def test_a_command_hook_says_why_as_claude_codes_stop_hook_does(
    workspace: Path, command: str, reason: str
) -> None:
    events, state = await events_of(
        agent_for(["a1", "a2"], workspace, checks=Checks(stop_hooks=[command], max_rejections=1))
    )
    assert rejections(events) == [("StopHooks", told(f"stop hook `{command}`: {reason}"))]
    assert state.finished is not None
    assert state.finished.stop_reason is StopReason.MISSING_EVIDENCE


async def test_a_command_hook_that_prints_other_json_accepts(workspace: Path) -> None:
    hook = """echo '{"decision": "approve"}'; echo 'noise' >&2"""
    events, state = await events_of(agent_for(["a1"], workspace, checks=Checks(stop_hooks=[hook])))
    assert rejections(events) == []
    assert state.finished is not None
    assert state.finished.final_answer == "a1"


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        ("echo oops >&2; exit 1", "exit 1: oops"),
        ("sleep 5", "timed out after 0.5 s"),
    ],
)
async def test_a_command_hook_that_fails_otherwise_stops_the_run_with_error(
    workspace: Path, command: str, detail: str
) -> None:
    hook = CommandHook(command=command, timeout=0.5)
    result = await agent_for(["done"], workspace, checks=Checks(stop_hooks=[hook])).run("go")
    assert result.stop_reason is StopReason.ERROR
    assert result.detail == f"stop hook `{command}` failed: {detail}"


def test_a_command_hook_that_could_check_nothing_is_refused_when_made() -> None:
    with pytest.raises(UsageError, match="a stop hook is an empty command"):
        CommandHook(command=" ")
    with pytest.raises(UsageError, match=r"stop hook `true`: timeout=0: it is seconds"):
        CommandHook(command="true", timeout=0)


async def test_a_blank_command_string_is_refused_when_the_agent_is_made(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    with pytest.raises(UsageError, match="a stop hook is an empty command"):
        agent_for(["done"], workspace, checks=Checks(stop_hooks=["  "]), log=sqlite_log)
    assert await sqlite_log.runs() == []  # no run started, none left unfinished


# the verification gate


CHECK = "grep -q fixed status.txt"


async def test_a_failing_check_rejects_until_the_model_fixes_the_file(workspace: Path) -> None:
    (workspace / "status.txt").write_text("broken\n")
    replies = [
        "done",
        reply("", call("read_file", "r1", path="status.txt")),
        reply("", call("write_file", "w1", path="status.txt", content="fixed\n")),
        "done now",
    ]
    events, state = await events_of(agent_for(replies, workspace, checks=[CHECK]))
    [(source, observation)] = rejections(events)
    assert source == "Checks"
    assert observation == told(f"check `{CHECK}` failed (exit 1); output tail:\n(no output)")
    evidence = [e for e in events if isinstance(e, Notice) and e.source == "Checks"]
    assert [(e.text, e.to_model) for e in evidence] == [
        (f"check `{CHECK}` passed (exit 0); output tail:\n(no output)", False)
    ]
    assert events[-1] == state.finished
    assert state.finished.stop_reason is StopReason.END_TURN
    assert state.finished.final_answer == "done now"
    assert events.index(evidence[0]) == len(events) - 2  # recorded just before the finish


async def test_checks_that_pass_at_once_record_each_ones_evidence(workspace: Path) -> None:
    checks = ["echo one", "printf 'a\\nb\\n'"]
    events, state = await events_of(agent_for(["done"], workspace, checks=checks))
    assert rejections(events) == []
    evidence = [e.text for e in events if isinstance(e, Notice) and e.source == "Checks"]
    assert evidence == [
        "check `echo one` passed (exit 0); output tail:\none",
        "check `printf 'a\\nb\\n'` passed (exit 0); output tail:\na\nb",
    ]
    assert state.config.checks == tuple(checks)


async def test_a_resume_runs_the_checks_the_run_was_started_with(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    checks = ["test -f done.txt"]
    first = agent_for(
        ["done"], workspace, checks=Checks(commands=checks, max_rejections=0), log=sqlite_log
    )
    failed = await first.run("go")
    assert failed.stop_reason is StopReason.MISSING_EVIDENCE
    (workspace / "done.txt").write_text("")
    later = agent_for(["done"], workspace, log=sqlite_log)  # no checks of its own
    resumed = await later.resume(failed.run_id)
    assert (resumed.stop_reason, resumed.final_answer) == (StopReason.END_TURN, "done")
    events = await sqlite_log.events(failed.run_id)
    assert [e.text for e in events if isinstance(e, Notice) and e.source == "Checks"] == [
        "check `test -f done.txt` passed (exit 0); output tail:\n(no output)"
    ]


async def test_checks_run_in_the_sandbox(workspace: Path) -> None:
    # The log's folder is read-only to commands, checks included.
    agent = agent_for(
        ["done"], workspace, checks=Checks(commands=["touch .git/x"], max_rejections=0)
    )
    (workspace / ".git").mkdir()
    result = await agent.run("go")
    assert result.stop_reason is StopReason.MISSING_EVIDENCE
    assert "check `touch .git/x` failed (exit 1)" in result.detail
    assert not (workspace / ".git" / "x").exists()


async def test_checks_come_before_stop_hooks_and_a_check_failure_skips_them(
    workspace: Path,
) -> None:
    asked: list[str] = []

    def hook(state: RunState, answer: str) -> None:
        asked.append(answer)

    replies = ["first", reply("", call("write_file", "w1", path="ok", content="")), "second"]
    agent = agent_for(replies, workspace, checks=Checks(commands=["test -f ok"], stop_hooks=[hook]))
    events, state = await events_of(agent)
    assert [s for s, _ in rejections(events)] == ["Checks"]
    assert asked == ["second"]  # not asked while the check failed
    assert state.finished is not None
    assert state.finished.final_answer == "second"


# the command line


def test_cli_config_hook_rejects_with_exit_2_and_the_cap_exits_9(project: Path) -> None:
    (project / "reins.toml").write_text(
        "stop_max_rejections = 1\n"
        "[[stop_hooks]]\n"
        "command = \"grep -q DONE || { echo 'say DONE' >&2; exit 2; }\"\n"
    )
    model = script(project / "s.json", ["working", "still working", "DONE"])
    capped = reins("run", "go", "-m", model, "-w", "ws", "--trust-project", cwd=project)
    assert capped.returncode == 9, capped.stderr
    assert "answer rejected by StopHooks" in capped.stdout
    assert "missing_evidence" in capped.stdout
    assert "last reason: stop hook" in capped.stdout
    assert "say DONE" in capped.stdout
    resumed = reins("resume", "last", "--trust-project", cwd=project)  # judged again
    assert resumed.returncode == 9


def test_cli_check_fails_then_passes(project: Path) -> None:
    replies = [
        "done",
        {
            "text": "",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "status.txt", "content": "fixed\n"}}
            ],
        },
        "FINAL_ANSWER: fixed",
    ]
    model = script(project / "s.json", replies)
    check = "grep -q fixed status.txt"
    done = reins("run", "fix it", "-m", model, "-w", "ws", "--check", check, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    events = [EVENT.validate_json(line) for line in done.stdout.splitlines()]
    [rejected] = [e for e in events if isinstance(e, AnswerRejected)]
    assert f"check `{check}` failed (exit 2)" in rejected.observation
    evidence = [e for e in events if isinstance(e, Notice) and e.source == "Checks"]
    assert [e.text.splitlines()[0] for e in evidence] == [
        f"check `{check}` passed (exit 0); output tail:"
    ]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "fixed"


# a `verify` tool that is not there


async def test_calling_verify_with_no_verifier_ends_with_missing_evidence(workspace: Path) -> None:
    replies = [reply("", call("verify", f"v{i}")) for i in range(5)]
    _, state = await events_of(agent_for(replies, workspace))
    results = [m for m in state.messages if isinstance(m, ToolResultMessage)]
    assert [(m.name, m.content, m.is_error) for m in results] == [
        ("verify", NO_VERIFIER, False)
    ] * 2
    assert state.finished is not None
    assert state.finished.stop_reason is StopReason.MISSING_EVIDENCE
    assert state.finished.detail == (
        "the model called `verify` 3 times with no automatic verifier available"
    )
    assert state.step == 3


async def test_verify_once_then_an_answer_is_fine(workspace: Path) -> None:
    replies = [reply("", call("verify", "v1")), "checked it myself: done"]
    result = await agent_for(replies, workspace).run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert result.final_answer == "checked it myself: done"


async def test_an_agent_with_its_own_verify_tool_is_left_alone(workspace: Path) -> None:
    @tool
    def verify() -> str:
        """Verify."""
        return "verified"

    replies = [reply("", call("verify", f"v{i}")) for i in range(4)] + ["done"]
    # The same call four times is a loop to the loop guard: this test is about NoVerifier.
    agent = agent_for(replies, workspace, tools=[verify], guards=Guards().without("loop"))
    result = await agent.run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert result.steps == 5


def test_cli_config_checks_then_flag_checks_and_resume_keeps_them(project: Path) -> None:
    (project / "reins.toml").write_text('checks = ["echo from-config"]\nstop_max_rejections = 0\n')
    model = script(project / "s.json", ["done"])
    check = "test -f ws-ready"
    args = ("--check", check, "--json", "--trust-project")
    failed = reins("run", "go", "-m", model, "-w", "ws", *args, cwd=project)
    assert failed.returncode == 9, failed.stderr
    events = [EVENT.validate_json(line) for line in failed.stdout.splitlines()]
    assert isinstance(events[0], RunStarted)
    assert events[0].config.checks == ("echo from-config", check)
    evidence = [e.text for e in events if isinstance(e, Notice) and e.source == "Checks"]
    assert evidence == []  # evidence is recorded when all pass; the failure says why not
    assert isinstance(events[-1], RunFinished)
    assert f"check `{check}` failed (exit 1)" in events[-1].detail
    (project / "ws" / "ws-ready").write_text("")  # fixed by hand: the standing answer passes
    (project / "reins.toml").write_text("")
    resumed = reins("resume", "last", "--json", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    events = [EVENT.validate_json(line) for line in resumed.stdout.splitlines()]
    evidence = [e.text for e in events if isinstance(e, Notice) and e.source == "Checks"]
    assert [t.splitlines()[0] for t in evidence] == [
        "check `echo from-config` passed (exit 0); output tail:",
        f"check `{check}` passed (exit 0); output tail:",
    ]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "done"


@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
async def test_run_process_feeds_stdin_in_and_out_of_the_sandbox(
    workspace: Path, mode: SandboxMode
) -> None:
    data = ("ünïcode line\n" * 20_000).encode()  # more than a pipe holds
    result = await run_process(
        "wc -c; exit 2", workspace=workspace, policy=SandboxPolicy(mode=mode), stdin=data
    )
    assert (result.exit_code, result.output.strip()) == (2, str(len(data)))
    nothing = await run_process("wc -c", workspace=workspace, policy=SandboxPolicy(mode=mode))
    assert nothing.output.strip() == "0"
