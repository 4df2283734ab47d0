"""The file tools cannot plant code that a program the user runs later executes unasked: git's
folder (hooks, core.fsmonitor), reins's project folder, the editors' and hook managers' files
(issue 26, item 1). A write there is put to a person each time, the path shown; no rule, no
"always", no --yes allows it, and with nobody to ask it is denied."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reins import (
    Agent,
    Approval,
    ApprovalRequest,
    PermissionRules,
    Permissions,
    SQLiteLog,
    StopReason,
    ToolCall,
    ToolContext,
    Workspace,
    tool,
)
from reins.events import ApprovalRequested, PermissionDecided, ToolCallFinished
from reins.sandbox import SandboxPolicy, run_process
from reins.sandbox._code_paths import hooks_path
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, ToolExecutor

from ..helpers import call, reply
from ..terminal import run_in_terminal
from ..test_cli import reins, script
from ..test_sandbox import needs_bwrap

FSMONITOR = '[core]\n\tfsmonitor = "touch PWNED; false"\n'
HOOK = "#!/bin/sh\ntouch PWNED\n"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture
def repo(workspace: Path) -> Path:
    git("init", "-q", ".", cwd=workspace)
    return workspace


async def attempt(
    workspace: Path, *calls: ToolCall, approval: Any = "deny", **kw: Any
) -> list[object]:
    """The events of a run whose model makes `calls`, then finishes."""
    model = ScriptedModel([reply("", *calls), "FINAL_ANSWER: done"])
    agent = Agent(model=model, tools=BUILTIN_TOOLS, workspace=workspace, approval=approval, **kw)
    return [event async for event in agent.iter("plant it")]


def results(events: Sequence[object]) -> list[str]:
    return [e.result.content for e in events if isinstance(e, ToolCallFinished)]


def asked(events: Sequence[object]) -> list[ApprovalRequested]:
    return [e for e in events if isinstance(e, ApprovalRequested)]


def git_status_plants_nothing(repo: Path) -> bool:
    """The user's next `git status`, on the host: did it run what the model planted?"""
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, timeout=30, check=False)
    return not (repo / "PWNED").exists()


# --- the review's reproductions ---------------------------------------------------------------


async def test_core_fsmonitor_cannot_be_planted_for_the_users_next_git_status(repo: Path) -> None:
    before = (repo / ".git" / "config").read_text()
    events = await attempt(repo, call("write_file", "w", path=".git/config", content=FSMONITOR))
    [result] = results(events)
    assert result.startswith("User denied 'write_file': it needs a person's approval")
    assert ".git/config runs code later: git runs its hooks" in result
    assert "nobody can be asked in this run" in result
    assert (repo / ".git" / "config").read_text() == before
    assert git_status_plants_nothing(repo)


@needs_bwrap
async def test_an_allowed_git_status_does_not_run_a_planted_command_at_once(repo: Path) -> None:
    """`git status` allowed by a rule, every other command denied: the planted fsmonitor
    would have run the command the rules deny."""
    rules = Permissions(
        user=PermissionRules(tools={"run_command": "deny"}, commands={"git status": "allow"})
    )
    events = await attempt(
        repo,
        call("write_file", "w", path=".git/config", content=FSMONITOR),
        call("run_command", "r", command="git status"),
        permissions=rules,
    )
    denied, status = results(events)
    assert denied.startswith("User denied 'write_file'")
    assert status.startswith("exit code: 0")
    assert not (repo / "PWNED").exists()


# --- the same for every way in, and every place of the table ----------------------------------

PLACES = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".git/hooks/post-checkout",
    "nested/.git/config",  # a repository kept inside the workspace's
    "nested/.git/hooks/pre-commit",
    ".Git/hooks/pre-commit",  # what a case-insensitive disk (macOS) takes for .git
    ".g\u200cit/config",  # what HFS+ takes for .git
    ".git./config",  # what NTFS takes for .git
    ".reins/config.toml",
    ".envrc",
    "sub/.envrc",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    "team.code-workspace",
    ".devcontainer/devcontainer.json",
    ".devcontainer.json",
    ".pre-commit-config.yaml",
    ".husky/pre-commit",
    "lefthook.yml",
    ".lefthook/pre-commit/run.sh",
]


@pytest.mark.parametrize("path", PLACES)
async def test_write_file_is_denied_with_nobody_to_ask(repo: Path, path: str) -> None:
    (repo / "nested").mkdir()
    git("init", "-q", ".", cwd=repo / "nested")
    existed = (repo / path).exists()
    events = await attempt(repo, call("write_file", "w", path=path, content=HOOK))
    [request] = asked(events)
    assert request.rule.startswith(f"{path} runs code later: ")
    assert request.grant == ""  # nothing an "always" could cover
    assert results(events)[0].startswith("User denied 'write_file'")
    assert (repo / path).exists() == existed
    assert not existed or (repo / path).read_text() != HOOK


@pytest.mark.parametrize("path", [".git/config", ".envrc", ".vscode/tasks.json"])
async def test_edit_file_is_denied_with_nobody_to_ask(repo: Path, path: str) -> None:
    (repo / path).parent.mkdir(exist_ok=True)
    (repo / path).write_text("[core]\n\tbare = false\n")
    events = await attempt(repo, call("edit_file", "e", path=path, old="bare", new="fsmonitor"))
    [request] = asked(events)
    assert request.rule.startswith(f"{path} runs code later: ")
    assert results(events)[0].startswith("User denied 'edit_file'")
    assert "fsmonitor" not in (repo / path).read_text()


async def test_any_tool_that_writes_a_path_is_asked_too(repo: Path) -> None:
    @tool(path_args=("target",))
    def save(ctx: ToolContext, target: str, text: str) -> str:
        """Save text to a file."""
        (ctx.workspace.resolve(target, write=True)).write_text(text)
        return "saved"

    model = ScriptedModel(
        [reply("", call("save", "s", target=".git/hooks/post-checkout", text=HOOK)), "done"]
    )
    agent = Agent(model=model, tools=[save], workspace=repo)
    events = [event async for event in agent.iter("plant it")]
    [request] = asked(events)
    assert request.rule.startswith(".git/hooks/post-checkout runs code later")
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


async def test_a_symlink_into_git_is_asked_by_where_it_leads(repo: Path) -> None:
    (repo / "hooks").symlink_to(".git/hooks")
    (repo / "cfg").symlink_to(".git/config")
    events = await attempt(
        repo,
        call("write_file", "w1", path="hooks/pre-commit", content=HOOK),
        call("write_file", "w2", path="cfg", content=FSMONITOR),
    )
    assert [r.rule.split(" runs")[0] for r in asked(events)] == [
        ".git/hooks/pre-commit",
        ".git/config",
    ]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert git_status_plants_nothing(repo)


async def test_a_git_folder_a_dot_git_file_points_to_is_found_by_its_content(
    workspace: Path,
) -> None:
    """A worktree's or a submodule's `.git` is a file, `gitdir: PATH`: the folder it names is
    a repository's, whatever its name."""
    git("init", "-q", "--separate-git-dir", str(workspace / "meta"), "sub", cwd=workspace)
    assert (workspace / "sub" / ".git").read_text().startswith("gitdir:")
    events = await attempt(
        workspace,
        call("write_file", "w1", path="meta/config", content=FSMONITOR),
        call("write_file", "w2", path="meta/hooks/post-checkout", content=HOOK),
        call("write_file", "w3", path="sub/.git", content="gitdir: ../planted\n"),
    )
    rules = [r.rule for r in asked(events)]
    assert rules[0].startswith("meta/config runs code later: a git folder (HEAD with objects/")
    assert rules[1].startswith("meta/hooks/post-checkout runs code later: a git folder")
    assert rules[2].startswith("sub/.git runs code later: git runs")
    assert git_status_plants_nothing(workspace / "sub")
    assert (workspace / "sub" / ".git").read_text().startswith("gitdir:")


@needs_bwrap
async def test_commands_cannot_write_the_git_folder_a_dot_git_file_points_to(
    workspace: Path,
) -> None:
    git("init", "-q", "--separate-git-dir", str(workspace / "meta"), "sub", cwd=workspace)
    result = await run_process(
        "echo x >> meta/config; echo x >> sub/.git; touch sub/ok",
        workspace=workspace,
        policy=SandboxPolicy(),
    )
    assert result.output.count("Read-only file system") == 2, result.output
    assert "x" not in (workspace / "meta" / "config").read_text().split()
    assert (workspace / "sub" / "ok").exists()


async def test_the_folder_core_hooks_path_names_is_a_hooks_folder(repo: Path) -> None:
    git("config", "core.hooksPath", "tools/hooks", cwd=repo)
    events = await attempt(
        repo, call("write_file", "w", path="tools/hooks/pre-commit", content=HOOK)
    )
    [request] = asked(events)
    assert request.rule.startswith("tools/hooks/pre-commit runs code later: git runs the hooks")
    assert not (repo / "tools" / "hooks" / "pre-commit").exists()


def test_core_hooks_path_is_read_from_a_hostile_config_in_linear_time() -> None:
    """A regex whose `\\s*` spanned lines took quadratic time: a cloned repository's config
    of a megabyte of blank lines held every run for hours."""
    start = time.monotonic()
    assert hooks_path("\n" * (1 << 20) + "[core]\n" + " " * (1 << 20) + "\n") is None
    assert time.monotonic() - start < 5  # it was 7.7 s at 32 thousand lines, growing as n²
    config = '[user]\n\thooksPath = no\n[core]\n\tbare = false\n\tHooksPath = "tools/h"\n'
    assert hooks_path(config) == "tools/h"
    assert hooks_path("[core] hooksPath = same/line\n") == "same/line"
    assert hooks_path('[core "sub"]\nhooksPath = x\n') is None


@pytest.mark.parametrize("fifo", [".git/config", ".git/commondir", ".git"])
def test_a_fifo_where_git_keeps_its_config_does_not_hang_a_run(tmp_path: Path, fifo: str) -> None:
    """The workspace's git config is read at a run's start (for core.hooksPath); a FIFO a
    clone made there waited for a writer, for ever."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    if fifo == ".git":
        (workspace / ".git").rmdir()
    os.mkfifo(workspace / fifo)
    model = script(tmp_path / "s.json", [reply_writing("notes.txt"), "FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=tmp_path)  # a hang times out
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "x"


def reply_writing(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "x"}}]}


async def test_ordinary_files_are_written_without_asking(repo: Path) -> None:
    events = await attempt(
        repo,
        call("write_file", "w1", path="src/app.py", content="print(1)\n"),
        call("write_file", "w2", path=".gitignore", content="*.pyc\n"),
        call("write_file", "w3", path="docs/git/config.md", content="# config\n"),
        call("write_file", "w4", path=".vscode/launch.json", content="{}\n"),
    )
    assert not asked(events)
    assert all(r.startswith("Wrote ") for r in results(events))


# --- no rule, "always" or blanket yes allows it; a person's yes does, once ----------------------


async def test_a_tool_level_allow_rule_and_approvals_off_still_do_not_allow_it(repo: Path) -> None:
    rules = Permissions(user=PermissionRules(tools={"write_file": "allow", "edit_file": "allow"}))
    events = await attempt(
        repo,
        call("write_file", "w", path=".git/hooks/pre-commit", content=HOOK),
        approval="allow",
        permissions=rules,
    )
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by, decided.always) == (False, "headless", False)
    assert ".git/hooks/pre-commit runs code later" in results(events)[0]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_a_deny_rule_still_denies_without_asking(repo: Path) -> None:
    rules = Permissions(user=PermissionRules(tools={"write_file": "deny"}))
    events = await attempt(
        repo, call("write_file", "w", path=".envrc", content="x"), permissions=rules
    )
    assert not asked(events)
    assert results(events)[0].startswith("Denied 'write_file' by the permission rule")


async def test_always_is_not_kept_and_each_write_is_asked(repo: Path) -> None:
    seen: list[ApprovalRequest] = []

    def always(request: ApprovalRequest) -> Approval:
        seen.append(request)
        return Approval(True, always=True)

    rules = Permissions(user=PermissionRules(tools={"write_file": "ask"}))
    events = await attempt(
        repo,
        call("write_file", "w1", path="notes.txt", content="x"),  # "always" for write_file
        call("write_file", "w2", path=".git/hooks/pre-commit", content=HOOK),
        call("write_file", "w3", path=".git/hooks/pre-push", content=HOOK),
        approval=always,
        permissions=rules,
    )
    assert [(r.call.id, r.each_time, r.grant) for r in seen] == [
        ("w1", False, "write_file"),
        ("w2", True, ""),
        ("w3", True, ""),
    ]
    decided = [e for e in events if isinstance(e, PermissionDecided)]
    assert [(d.allowed, d.always, d.grant) for d in decided] == [
        (True, True, "write_file"),
        (True, False, ""),
        (True, False, ""),
    ]
    assert (repo / ".git" / "hooks" / "pre-push").read_text() == HOOK  # a person said yes


async def test_a_paused_write_is_answered_once_on_resume(repo: Path, tmp_path: Path) -> None:
    log = SQLiteLog(tmp_path / "store")
    plant = call("write_file", "w", path=".envrc", content="export X=1\n")
    model = ScriptedModel([reply("", plant), "FINAL_ANSWER: done"])
    agent = Agent(model=model, tools=BUILTIN_TOOLS, workspace=repo, approval="pause", log=log)
    paused = await agent.run("plant it")
    assert paused.stop_reason is StopReason.WAITING
    [waiting] = paused.awaiting
    assert waiting.rule.startswith(".envrc runs code later: direnv")
    done = await agent.resume(paused.run_id, approvals={"w": Approval(True, always=True)})
    assert done.stop_reason is StopReason.END_TURN
    assert (repo / ".envrc").read_text() == "export X=1\n"
    [decided] = [e for e in await log.events(paused.run_id) if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.always, decided.grant) == (True, False, "")
    await log.close()


# --- the write checks again: a path that changes after the ask ---------------------------------


async def test_a_symlink_swapped_in_after_the_ask_is_refused_at_the_write(repo: Path) -> None:
    """Judged, `h/pre-commit` was an ordinary new file; by the write, `h` leads into .git."""
    executor = ToolExecutor(
        BUILTIN_TOOLS,
        context=ToolContext(workspace=Workspace(repo), session_id="s", run_id="r"),
        permissions=Permissions(),
    )
    plant = call("write_file", "w", path="h/pre-commit", content=HOOK)
    assert executor.judge(plant, set()) is None  # a default allows it
    (repo / "h").symlink_to(".git/hooks")
    result = await executor.execute(plant)
    assert result.is_error
    assert result.content.startswith(
        "'h/pre-commit' is .git/hooks/pre-commit, which runs code later (git runs its hooks"
    )
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


async def test_with_no_permissions_to_ask_through_the_write_is_refused(repo: Path) -> None:
    executor = ToolExecutor(
        BUILTIN_TOOLS, context=ToolContext(workspace=Workspace(repo), session_id="s", run_id="r")
    )
    result = await executor.execute(
        call("edit_file", "e", path=".git/HEAD", old="refs", new="refs")
    )
    assert result.is_error
    assert "needs a person's yes to the call, and this call had none" in result.content


# --- the command line: the prompt shows the path; --yes does not cover it ----------------------


def plant(path: str, content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_the_prompt_names_the_path_and_offers_no_always(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    git("init", "-q", ".", cwd=tmp_path / "ws")
    (tmp_path / "ws" / "h").symlink_to(".git/hooks")
    model = script(
        tmp_path / "s.json",
        [plant("h/pre-commit", HOOK), plant("h/pre-push", HOOK), "FINAL_ANSWER: done"],
    )
    code, screen = run_in_terminal(
        tmp_path,
        ["run", "go", "-m", model, "-w", "ws"],
        [b"a\n", b"y\n", b"n\n"],
        prompt=b"Allow?",
    )
    assert code == 0, screen
    assert "(.git/hooks/pre-commit runs code later: git runs its hooks" in screen
    assert "[y]es, this once, [n]o" in screen
    assert "always allow" not in screen
    assert screen.count("Allow?") == 3  # "always" is not an answer here; the second is asked
    assert (tmp_path / "ws" / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    assert not (tmp_path / "ws" / ".git" / "hooks" / "pre-push").exists()


def test_yes_on_the_command_line_does_not_cover_it(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    git("init", "-q", ".", cwd=tmp_path / "ws")
    model = script(tmp_path / "s.json", [plant(".git/config", FSMONITOR), "FINAL_ANSWER: ok"])
    done = reins("run", "go", "-m", model, "-w", "ws", "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "fsmonitor" not in (tmp_path / "ws" / ".git" / "config").read_text()
    assert git_status_plants_nothing(tmp_path / "ws")


def test_the_model_is_told_which_writes_need_a_person() -> None:
    write_file = {t.name: t for t in BUILTIN_TOOLS}["write_file"]
    assert "anything in .git/ or .reins/, .envrc" in write_file.description
    assert "needs a person's approval of that call" in write_file.description
