"""Files that are not what their names say (issue 26, item 8): a config file that is a FIFO
hung every command in its project; a file name with a line break listed as two entries."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reins import ToolCall, ToolContext, Workspace
from reins.skills import discover
from reins.tools import BUILTIN_TOOLS, ToolExecutor

from ..test_cli import REINS, _env, script

FIFO = "a FIFO (named pipe), not a regular file"


def reins(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`reins ARGS` in `project`, with `env` added; a hang fails the test (a timeout)."""
    return subprocess.run(
        [*REINS, *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=30,
        env={**_env(), **env},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "config.toml").touch()
    return tmp_path


def run(project: Path, *more: str, **env: str) -> subprocess.CompletedProcess[str]:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    config = str(project / "user" / "config.toml")
    args = ["run", "go", "-m", model, "-w", "ws", "--store", "st", *more]
    return reins(project, *args, **{"REINS_CONFIG": config, **env})


def error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip().removeprefix("error: ")


def test_a_project_config_that_is_a_fifo_is_an_error_not_a_hang(project: Path) -> None:
    os.mkfifo(project / "reins.toml")
    assert error(run(project)) == (
        f"config {project / 'reins.toml'}: {FIFO}; remove it, or put a TOML file in its place"
    )


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (os.mkfifo, FIFO),
        (os.mkdir, "a folder, not a regular file"),
        (lambda path: os.symlink("/dev/zero", path), "a device, not a regular file"),
    ],
    ids=["fifo", "folder", "/dev/zero"],
)
def test_a_user_config_that_is_no_file_is_an_error(project: Path, make: object, what: str) -> None:
    odd = project / "odd.toml"
    make(odd)  # type: ignore[operator]
    assert error(run(project, REINS_CONFIG=str(odd))) == (
        f"config {odd}: {what}; remove it, or put a TOML file in its place"
    )


def test_reins_config_dev_null_is_still_no_config(project: Path) -> None:
    done = run(project, REINS_CONFIG=os.devnull)
    assert done.returncode == 0, done.stderr


def test_mcp_files_that_are_fifos_are_errors(project: Path) -> None:
    os.mkfifo(project / "servers.json")
    assert error(run(project, "--mcp-config", "servers.json")) == (
        f"cannot read servers.json: {FIFO}"
    )
    os.mkfifo(project / "user" / "mcp.json")  # the user's, beside their config file
    assert error(run(project)) == f"cannot read {project / 'user' / 'mcp.json'}: {FIFO}"


def test_a_trust_record_that_is_a_fifo_is_an_error(project: Path) -> None:
    (project / "reins.toml").write_text('[permissions]\nrun_command = "allow"\n')
    os.mkfifo(project / "user" / "trusted_projects.json")
    assert error(run(project)) == (
        f"cannot read {project / 'user' / 'trusted_projects.json'}: {FIFO}; fix or delete it"
    )


def test_instruction_files_that_are_no_files_are_passed_over(project: Path) -> None:
    os.mkfifo(project / "ws" / "AGENTS.md")
    os.symlink("/dev/zero", project / "ws" / "AGENTS.override.md")
    done = run(project)
    assert done.returncode == 0, done.stderr


def test_a_skill_file_that_is_a_fifo_is_left_out_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "odd").mkdir()
    os.mkfifo(tmp_path / "odd" / "SKILL.md")
    (tmp_path / "fine").mkdir()
    (tmp_path / "fine" / "SKILL.md").write_text("---\nname: fine\ndescription: Fine.\n---\nDo.\n")
    skills, notes = discover([tmp_path])
    assert [s.name for s in skills] == ["fine"]
    assert notes == [f"skill left out: {tmp_path / 'odd' / 'SKILL.md'}: cannot be read: {FIFO}"]


# Names that would break a listing: shown as JSON strings.

ODD_NAMES = {
    "a.txt\nb.txt": '"a.txt\\nb.txt"',  # a line break: two entries, the second forged
    "c.txt\rd.txt": '"c.txt\\rd.txt"',
    "\x1b[31mred.txt": '"\\u001b[31mred.txt"',  # a terminal's colour
    "rtl\u202etxt.exe": '"rtl\\u202etxt.exe"',  # shown right to left: rtlexe.txt
    '"quoted".txt': '"\\"quoted\\".txt"',  # would read as a name shown quoted
    "plain é.txt": "plain é.txt",
}


async def call(workspace: Path, name: str, **arguments: object) -> str:
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    executor = ToolExecutor(list(BUILTIN_TOOLS), context=ctx)
    result = await executor.execute(ToolCall(id="1", name=name, arguments=arguments))
    assert not result.is_error, result.content
    return result.content


async def test_names_with_control_characters_are_listed_quoted(workspace: Path) -> None:
    for name in ODD_NAMES:
        (workspace / name).write_text("x\n")
    (workspace / "new\nline").mkdir()
    (workspace / "new\nline" / "inner.txt").write_text("x\n")
    shown = list(ODD_NAMES.values())
    listed = (await call(workspace, "list_files")).split("\n")
    assert sorted(listed) == sorted([*shown, '"new\\nline"/'])
    found = (await call(workspace, "find_files", pattern="*")).split("\n")
    assert found[-1] == "[7 files]"
    assert sorted(found[:-1]) == sorted([*shown, '"new\\nline/inner.txt"'])
    matches = (await call(workspace, "grep", pattern="^x")).split("\n")
    assert matches[-1] == "[7 matching lines in 7 files]"
    assert sorted(matches[:-1]) == sorted(f"{name}:1: x" for name in found[:-1])
    # The name given back as the JSON string shows it (a real line break) reaches the file.
    assert await call(workspace, "read_file", path="a.txt\nb.txt") == "x\n\n[1 line in all]"
