"""Run inside a network namespace of its own (bwrap --unshare-net: only loopback exists):
start server-everything over streamable HTTP, run an agent whose MCP server is its URL,
print what the run saw as JSON. server-everything listens on all interfaces and has no
host option; in a namespace of its own nobody else can reach it."""

import json
import os
import subprocess
import sys
from pathlib import Path

from ports import free_port, wait_for_port  # beside this script

from reins import (
    Agent,
    AssistantMessage,
    PermissionRules,
    Permissions,
    ToolCall,
    ToolResultMessage,
)
from reins.mcp import MCPServerConfig
from reins.testing import ScriptedModel

PEERS = Path(__file__).parent


def main(workspace: str) -> None:
    port = free_port()
    server = subprocess.Popen(
        [
            "node",
            str(PEERS / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            "streamableHttp",
        ],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        config = MCPServerConfig(
            name="ev",
            url=f"http://127.0.0.1:{port}/mcp",
            headers={"X-Team": "${TEAM}"},
            bearer_token_env_var="EV_TOKEN",
        )
        calls = (
            ToolCall(id="c1", name="ev__echo", arguments={"message": "over http"}),
            ToolCall(id="c2", name="ev__get-sum", arguments={"a": 2, "b": 40}),
        )
        agent = Agent(
            model=ScriptedModel([AssistantMessage(text="", tool_calls=calls), "done"]),
            tools=[],
            workspace=workspace,
            mcp_servers=[config],
            permissions=Permissions(user=PermissionRules(tools={"ev__*": "allow"})),
        )
        result = agent.run_sync("go")
        seen = {
            m.call_id: [m.content, m.is_error]
            for m in result.messages
            if isinstance(m, ToolResultMessage)
        }
        print(json.dumps({"results": seen, "state": agent.servers[0].state}))
    finally:
        server.terminate()
        server.wait(5)


if __name__ == "__main__":
    main(sys.argv[1])
