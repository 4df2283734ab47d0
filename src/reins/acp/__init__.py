"""reins as an agent for editors: the Agent Client Protocol (Zed's; `reins[acp]`, the SDK
`agent-client-protocol`) over stdin and stdout, as `reins acp` serves it.

`ACPAgent(make_agent, log_of)` answers the protocol: `initialize`, `session/new` (the editor's
folder as the workspace), `session/load` (a past session told again, then continued),
`session/prompt` (a run, streamed as `session/update`s: the reply's text and thinking, each tool
call with its status and output, the todo list as the plan), `session/cancel`; its approvals
are the editor's `session/request_permission`. `serve` speaks it over two streams,
`serve_stdio` over this process's.

Inside: `_agent` (the sessions and the requests), `_turn` (a run's events as updates),
`_replay` (a past session's messages as updates), `_tools` (a call's kind, title and place),
`_prompt` (the editor's prompt and MCP servers in reins' terms), `_stdio` (the wire).
"""

from ._agent import ACPAgent, AgentFactory, LogOpener, SessionSetup
from ._stdio import JsonLines, serve, serve_stdio

__all__ = [
    "ACPAgent",
    "AgentFactory",
    "JsonLines",
    "LogOpener",
    "SessionSetup",
    "serve",
    "serve_stdio",
]
