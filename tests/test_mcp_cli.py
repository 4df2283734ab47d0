"""`reins run` with MCP servers from the config and --mcp-config, a project's `.mcp.json`
held until trusted, `reins mcp list`, and `reins mcp serve` driven by the SDK's own client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from .test_mcp import BIN, npm_server

REINS = [sys.executable, "-m", "reins"]
TIME = f"""
[mcp_servers.time]
command = "{BIN / "mcp-server-time"}"
args = ["--local-timezone", "UTC"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "user.toml").write_text(TIME)
    return tmp_path


def env_for(project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    env.update(COLUMNS="200", REINS_CONFIG=str(project / "user.toml"), **extra)
    return env


def reins(project: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*REINS, *args],
        cwd=cwd or project,
        capture_output=True,
        text=True,
        timeout=120,
        env=env_for(project),
        stdin=subprocess.DEVNULL,
    )


def script(path: Path, replies: list[object]) -> str:
    path.write_text(json.dumps(replies))
    return f"script:{path}"


def test_run_offers_the_configured_servers_tools(project: Path) -> None:
    model = script(
        project / "s.json",
        [
            {"tool_calls": [{"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}]},
            "FINAL_ANSWER: it is late",
        ],
    )
    done = reins(project, "run", "what time is it", "-m", model, "-w", "ws", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["config"]["mcp_servers"] == ["time"]
    finished = next(e for e in events if e["kind"] == "tool_call_finished")
    assert json.loads(finished["result"]["content"])["timezone"] == "UTC"
    assert not finished["result"]["is_error"]


def test_mcp_config_adds_servers_and_a_bad_file_is_one_line(project: Path) -> None:
    (project / "ev.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ev": {"command": npm_server("mcp-server-everything"), "args": ["stdio"]}
                }
            }
        )
    )
    model = script(
        project / "s.json",
        [
            {"tool_calls": [{"name": "ev__echo", "arguments": {"message": "from the cli"}}]},
            "FINAL_ANSWER: echoed",
        ],
    )
    done = reins(
        project, "run", "echo", "-m", model, "-w", "ws", "--json", "--mcp-config", "ev.json"
    )
    assert done.returncode == 0, done.stderr
    result = next(
        json.loads(line)["result"]
        for line in done.stdout.splitlines()
        if '"tool_call_finished"' in line
    )
    assert result["content"] == "Echo: from the cli"  # read-only: no approval asked
    (project / "bad.json").write_text('{"mcpServers": {"x": {"url": 3}}}')
    done = reins(project, "run", "echo", "-m", model, "-w", "ws", "--mcp-config", "bad.json")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: bad.json: MCP server 'x': url: Input should be a valid string"
    ]


def test_a_projects_mcp_json_waits_for_trust(project: Path) -> None:
    (project / "ws" / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"ev": {"command": "node", "args": ["server.js"]}}})
    )
    done = reins(
        project,
        "run",
        "go",
        "-m",
        script(project / "s.json", ["FINAL_ANSWER: x"]),
        cwd=project / "ws",
    )
    assert done.returncode == 2
    assert "sets MCP servers started with each run (`ev: node server.js`)" in done.stderr
    assert "pass --trust-project" in done.stderr
    listed = reins(project, "mcp", "list", "--json", cwd=project / "ws")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["ev"]["state"] == "not trusted"
    assert rows["time"]["state"] == "ok"
    assert rows["time"]["tools"] == ["get_current_time", "convert_time"]


def test_mcp_list_with_no_servers_says_where_to_add_one(project: Path) -> None:
    (project / "user.toml").write_text("")
    done = reins(project, "mcp", "list")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "no MCP servers configured: add [mcp_servers.NAME] to the config, or a .mcp.json to "
        "the project\n"
    )


def test_mcp_list_shows_a_server_that_fails_with_its_reason(project: Path) -> None:
    (project / "user.toml").write_text(TIME + '\n[mcp_servers.gone]\ncommand = "/no/such/server"\n')
    done = reins(project, "mcp", "list")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert "get_current_time, convert_time" in lines["time"]
    assert "failed: cannot run /no/such/server: No such file or directory" in lines["gone"]


async def test_mcp_serve_runs_goals_and_reads_the_log_for_the_sdks_client(
    project: Path,
) -> None:
    model = script(
        project / "s.json",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}
                ]
            },
            "FINAL_ANSWER: wrote a.txt",
        ],
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "reins",
            "mcp",
            "serve",
            "-w",
            str(project / "ws"),
            "--store",
            str(project / "store"),
        ],
        env=env_for(project, REINS_MODEL=model),
        cwd=str(project),
    )
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"run", "sessions", "read_run"}
        ran = await client.call_tool("run", {"goal": "write a.txt"})
        assert not ran.is_error
        outcome = ran.structured_content
        assert outcome is not None
        assert outcome["final_answer"] == "wrote a.txt"
        assert outcome["stop_reason"] == "end_turn"
        assert outcome["completed"] is True
        listed = await client.call_tool("sessions", {})
        runs = listed.structured_content["result"]  # type: ignore[index]
        assert [r["run_id"] for r in runs] == [outcome["run_id"]]
        read = await client.call_tool("read_run", {"run_id": "last"})
        transcript = read.structured_content
        assert transcript is not None
        assert transcript["goal"] == "write a.txt"
        roles = [m["role"] for m in transcript["messages"]]
        assert roles[:3] == ["system", "user", "assistant"]
        assert "tool" in roles
        assert roles[-1] == "assistant"
        missing = await client.call_tool("read_run", {"run_id": "nope"})
        assert missing.is_error
        assert "no run matches 'nope'" in missing.content[0].text  # type: ignore[union-attr]
        more = await client.call_tool("run", {"goal": "again", "session_id": "last"})
        assert not more.is_error, more
        assert more.structured_content["session_id"] == outcome["session_id"]  # type: ignore[index]
        empty = await client.call_tool("run", {"goal": "  "})
        assert empty.is_error
        assert "the goal is empty" in empty.content[0].text  # type: ignore[union-attr]
        for steps in (0, -3):
            capped = await client.call_tool("run", {"goal": "go", "max_steps": steps})
            assert capped.is_error
        listed = await client.call_tool("sessions", {})
        assert len(listed.structured_content["result"]) == 2  # type: ignore[index]  # none ran
    assert (project / "ws" / "a.txt").read_text() == "A"


def test_mcp_serve_says_a_bad_model_or_workspace_before_it_serves(project: Path) -> None:
    for args, message in [
        (["-m", "nope:thing"], "error: unknown model 'nope:thing'"),
        (["-m", "script:gone.json"], "error: cannot read script gone.json"),
        (["-m", "script:gone.json", "-w", "nowhere"], "error: workspace 'nowhere'"),
    ]:
        done = reins(project, "mcp", "serve", *args, "--store", str(project / "store"))
        assert done.returncode == 2
        assert done.stderr.startswith(message), done.stderr
        assert len(done.stderr.splitlines()) == 1


def serving(project: Path, model: str, *flags: str) -> StdioServerParameters:
    """`reins mcp serve` in `project`, on its ws folder and store, with `model`."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "reins", "mcp", "serve", "-w", "ws", "--store", "store", *flags],
        env=env_for(project, REINS_MODEL=model),
        cwd=str(project),
    )


async def test_mcp_serve_tells_the_client_why_a_run_cannot_start(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    async with Client(serving(project, model)) as client:
        (project / "s.json").unlink()  # the model each run reads is gone
        ran = await client.call_tool("run", {"goal": "go"})
        assert ran.is_error
        assert "cannot read script" in ran.content[0].text  # type: ignore[union-attr]


async def test_mcp_serve_takes_yes_sandbox_and_max_steps(project: Path) -> None:
    echo = {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi"}}]}
    model = script(project / "s.json", [echo, "FINAL_ANSWER: ran", echo, echo])

    flags = ("--yes", "--sandbox", "read-only", "--max-steps", "1")
    async with Client(serving(project, model, *flags)) as client:
        ran = await client.call_tool("run", {"goal": "say hi", "max_steps": 5})  # 1 holds
        outcome = ran.structured_content
        assert outcome is not None
        assert outcome["stop_reason"] == "max_steps", outcome
        assert outcome["steps"] == 1
    events = replayed(project)
    assert events[0]["config"]["sandbox"] == "read-only"
    assert events[0]["config"]["max_steps"] == 1
    [decided] = [e for e in events if e["kind"] == "permission_decided"]
    assert decided["allowed"] is True  # --yes: approved, where a headless server denies
    async with Client(serving(project, model)) as client:  # without them: denied, the config's cap
        ran = await client.call_tool("run", {"goal": "say hi"})
        assert ran.structured_content is not None
        assert ran.structured_content["stop_reason"] == "end_turn"
    events = replayed(project)
    assert events[0]["config"]["sandbox"] == "workspace-write"
    assert events[0]["config"]["max_steps"] == 30
    [decided] = [e for e in events if e["kind"] == "permission_decided"]
    assert decided["allowed"] is False


def replayed(project: Path) -> list[dict[str, Any]]:
    done = reins(project, "replay", "last", "--json", "--store", "store")
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_mcp_serve_says_a_bad_sandbox_before_it_serves(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    done = reins(project, "mcp", "serve", "-m", model, "-w", "ws", "--sandbox", "open")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "open" in done.stderr


async def test_mcp_serve_runs_the_configs_tool_hooks_and_stop_hooks_as_run_does(
    project: Path,
) -> None:
    """The config's hooks reach the agents `mcp serve` makes: a before_tool hook blocks the
    write, a stop hook rejects the answer, and `stop_max_rejections` ends the run there."""
    (project / "user.toml").write_text(
        "stop_max_rejections = 0\n"
        "[[hooks.before_tool]]\n"
        'matcher = "write_file"\n'
        "command = \"echo 'not here' >&2; exit 2\"\n"
        "[[stop_hooks]]\n"
        "command = \"echo 'say which file you wrote' >&2; exit 2\"\n"
    )
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}
    model = script(project / "s.json", [write, "FINAL_ANSWER: wrote it", "FINAL_ANSWER: a.txt"])
    async with Client(serving(project, model)) as client:
        ran = await client.call_tool("run", {"goal": "go"})  # a goal the file guard ignores
    outcome = ran.structured_content
    assert outcome is not None, ran
    assert not (project / "ws" / "a.txt").exists()  # the hook blocked the write
    [blocked] = [e for e in replayed(project) if e["kind"] == "tool_call_finished"]
    assert "This call was blocked by a hook" in blocked["result"]["content"]
    assert outcome["stop_reason"] == "missing_evidence", outcome  # the first rejection ends it
    assert outcome["steps"] == 2
