"""The file tools do not hand the model what the sandbox hides from commands: credentials,
host secrets, reins's own folders (one list, `reins.sandbox._hidden`); and a workspace of `/` or the
home folder is refused (issue 26, item 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reins import Agent, SQLiteLog, ToolCall, ToolContext, Workspace, WorkspaceError
from reins.core._paths import config_home, data_home, log_key_path, project_store
from reins.sandbox import SandboxPolicy, run_process
from reins.sandbox._hidden import hidden_paths
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, ToolExecutor

from ..test_cli import reins, script
from ..test_sandbox import needs_bwrap

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- SECRET"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with the review's credentials in it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = SECRET\n")
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


async def tools_in(workspace: Path, name: str, **arguments: object) -> str:
    """What a file tool tells the model, called in `workspace`."""
    context = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    result = await ToolExecutor(BUILTIN_TOOLS, context=context).execute(
        ToolCall(id="c", name=name, arguments=arguments)
    )
    return result.content


# --- a workspace of / or the home folder is refused --------------------------------------------


@pytest.mark.parametrize("where", ["/", "~", "home's parent"])
def test_the_library_refuses_a_workspace_holding_the_home_folder(home: Path, where: str) -> None:
    workspace = {"/": "/", "~": str(home), "home's parent": str(home.parent)}[where]
    agent = Agent(model=ScriptedModel(["done"]), workspace=workspace)
    with pytest.raises(WorkspaceError) as caught:
        agent.run_sync("read ~/.ssh/id_rsa")
    message = str(caught.value)
    assert message.startswith(f"workspace {workspace!r} is ")
    assert message.endswith("; give the project's folder as the workspace")
    assert "\n" not in message


def test_a_home_workspace_is_refused_for_itself_before_its_log_is_judged(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default log lies in the home folder (~/.local/share/reins): the error a user gets
    is about the workspace, the cause, not about the log inside it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    log = SQLiteLog(project_store(home))
    agent = Agent(model=ScriptedModel(["done"]), workspace=home, log=log)
    with pytest.raises(WorkspaceError, match=r"^workspace '.*' is your home folder"):
        agent.run_sync("go")


@pytest.mark.parametrize("where", ["home", "root"])
def test_the_command_line_refuses_it_in_one_line(home: Path, tmp_path: Path, where: str) -> None:
    model = script(tmp_path / "s.json", ["FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", str(home) if where == "home" else "/", cwd=home)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    expected = "your home folder" if where == "home" else "the whole file system"
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: workspace ")
    assert expected in line
    assert line.endswith("give the project's folder as the workspace")


def test_a_workspace_inside_reins_own_folders_is_refused(home: Path) -> None:
    for own in (data_home(), config_home()):
        (own / "projects").mkdir(parents=True, exist_ok=True)
        with pytest.raises(WorkspaceError, match=r"inside reins's own (data|config) folder"):
            Workspace(own / "projects")


async def test_a_project_in_the_home_folder_is_fine(home: Path) -> None:
    assert await tools_in(home / "project", "list_files") == ". is empty"
    (home / "project" / "key").symlink_to(home / ".ssh" / "id_rsa")
    said = await tools_in(home / "project", "read_file", path="key")
    assert said.startswith("path 'key' resolves outside the workspace")


# --- the review's reads: hidden from the file tools as from commands ----------------------------


@pytest.fixture
def config_folder(home: Path) -> Path:
    """~/.config as the workspace (it holds the home's gh and gcloud, and reins's config):
    allowed, as it does not hold the home folder."""
    config = home / ".config"
    for folder, name, text in [
        ("gh", "hosts.yml", "oauth_token: SECRET\n"),
        ("gcloud", "credentials.db", "SECRET"),
        ("reins", "config.toml", 'api_key = "SECRET"\n'),
        ("editor", "settings.json", "{}\n"),
    ]:
        (config / folder).mkdir(parents=True)
        (config / folder / name).write_text(text)
    return config


@pytest.mark.parametrize(
    "path", ["gh/hosts.yml", "gcloud/credentials.db", "reins/config.toml", "gh", "./gh/../gh/x"]
)
async def test_read_file_refuses_a_hidden_path(config_folder: Path, path: str) -> None:
    said = await tools_in(config_folder, "read_file", path=path)
    assert said.startswith(f"{path!r} is hidden: credentials, secrets and reins's own data")
    assert "SECRET" not in said


async def test_listings_and_searches_leave_hidden_paths_out(config_folder: Path) -> None:
    assert await tools_in(config_folder, "list_files") == "editor/"
    assert await tools_in(config_folder, "find_files", pattern="*") == (
        "editor/settings.json\n[1 file]"
    )
    said = await tools_in(config_folder, "grep", pattern="SECRET")
    assert said.startswith("no matches for 'SECRET'")
    said = await tools_in(config_folder, "list_files", path="gh")
    assert said.startswith("'gh' is hidden")


async def test_symlinks_and_renames_do_not_lead_into_hidden_paths(config_folder: Path) -> None:
    (config_folder / "editor" / "token").symlink_to("../gh/hosts.yml")
    (config_folder / "editor" / "creds").symlink_to(config_folder / "gcloud")
    assert (await tools_in(config_folder, "read_file", path="editor/token")).startswith(
        "'editor/token' is hidden"
    )
    assert (
        await tools_in(config_folder, "read_file", path="editor/creds/credentials.db")
    ).startswith("'editor/creds/credentials.db' is hidden")
    assert (await tools_in(config_folder, "grep", pattern="SECRET")).startswith("no matches")
    assert await tools_in(config_folder, "find_files", pattern="*") == (
        "editor/settings.json\n[1 file]"
    )
    # A command (the sandbox is not what this test is about) renames a hidden folder: the
    # tools still know it, by what it is.
    workspace = Workspace(config_folder)
    (config_folder / "gh").rename(config_folder / "renamed")
    context = ToolContext(workspace=workspace, session_id="s", run_id="r")
    executor = ToolExecutor(BUILTIN_TOOLS, context=context)
    said = await executor.execute(
        ToolCall(id="c", name="read_file", arguments={"path": "renamed/hosts.yml"})
    )
    assert said.content.startswith("'renamed/hosts.yml' is hidden")
    grep = await executor.execute(ToolCall(id="g", name="grep", arguments={"pattern": "SECRET"}))
    assert grep.content.startswith("no matches")


async def test_writes_into_hidden_paths_are_refused(config_folder: Path) -> None:
    said = await tools_in(config_folder, "write_file", path="gh/hosts.yml", content="x")
    assert said.startswith("'gh/hosts.yml' is hidden")
    said = await tools_in(config_folder, "write_file", path="gh/new/file", content="x")
    assert said.startswith("'gh/new/file' is hidden")
    assert (config_folder / "gh" / "hosts.yml").read_text() == "oauth_token: SECRET\n"
    assert not (config_folder / "gh" / "new").exists()


@pytest.mark.skipif(not os.access("/etc/shadow", os.R_OK), reason="needs a readable /etc/shadow")
async def test_etc_shadow_is_hidden_even_from_a_root_process() -> None:
    """The review's `--workspace /`, narrowed to /etc (/ itself is refused): running as root,
    read_file returned shadow's root line."""
    said = await tools_in(Path("/etc"), "read_file", path="shadow")
    assert said.startswith("'shadow' is hidden")
    listing = (await tools_in(Path("/etc"), "list_files")).splitlines()
    assert "shadow" not in listing
    assert "gshadow" not in listing
    assert "passwd" in listing


# --- one list: reins's folders as XDG places them, for the tools and for commands ---------------


@pytest.fixture
def xdg_inside(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that holds $XDG_CONFIG_HOME and $XDG_DATA_HOME (not ~/.config)."""
    workspace = tmp_path / "work"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workspace / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(workspace / "xdg-data"))
    log_key_path().parent.mkdir(parents=True)
    log_key_path().write_text("SECRET log key")
    (config_home()).mkdir(parents=True)
    (config_home() / "config.toml").write_text('api_key = "SECRET"\n')
    (workspace / "xdg-config" / "gh").mkdir()
    (workspace / "xdg-config" / "gh" / "hosts.yml").write_text("oauth_token: SECRET\n")
    (workspace / "notes.txt").write_text("mine\n")
    return workspace


def test_the_hidden_list_follows_xdg(xdg_inside: Path, home: Path) -> None:
    paths = hidden_paths()
    assert str(config_home()) in paths
    assert str(data_home()) in paths
    assert str(xdg_inside / "xdg-config" / "gh") in paths
    assert str(home / ".ssh") in paths
    assert config_home() == xdg_inside / "xdg-config" / "reins"


async def test_the_tools_do_not_read_the_log_key_or_the_config(xdg_inside: Path) -> None:
    for path in ("xdg-data/reins/log.key", "xdg-config/reins/config.toml", "xdg-config/gh/x"):
        assert (await tools_in(xdg_inside, "read_file", path=path)).startswith(
            f"{path!r} is hidden"
        )
    said = await tools_in(xdg_inside, "grep", pattern="SECRET")
    assert said.startswith("no matches")
    assert "reins" not in await tools_in(xdg_inside, "list_files", path="xdg-data")


async def test_a_readable_folder_inside_a_hidden_one_stays_readable(xdg_inside: Path) -> None:
    """The log's saved long outputs lie in the data folder: the run reads them, and the way to
    them shows nothing else."""
    spill = data_home() / "projects" / "p-1" / "spill"
    spill.mkdir(parents=True)
    (spill / "call.txt").write_text("the long output\n")
    (spill.parent / "reins.db").write_text("SECRET")
    workspace = Workspace(xdg_inside, readable=[spill])
    context = ToolContext(workspace=workspace, session_id="s", run_id="r")
    executor = ToolExecutor(BUILTIN_TOOLS, context=context)

    async def said(name: str, **arguments: object) -> str:
        result = await executor.execute(ToolCall(id="c", name=name, arguments=arguments))
        return result.content

    assert await said("read_file", path="xdg-data/reins/projects/p-1/spill/call.txt") == (
        "the long output\n\n[1 line in all]"
    )
    assert await said("list_files", path="xdg-data/reins") == "projects/"
    assert await said("list_files", path="xdg-data/reins/projects/p-1") == "spill/"
    assert (await said("read_file", path="xdg-data/reins/projects/p-1/reins.db")).startswith(
        "'xdg-data/reins/projects/p-1/reins.db' is hidden"
    )
    found = await said("grep", pattern="SECRET|long output")
    assert found.splitlines()[0] == "xdg-data/reins/projects/p-1/spill/call.txt:1: the long output"
    assert "SECRET" not in found


@needs_bwrap
async def test_commands_do_not_see_them_either(xdg_inside: Path) -> None:
    result = await run_process(
        "cat notes.txt xdg-data/reins/log.key xdg-config/reins/config.toml "
        "xdg-config/gh/hosts.yml ~/.ssh/id_rsa 2>&1; ls -A xdg-data/reins",
        workspace=xdg_inside,
        policy=SandboxPolicy(),
    )
    assert result.output.startswith("mine\n")
    assert "SECRET" not in result.output
