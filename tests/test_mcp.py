"""The MCP client against real servers: mcp-server-time and mcp-server-git (PyPI), the npm
reference servers (everything, filesystem), and a small MCPServer of the SDK's own
(tests/mcp_peers/toy_server.py) for a list that changes, a crash and a hidden hook."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from reins import Agent, AssistantMessage, Message, PermissionRules, Permissions, ToolSpec
from reins.core._errors import UsageError
from reins.events import Event, Notice, RunFinished, ToolCallFinished, ToolsChanged
from reins.mcp import MCPServer, MCPServerConfig, servers_from_json, servers_from_table
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .mcp_peers.ports import free_port, wait_for_port

PEERS = Path(__file__).parent / "mcp_peers"
BIN = Path(sys.executable).parent


def npm_server(name: str) -> str:
    path = PEERS / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci --prefix tests/mcp_peers` (make setup does)")
    return str(path)


def time_server() -> MCPServerConfig:
    return MCPServerConfig(
        name="time", command=str(BIN / "mcp-server-time"), args=("--local-timezone", "UTC")
    )


def toy_server(**kw: object) -> MCPServerConfig:
    return MCPServerConfig(
        name="toy", command=sys.executable, args=(str(PEERS / "toy_server.py"),), **kw
    )


def everything() -> MCPServerConfig:
    return MCPServerConfig(name="ev", command=npm_server("mcp-server-everything"), args=("stdio",))


def allow_all() -> Permissions:
    return Permissions(user=PermissionRules(tools={"toy__*": "allow", "ev__*": "allow"}))


def results(events: Sequence[Event]) -> dict[str, tuple[str, bool]]:
    return {
        e.result.call_id: (e.result.content, e.result.is_error)
        for e in events
        if isinstance(e, ToolCallFinished)
    }


async def run_events(agent: Agent, goal: str = "go") -> list[Event]:
    return [event async for event in agent.iter(goal)]


def git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def git_status(repo: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "status", "--short"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def read(path: str) -> str | None:
    """The file's text; None if there is none."""
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return None


# Config -----------------------------------------------------------------------------------


def test_claude_desktop_json_and_toml_tables_give_the_same_servers(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                    "api": {"type": "http", "url": "https://x.example/mcp", "disabled": True},
                }
            }
        )
    )
    from_json = servers_from_json(file)
    from_toml = servers_from_table(
        {
            "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
            "api": {"type": "http", "url": "https://x.example/mcp", "enabled": False},
        },
        "reins.toml",
    )
    assert from_json == from_toml
    assert from_json["time"].transport == "stdio"
    assert from_json["api"].transport == "http"
    assert not from_json["api"].enabled


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"command": "x", "url": "http://y"}, "either `command`"),
        ({}, "either `command`"),
        ({"command": "x", "type": "http"}, 'type "http" needs a `url`'),
        ({"command": "x", "timeout": 3}, "timeout: Extra inputs are not permitted"),
        ({"command": 5}, "command: Input should be a valid string"),
    ],
)
def test_a_bad_server_is_one_error_naming_the_file_and_the_server(
    fields: dict[str, object], error: str
) -> None:
    with pytest.raises(UsageError) as raised:
        servers_from_table({"s": fields}, "reins.toml")
    assert str(raised.value).startswith("reins.toml: MCP server 's': ")
    assert error in str(raised.value)


def test_a_bad_name_and_bad_json_are_clear(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="1 to 40 letters"):
        servers_from_table({"a b": {"command": "x"}}, "f")
    with pytest.raises(UsageError, match="may not hold '__'"):
        servers_from_table({"a__b": {"command": "x"}}, "f")
    file = tmp_path / "mcp.json"
    file.write_text("{not json")
    with pytest.raises(UsageError, match="is not valid JSON"):
        servers_from_json(file)
    file.write_text('{"servers": {}}')
    with pytest.raises(UsageError, match='expected an object with "mcpServers"'):
        servers_from_json(file)


def test_a_project_file_may_not_hold_a_key_but_may_name_its_variable() -> None:
    with pytest.raises(UsageError, match="header 'Authorization' holds a key"):
        servers_from_table(
            {"api": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer sk-1"}}},
            "reins.toml",
            project=True,
        )
    ok = servers_from_table(
        {"api": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}}},
        "reins.toml",
        project=True,
    )
    assert ok["api"].headers["Authorization"] == "Bearer ${API_KEY}"


def test_variables_are_expanded_at_start_and_an_unset_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("API_KEY", "sk-9")
    monkeypatch.setenv("TOKEN", "t-1")
    monkeypatch.delenv("MISSING", raising=False)
    server = MCPServerConfig(
        name="api",
        url="https://${HOST:-x.example}/mcp",
        headers={"X-Key": "${API_KEY}"},
        bearer_token_env_var="TOKEN",
    )
    expanded = server.expanded()
    assert expanded.url == "https://x.example/mcp"
    assert expanded.headers == {"X-Key": "sk-9", "Authorization": "Bearer t-1"}
    with pytest.raises(UsageError, match=r"\$\{MISSING\} is not set"):
        MCPServerConfig(name="s", command="x", env={"A": "${MISSING}"}).expanded()


# Real servers through a run ---------------------------------------------------------------


async def test_a_run_calls_mcp_server_time_and_stops_it_after(workspace: Path) -> None:
    server = MCPServer(time_server())
    agent = Agent(
        model=ScriptedModel(
            [
                reply("", call("time__get_current_time", "c1", timezone="Europe/Paris")),
                reply("", call("time__get_current_time", "c2", timezone="Europe/Paris")),
                "done",
            ]
        ),
        tools=[],
        workspace=workspace,
        mcp_servers=[server],
    )
    events = await run_events(agent)
    content, is_error = results(events)["c1"]
    assert not is_error  # read-only by its annotations: no approval asked
    assert json.loads(content)["timezone"] == "Europe/Paris"
    again, _ = results(events)["c2"]
    assert json.loads(again)["timezone"] == "Europe/Paris"  # asked again: a clock moves on
    started = events[0]
    assert started.config.mcp_servers == ("time",)  # type: ignore[union-attr]
    assert "time__get_current_time" not in started.config.tools  # type: ignore[union-attr]
    assert server.state == "stopped"
    assert not server.running


async def test_the_tools_keep_their_schemas_and_bad_arguments_are_an_observation(
    workspace: Path,
) -> None:
    offered: list[list[ToolSpec]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        offered.append(tools)
        if len(offered) == 1:
            return reply("", call("time__convert_time", "c1", source_timezone="UTC"))
        return "done"

    agent = Agent(model=FunctionModel(model), tools=[], workspace=workspace)
    agent.mcp_servers = [time_server()]
    events = await run_events(agent)
    spec = next(t for t in offered[0] if t.name == "time__convert_time")
    assert set(spec.parameters["required"]) == {"source_timezone", "time", "target_timezone"}
    assert "$schema" not in spec.parameters
    content, is_error = results(events)["c1"]
    assert is_error
    assert content.startswith("invalid arguments for time__convert_time: ")
    assert "'time' is a required property" in content


async def test_a_tool_not_marked_read_only_asks_and_headless_is_denied(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    git = MCPServerConfig(
        name="git", command=str(BIN / "mcp-server-git"), args=("--repository", str(repo))
    )
    (repo / "a.txt").write_text("a\n")
    script = [
        reply("", call("git__git_status", "c1", repo_path=str(repo))),
        reply("", call("git__git_add", "c2", repo_path=str(repo), files=["a.txt"])),
        "done",
    ]
    agent = Agent(model=ScriptedModel(script), tools=[], workspace=repo, mcp_servers=[git])
    found = results(await run_events(agent))
    assert "a.txt" in found["c1"][0]
    assert not found["c1"][1]
    assert found["c2"][1]
    assert "denied" in found["c2"][0]
    assert git_status(repo) == "?? a.txt"  # nothing staged
    # A rule by pattern allows it.
    agent.permissions = Permissions(user=PermissionRules(tools={"git__*": "allow"}))
    found = results(await run_events(agent))
    assert not found["c2"][1]
    assert git_status(repo) == "A  a.txt"


async def test_everything_results_map_to_observations(tmp_path: Path, workspace: Path) -> None:
    from reins import SQLiteLog

    log = SQLiteLog(tmp_path / "store")
    script = [
        reply(
            "",
            call("ev__echo", "c1", message="hi"),
            call("ev__get-tiny-image", "c2"),
            call("ev__get-structured-content", "c3", location="New York"),
            call("ev__get-resource-links", "c4", count=2),
            call("ev__get-sum", "c5", a="x", b=2),
            call("ev__get-resource-reference", "c6", resourceType="Blob", resourceId=2),
        ),
        "done",
    ]
    agent = Agent(
        model=ScriptedModel(script),
        tools=[],
        workspace=workspace,
        mcp_servers=[everything()],
        permissions=allow_all(),
        log=log,
    )
    try:
        events = await run_events(agent)
    finally:
        await log.close()
    found = results(events)
    assert found["c1"] == ("Echo: hi", False)
    # The image goes to the model as an image too (where it takes images).
    [sent] = [
        e.result.media
        for e in events
        if isinstance(e, ToolCallFinished) and e.result.call_id == "c2"
    ]
    assert [(m.type, m.media_type) for m in sent] == [("image", "image/png")]
    image = found["c2"][0]
    assert "[image, image/png, " in image
    assert "bytes, saved to " in image
    saved = image.split("saved to ")[1].split("]")[0]
    assert list((tmp_path / "store" / "spill").rglob(Path(saved).name))  # in the run's folder
    assert json.loads(found["c3"][0])["temperature"] == 33  # structured, as its JSON text
    assert found["c4"][0].count("[resource link: demo://resource/") == 2
    assert found["c5"][1]
    assert "invalid arguments for ev__get-sum: a: 'x' is not of type 'number'" in found["c5"][0]
    assert "[resource demo://resource/dynamic/blob/2]\nResource 2: " in found["c6"][0]


async def test_a_stdio_servers_environment_is_only_what_its_config_names(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-parent")
    config = everything().model_copy(update={"env": {"GREETING": "hello"}})
    agent = Agent(
        model=ScriptedModel([reply("", call("ev__get-env", "c1")), "done"]),
        tools=[],
        workspace=workspace,
        mcp_servers=[config],
        permissions=allow_all(),
    )
    content, _ = results(await run_events(agent))["c1"]
    env = json.loads(content)
    assert env["GREETING"] == "hello"
    assert "PATH" in env
    assert "OPENAI_API_KEY" not in env
    assert set(env) <= {"GREETING", "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM"}


async def test_a_list_change_is_seen_before_the_next_round(workspace: Path) -> None:
    offered: list[set[str]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        offered.append({t.name for t in tools})
        if len(offered) == 1:
            return reply("", call("toy__unlock", "c1"))
        if len(offered) == 2:
            return reply("", call("toy__secret", "c2"))
        return "done"

    agent = Agent(
        model=FunctionModel(model),
        tools=[],
        workspace=workspace,
        mcp_servers=[toy_server()],
        permissions=allow_all(),
    )
    events = await run_events(agent)
    assert "toy__secret" not in offered[0]
    assert "toy__secret" in offered[1]
    changed = [e for e in events if isinstance(e, ToolsChanged)]
    assert [(c.added, c.removed) for c in changed] == [(("toy__secret",), ())]
    assert results(events)["c2"] == ("the secret is 42", False)


async def test_hidden_tools_are_not_offered_and_stop_vetoes_an_answer(workspace: Path) -> None:
    offered: list[set[str]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        offered.append({t.name for t in tools})
        return "all done" if len(offered) == 1 else "all done, verified"

    agent = Agent(
        model=FunctionModel(model), tools=[], workspace=workspace, mcp_servers=[toy_server()]
    )
    events = await run_events(agent)
    assert not any(name.startswith("toy___") or "_Stop" in name for name in offered[0])
    assert "toy__add" in offered[0]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.final_answer == "all done, verified"
    rejected = [e for e in events if e.kind == "answer_rejected"]
    assert len(rejected) == 1
    assert "say 'verified' in your answer (MCP server 'toy')" in rejected[0].observation  # type: ignore[union-attr]


async def test_a_server_that_dies_mid_run_is_a_notice_and_the_run_goes_on(workspace: Path) -> None:
    offered: list[set[str]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        offered.append({t.name for t in tools})
        if len(offered) == 1:
            return reply("", call("toy__crash", "c1"))
        if len(offered) == 2:
            return reply("", call("toy__add", "c2", a=1, b=2))
        return "done without it"

    server = MCPServer(toy_server())
    agent = Agent(
        model=FunctionModel(model),
        tools=[],
        workspace=workspace,
        mcp_servers=[server],
        permissions=allow_all(),
    )
    events = await run_events(agent)
    found = results(events)
    assert found["c1"][1]
    assert "MCP server 'toy' stopped without answering this call" in found["c1"][0]
    assert not {n for n in offered[1] if n.startswith("toy__")}
    notices = [e.text for e in events if isinstance(e, Notice) and e.source == "tools"]
    assert any("MCP server 'toy' stopped" in text for text in notices)
    changed = [e for e in events if isinstance(e, ToolsChanged)]
    assert changed
    assert "toy__add" in changed[0].removed
    assert found["c2"][1]
    assert "unknown tool 'toy__add'" in found["c2"][0]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "done without it"
    assert server.state == "exited"


def child_running(name: str) -> int:
    """The pid of this process's child whose command line names `name`."""
    for entry in Path("/proc").iterdir():
        try:
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if parent == str(os.getpid()) and name.encode() in command:
            return int(entry.name)
    raise AssertionError(f"no child process runs {name}")


async def test_a_server_that_died_between_calls_had_stopped_before_the_next(
    workspace: Path,
) -> None:
    server = MCPServer(time_server())
    rounds = 0

    async def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        nonlocal rounds
        rounds += 1
        if rounds == 1:
            return reply("", call("time__get_current_time", "c1", timezone="UTC"))
        if rounds == 2:  # no call runs: the server is killed while the model thinks
            os.kill(child_running("mcp-server-time"), signal.SIGKILL)
            for _ in range(200):  # until reins has read the end of its output
                if server.state != "ready":
                    break
                await asyncio.sleep(0.05)
            return reply("", call("time__get_current_time", "c2", timezone="UTC"))
        return "done without it"

    agent = Agent(model=FunctionModel(model), tools=[], workspace=workspace, mcp_servers=[server])
    events = await run_events(agent)
    found = results(events)
    assert not found["c1"][1]
    assert found["c2"] == (
        "MCP server 'time' had stopped before this call: its connection closed between calls; "
        "its tools are no longer available",
        True,
    )
    notices = [e.text for e in events if isinstance(e, Notice) and e.source == "tools"]
    assert notices == [
        "MCP server 'time' stopped: its connection closed between calls; its tools are no "
        "longer offered"
    ]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "done without it"
    assert server.state == "exited"
    assert not server.running


async def test_a_server_that_does_not_start_is_a_notice(workspace: Path) -> None:
    bad = MCPServerConfig(name="bad", command=str(workspace / "no-such-server"))
    slow = MCPServerConfig(
        name="slow",
        command=sys.executable,
        args=("-c", "import time; time.sleep(30)"),
        startup_timeout=0.5,
    )
    agent = Agent(
        model=ScriptedModel(["fine"]),
        tools=[],
        workspace=workspace,
        mcp_servers=[bad, slow, time_server()],
    )
    events = await run_events(agent)
    notices = [e.text for e in events if isinstance(e, Notice) and e.source == "tools"]
    assert any("MCP server 'bad' did not start: cannot run" in t for t in notices)
    assert any("MCP server 'slow' did not start: did not start within 0.5 s" in t for t in notices)
    assert isinstance(events[-1], RunFinished)
    assert events[-1].final_answer == "fine"


async def test_a_call_past_the_servers_timeout_is_abandoned(workspace: Path) -> None:
    config = everything().model_copy(update={"tool_timeout": 1.0})
    script = [
        reply("", call("ev__trigger-long-running-operation", "c1", duration=10, steps=2)),
        "ok",
    ]
    agent = Agent(
        model=ScriptedModel(script),
        tools=[],
        workspace=workspace,
        mcp_servers=[config],
        permissions=allow_all(),
    )
    content, is_error = results(await run_events(agent))["c1"]
    assert is_error
    assert "timed out" in content


async def test_async_with_keeps_the_servers_for_every_run(workspace: Path) -> None:
    server = MCPServer(toy_server())
    agent = Agent(
        model=ScriptedModel([reply("", call("toy__add", "c1", a=2, b=3)), "done, verified"]),
        tools=[],
        workspace=workspace,
        mcp_servers=[server],
        permissions=allow_all(),
    )
    async with agent:
        assert server.ready
        first = results(await run_events(agent))
        assert server.ready  # still up for the next run
        second = results(await run_events(agent))
    assert first["c1"] == second["c1"] == ("5", False)
    assert server.state == "stopped"


def test_a_streamable_http_server_with_a_key_from_the_environment(workspace: Path) -> None:
    """server-everything over streamable HTTP, in a network namespace of its own (it listens
    on every interface), with a bearer token and a header taken from the environment."""
    npm_server("mcp-server-everything")
    script = PEERS / "http_check.py"
    done = subprocess.run(
        [
            "bwrap",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--bind",
            str(workspace),
            str(workspace),
            sys.executable,
            str(script),
            str(workspace),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "EV_TOKEN": "t-123", "TEAM": "blue"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["results"]["c1"] == ["Echo: over http", False]
    assert seen["results"]["c2"] == ["The sum of 2 and 40 is 42.", False]
    assert seen["state"] == "stopped"


@pytest.fixture
def toy_over_http() -> Iterator[str]:
    """The toy server over streamable HTTP on loopback; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(PEERS / "toy_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(5)


async def test_http_headers_carry_the_key_from_the_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, toy_over_http: str
) -> None:
    monkeypatch.setenv("TOY_TOKEN", "t-777")
    monkeypatch.setenv("TEAM", "blue")
    config = MCPServerConfig(
        name="toy",
        url=toy_over_http,
        headers={"X-Team": "${TEAM}", "X-Zone": "${ZONE:-eu}"},
        bearer_token_env_var="TOY_TOKEN",
    )
    agent = Agent(
        model=ScriptedModel([reply("", call("toy__headers", "c1")), "done, verified"]),
        tools=[],
        workspace=workspace,
        mcp_servers=[config],
        permissions=allow_all(),
    )
    content, is_error = results(await run_events(agent))["c1"]
    assert not is_error
    lines = set(content.splitlines())
    assert {"x-team: blue", "x-zone: eu", "authorization: Bearer t-777"} <= lines


async def test_server_filesystem_reads_freely_and_writes_only_when_allowed(
    workspace: Path,
) -> None:
    config = MCPServerConfig(
        name="fs", command=npm_server("mcp-server-filesystem"), args=(str(workspace),)
    )
    (workspace / "notes.txt").write_text("first line\n")
    target = str(workspace / "out.txt")
    script = [
        reply(
            "",
            call("fs__read_text_file", "c1", path=str(workspace / "notes.txt")),
            call("fs__write_file", "c2", path=target, content="written by reins"),
        ),
        "done",
    ]
    agent = Agent(model=ScriptedModel(script), tools=[], workspace=workspace, mcp_servers=[config])
    found = results(await run_events(agent))
    assert found["c1"] == ("first line\n", False)
    assert found["c2"][1]
    assert "denied" in found["c2"][0]
    assert read(target) is None
    agent.permissions = Permissions(user=PermissionRules(tools={"fs__write_file": "allow"}))
    found = results(await run_events(agent))
    assert not found["c2"][1]
    assert read(target) == "written by reins"
