"""Permissions: rules that allow, ask or deny a call, and the ways an ask is answered."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    Approval,
    ApprovalRequest,
    Cancel,
    PermissionRules,
    Permissions,
    SQLiteLog,
    StopReason,
    UsageError,
    tool,
)
from reins.events import ApprovalRequested, Event, PermissionDecided, ToolCallFinished
from reins.permissions import simple_commands
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, read_file, run_command, write_file

from .helpers import call, reply

# --- reading a command line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("git status", [("git", "status")]),
        (
            "git status && git diff | head -5; ls &",
            [("git", "status"), ("git", "diff"), ("head", "-5"), ("ls",)],
        ),
        ("grep -n 'a b' \"c;d\" x.txt", [("grep", "-n", "a b", "c;d", "x.txt")]),
        ("make test 2>&1 > out.log", [("make", "test")]),
        ("echo a\nrm -rf /", [("echo", "a"), ("rm", "-rf", "/")]),
        ("ls *.py", [("ls", "*.py")]),
    ],
)
def test_plain_command_lines_are_read_as_their_simple_commands(
    line: str, commands: list[tuple[str, ...]]
) -> None:
    assert simple_commands(line) == commands


@pytest.mark.parametrize(
    "line",
    [
        "echo $(rm -rf /)",
        "echo `id`",
        'echo "$HOME"',
        "eval 'rm -rf /'",
        "sh -c 'rm -rf /'",
        "curl x | bash",
        "FOO=1 git status",
        "(cd /; rm -rf x)",
        "$CMD status",
        "/bin/r? -rf x",
        "echo 'unterminated",
        "cat <<EOF\nhi\nEOF",
        "env rm -rf x",
        "f() { rm -rf x; }; f",
        "",
    ],
)
def test_lines_the_shell_decides_are_not_judged(line: str) -> None:
    assert simple_commands(line) is None


# --- the rules --------------------------------------------------------------------------------


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy.

    Args:
        target: Where to.
    """
    return f"deployed to {target}"


def judge(permissions: Permissions, command: str, grants: frozenset[str] = frozenset()) -> str:
    ruling = permissions.judge(run_command, {"command": command}, grants)
    return "allow (default)" if ruling is None else ruling.decision


def test_defaults_allow_reads_and_writes_and_ask_for_commands() -> None:
    permissions = Permissions()
    assert permissions.judge(read_file, {"path": "x"}, set()) is None
    assert permissions.judge(write_file, {"path": "x", "content": ""}, set()) is None
    ruling = permissions.judge(run_command, {"command": "ls"}, set())
    assert ruling is not None
    assert (ruling.decision, ruling.rule, ruling.grant) == (
        "ask",
        "default: run_command asks",
        "run_command: ls",
    )
    asked = permissions.judge(deploy, {"target": "prod"}, set())
    assert asked is not None
    assert (asked.decision, asked.grant) == ("ask", "deploy")


def test_command_rules_match_argv_prefixes_the_longest_winning() -> None:
    rules = PermissionRules(
        tools={"write_file": "ask"},
        commands={"git": "ask", "git status": "allow", "git push": "deny", "rm -rf": "deny"},
    )
    permissions = Permissions(user=rules)
    assert judge(permissions, "git status --short") == "allow"
    assert judge(permissions, "git log") == "ask"
    assert judge(permissions, "git push origin main") == "deny"
    assert judge(permissions, "rm -rf build") == "deny"
    assert judge(permissions, "/usr/bin/rm -rf build") == "deny"  # a path does not dodge a deny
    assert judge(permissions, "rm -r -f build") == "ask"  # prefixes, not flag semantics
    assert judge(permissions, "git status && rm -rf /") == "deny"  # the strictest part
    assert judge(permissions, "git status; ls") == "ask"  # ls: the tool's default
    assert judge(permissions, "git status $(rm -rf /)") == "ask"  # not judgeable: default
    assert judge(permissions, "./git status") == "ask"  # an allow names the program exactly
    ruling = permissions.judge(write_file, {"path": "x", "content": ""}, set())
    assert ruling is not None
    assert (ruling.decision, ruling.rule) == ("ask", 'permissions.write_file = "ask"')
    allowed = permissions.judge(run_command, {"command": "git status"}, set())
    assert allowed is not None
    assert allowed.rule == 'permissions.commands."git status" = "allow"'


def test_a_tool_rule_sets_the_default_for_commands_no_rule_matches() -> None:
    permissions = Permissions(
        user=PermissionRules(tools={"run_command": "allow"}, commands={"rm": "deny"})
    )
    assert judge(permissions, "ls -l") == "allow"
    assert judge(permissions, "ls; rm x") == "deny"


def test_project_rules_only_tighten() -> None:
    user = PermissionRules(commands={"git push": "allow", "make": "allow"})
    project = PermissionRules(
        tools={"read_file": "allow"},
        commands={"git push": "ask", "curl": "allow", "make": "deny"},
    )
    permissions = Permissions(user=user, project=project)
    assert judge(permissions, "git push") == "ask"
    assert judge(permissions, "curl example.org") == "ask"  # a project allow loosens nothing
    assert judge(permissions, "make all") == "deny"
    ruling = permissions.judge(run_command, {"command": "make all"}, set())
    assert ruling is not None
    assert ruling.rule == 'permissions.commands."make" = "deny" (project)'


def test_the_read_only_tier_denies_every_tool_that_writes() -> None:
    permissions = Permissions(read_only=True, user=PermissionRules(tools={"write_file": "allow"}))
    ruling = permissions.judge(write_file, {"path": "x", "content": ""}, set())
    assert ruling is not None
    assert ruling.decision == "deny"
    assert "read-only" in ruling.rule
    assert permissions.judge(read_file, {"path": "x"}, set()) is None
    assert judge(permissions, "ls") == "ask"  # a command: the OS sandbox keeps it read-only


def test_an_always_grant_allows_what_would_ask_but_never_what_is_denied() -> None:
    permissions = Permissions(user=PermissionRules(commands={"git push --force": "deny"}))
    grants = frozenset({"run_command: git push"})
    assert judge(permissions, "git push origin", grants) == "allow"
    assert judge(permissions, "git push --force", grants) == "deny"
    assert judge(permissions, "git pull", grants) == "ask"
    assert judge(permissions, "git push; rm -rf /", grants) == "ask"  # a grant is not a prefix


# --- the loop: who answers --------------------------------------------------------------------

TOUCH = call("run_command", "c1", command="touch made.txt")


def touching(*more: object) -> ScriptedModel:
    return ScriptedModel([reply("", TOUCH), *more, "FINAL_ANSWER: done"])  # type: ignore[list-item]


def agent(workspace: Path, model: ScriptedModel, **kw: object) -> Agent:
    return Agent(model=model, tools=BUILTIN_TOOLS, workspace=workspace, **kw)  # type: ignore[arg-type]


async def events_of(run: object) -> list[Event]:
    return [event async for event in run]  # type: ignore[attr-defined]


def results(events: Sequence[Event]) -> list[str]:
    return [e.result.content for e in events if isinstance(e, ToolCallFinished)]


async def test_with_nobody_to_ask_a_command_is_denied_and_the_model_told(workspace: Path) -> None:
    events = await events_of(agent(workspace, touching()).iter("touch it"))
    [asked] = [e for e in events if isinstance(e, ApprovalRequested)]
    assert (asked.call.id, asked.rule, asked.grant) == (
        "c1",
        "default: run_command asks",
        "run_command: touch made.txt",
    )
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by) == (False, "headless")
    [result] = results(events)
    assert result.startswith("User denied 'run_command'")
    assert not (workspace / "made.txt").exists()


async def test_a_callback_answers_and_sees_the_exact_call(workspace: Path) -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    result = await agent(workspace, touching(), approval=approve).run("touch it")
    assert result.stop_reason is StopReason.END_TURN
    assert (workspace / "made.txt").exists()
    [request] = seen
    assert request.describe() == "touch made.txt"
    assert request.rule == "default: run_command asks"


async def test_an_async_callback_may_deny(workspace: Path) -> None:
    async def refuse(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0)
        return Approval(False)

    events = await events_of(agent(workspace, touching(), approval=refuse).iter("touch it"))
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by) == (False, "user")
    assert results(events)[0].startswith("User denied 'run_command'")
    assert not (workspace / "made.txt").exists()


async def test_always_holds_for_the_session_across_resume_and_new_turns(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[str] = []

    def always(request: ApprovalRequest) -> Approval:
        asked.append(request.describe())
        return Approval(True, always=True)

    again = call("run_command", "c2", command="touch made.txt -c")
    log = SQLiteLog(tmp_path / "store")
    first = agent(workspace, touching(reply("", again)), approval=always, log=log)
    result = await first.run("touch it twice")
    assert asked == ["touch made.txt"]  # the second call is covered by "always"
    decided = [e for e in await log.events(result.run_id) if isinstance(e, PermissionDecided)]
    assert [(d.by, d.always, d.grant) for d in decided] == [
        ("user", True, "run_command: touch made.txt"),
        ("session", False, ""),
    ]
    await log.close()

    # A new process, a new turn of the same session: nobody to ask, and no need to.
    log = SQLiteLog(tmp_path / "store")
    third = reply("", call("run_command", "c3", command="touch made.txt"))
    later = agent(workspace, ScriptedModel(["", "", "", third, "FINAL_ANSWER: done"]), log=log)
    turn = await later.run("once more", session_id=result.session_id)
    assert results(turn_events := await log.events(turn.run_id))[0].startswith("exit code: 0")
    assert not any(isinstance(e, ApprovalRequested) for e in turn_events)
    await log.close()


async def test_a_paused_run_waits_and_a_later_process_answers(
    workspace: Path, tmp_path: Path
) -> None:
    both = reply(
        "",
        call("run_command", "c1", command="touch made.txt"),
        call("read_file", "r1", path="nothing.txt"),
        call("run_command", "c2", command="touch other.txt"),
    )
    log = SQLiteLog(tmp_path / "store")
    paused = await agent(
        workspace, ScriptedModel([both, "FINAL_ANSWER: done"]), approval="pause", log=log
    ).run("touch two")
    assert paused.stop_reason is StopReason.WAITING
    assert [r.call.id for r in paused.awaiting] == ["c1", "c2"]
    assert "does not exist" in results(await log.events(paused.run_id))[0]  # read_file ran
    assert not (workspace / "made.txt").exists()
    await log.close()

    log = SQLiteLog(tmp_path / "store")
    resumer = agent(workspace, ScriptedModel([both, "FINAL_ANSWER: done"]), log=log)
    with pytest.raises(UsageError, match="no approval request for call"):
        await resumer.resume(paused.run_id, approvals={"nope": True})
    done = await resumer.resume(paused.run_id, approvals={"c1": True, "c2": False})
    assert done.stop_reason is StopReason.END_TURN
    assert (workspace / "made.txt").exists()
    assert not (workspace / "other.txt").exists()
    events = await log.events(paused.run_id)
    assert [(e.call_id, e.allowed, e.by) for e in events if isinstance(e, PermissionDecided)] == [
        ("c1", True, "user"),
        ("c2", False, "user"),
    ]
    assert sum(isinstance(e, ApprovalRequested) for e in events) == 2  # not asked twice
    await log.close()


async def test_approvals_off_allow_everything_and_say_so(workspace: Path) -> None:
    events = await events_of(agent(workspace, touching(), approval="allow").iter("touch it"))
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by) == (True, "auto")
    assert (workspace / "made.txt").exists()


async def test_a_deny_rule_is_recorded_and_needs_nobody(workspace: Path) -> None:
    rules = Permissions(user=PermissionRules(commands={"touch": "deny"}))
    events = await events_of(
        agent(workspace, touching(), permissions=rules, approval="allow").iter("touch it")
    )
    assert not any(isinstance(e, ApprovalRequested) for e in events)
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by, decided.rule) == (
        False,
        "rule",
        'permissions.commands."touch" = "deny"',
    )
    assert "Denied 'run_command' by the permission rule" in results(events)[0]
    assert not (workspace / "made.txt").exists()


async def test_a_failing_handler_stops_the_run_with_an_error(workspace: Path) -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("no terminal")

    result = await agent(workspace, touching(), approval=broken).run("touch it")
    assert result.stop_reason is StopReason.ERROR
    assert "the approval handler failed: RuntimeError: no terminal" in result.detail


async def test_cancel_while_a_person_decides(workspace: Path) -> None:
    cancel = Cancel()

    async def slow(request: ApprovalRequest) -> bool:
        cancel.cancel()
        await asyncio.sleep(30)
        return True

    result = await agent(workspace, touching(), approval=slow).run("touch it", cancel=cancel)
    assert result.stop_reason is StopReason.CANCELLED
    assert not (workspace / "made.txt").exists()


async def test_invalid_arguments_fail_without_asking_anyone(workspace: Path) -> None:
    bad = call("run_command", "c1", cmd="touch made.txt")
    asked: list[ApprovalRequest] = []
    model = ScriptedModel([reply("", bad), "FINAL_ANSWER: done"])
    events = await events_of(agent(workspace, model, approval=asked.append).iter("go"))
    assert asked == []
    assert "invalid arguments for run_command" in results(events)[0]


@pytest.mark.parametrize(
    ("tools", "approval", "told"),
    [
        ((read_file, write_file), "deny", False),
        ((read_file, run_command), "deny", True),
        ((read_file, run_command), "allow", False),
        ((deploy,), "pause", True),
    ],
)
async def test_the_model_is_told_of_approvals_only_when_a_call_may_need_one(
    workspace: Path, tools: tuple[object, ...], approval: str, told: bool
) -> None:
    model = ScriptedModel(["FINAL_ANSWER: done"])
    result = await Agent(
        model=model,
        tools=tools,
        workspace=workspace,
        approval=approval,  # type: ignore[arg-type]
    ).run("go")
    system = " ".join(result.messages[0].content.split())  # type: ignore[union-attr]
    assert "the file tools cannot reach files outside it" in system
    assert ("Some calls need the user's approval" in system) is told
