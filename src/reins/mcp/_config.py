"""MCP servers as users already write them: the `mcpServers` JSON of Claude Desktop, Claude
Code (`.mcp.json`) and Cursor, and the same tables under `[mcp_servers.NAME]` in TOML.

    [mcp_servers.time]                        # stdio: a command reins starts
    command = "mcp-server-time"
    args = ["--local-timezone", "UTC"]
    env = { TZ_DATA = "/usr/share/zoneinfo" } # all the server gets, with PATH and the basics

    [mcp_servers.search]                      # streamable HTTP
    url = "https://mcp.example.com/mcp"
    bearer_token_env_var = "SEARCH_TOKEN"     # the key, from this variable at start
    headers = { "X-Team" = "${TEAM_ID}" }     # ${VAR} and ${VAR:-default} are expanded

`${VAR}` is expanded in `command`, `args`, `env`, `url` and `headers` when the server starts,
so a key stays in the environment, never in a file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core._errors import UsageError
from ..core._files import read_regular

NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class MCPServerConfig(BaseModel):
    """One server: a command to start (stdio), or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Its tools are offered as `NAME__TOOL`."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    """The server's environment: these, PATH, and the few variables the SDK always passes
    (HOME, USER, LOGNAME, SHELL, TERM); nothing else of reins' environment."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    bearer_token_env_var: str | None = None
    """The variable whose value is sent as `Authorization: Bearer ...`."""
    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    """As Claude Code writes it; the `command` or `url` says the same."""
    enabled: bool = True
    startup_timeout: float = Field(default=30.0, gt=0)
    """Seconds to start and list the tools, else the server is left out (with a notice)."""
    tool_timeout: float = Field(default=120.0, gt=0)
    """Seconds a call may take before it is abandoned (an error observation)."""

    @model_validator(mode="before")
    @classmethod
    def _other_spellings(cls, data: Any) -> Any:
        if isinstance(data, dict) and "disabled" in data:  # Cline and Cursor write it so
            data = dict(data)
            data["enabled"] = not data.pop("disabled")
        return data

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if not NAME.match(self.name):
            raise ValueError(
                "a server's name is 1 to 40 letters, digits, '_' or '-' (its tools are "
                "offered as NAME__TOOL)"
            )
        if "__" in self.name:
            raise ValueError("a server's name may not hold '__' (it separates server and tool)")
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (streamable HTTP)")
        if self.type == "stdio" and self.command is None:
            raise ValueError('type "stdio" needs a `command`')
        if self.type not in (None, "stdio") and self.url is None:
            raise ValueError(f'type "{self.type}" needs a `url`')
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def expanded(self) -> MCPServerConfig:
        """This config with `${VAR}` replaced from the environment; `UsageError` naming the
        variable if one is unset and has no default."""
        token = self.bearer_token_env_var
        headers = {k: _expand(v, self.name) for k, v in self.headers.items()}
        if token is not None:
            value = os.environ.get(token)
            if not value:
                raise UsageError(
                    f"MCP server {self.name!r}: bearer_token_env_var names {token}, "
                    "which is not set"
                )
            headers["Authorization"] = f"Bearer {value}"
        return self.model_copy(
            update={
                "command": _expand(self.command, self.name) if self.command else None,
                "args": tuple(_expand(a, self.name) for a in self.args),
                "env": {k: _expand(v, self.name) for k, v in self.env.items()},
                "url": _expand(self.url, self.name) if self.url else None,
                "headers": headers,
            }
        )


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(text: str, server: str) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise UsageError(f"MCP server {server!r}: ${{{name}}} is not set in the environment")

    head, tail = _braced(text)
    return _VARIABLE.sub(value, head) + tail


def _braced(text: str) -> tuple[str, str]:
    """`text` cut after its last `}`, which ends every `${...}` in it. Matched past it, each
    `${NAME:-` of a file's value with no `}` left was a try at the rest: quadratic."""
    end = text.rfind("}") + 1
    return text[:end], text[end:]


SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)


def servers_from_table(
    table: object, where: str, *, project: bool = False
) -> dict[str, MCPServerConfig]:
    """The servers of a `mcpServers` object or an `[mcp_servers]` table (name -> server).
    A project's file may not hold a key: a header that carries one takes it from `${VAR}`."""
    if not isinstance(table, Mapping):
        raise UsageError(f"{where}: the MCP servers must be a table of name -> server")
    servers: dict[str, MCPServerConfig] = {}
    for name, fields in table.items():
        if not isinstance(fields, Mapping):
            raise UsageError(f"{where}: MCP server {name!r} must be a table")
        try:
            server = MCPServerConfig.model_validate({**fields, "name": name})
        except ValidationError as exc:
            error = exc.errors()[0]
            place = ".".join(str(p) for p in error["loc"])
            what = error["msg"].removeprefix("Value error, ")
            raise UsageError(
                f"{where}: MCP server {name!r}: {place + ': ' if place else ''}{what}"
            ) from None
        if project:
            for header, value in server.headers.items():
                if SECRET_HEADER.search(header) and not _VARIABLE.search(_braced(value)[0]):
                    raise UsageError(
                        f"{where}: MCP server {name!r}: header {header!r} holds a key in a "
                        "project file; write ${VARIABLE} and keep the key in the environment"
                    )
        servers[name] = server
    return servers


def servers_from_json(path: Path, *, project: bool = False) -> dict[str, MCPServerConfig]:
    """The servers of a JSON file in Claude Desktop's shape (`{"mcpServers": {...}}`)."""
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except OSError as exc:  # a FIFO, a device: said so, never waited on
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or "mcpServers" not in data:
        raise UsageError(f'{path}: expected an object with "mcpServers" (name -> server)')
    return servers_from_table(data["mcpServers"], str(path), project=project)
