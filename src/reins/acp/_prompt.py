"""What an editor gives a session, in reins' terms: a prompt's content blocks as the run's goal,
and the MCP servers it passes as reins' server configs."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp.schema import (
    AcpMcpServer,
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from ..core._errors import UsageError
from ..core._media import Image
from ..mcp import MCPServerConfig

Block = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
EditorServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def goal_of(blocks: Sequence[Block], workspace: Path) -> list[str | Image]:
    """The run's goal: the texts; a file the person mentioned, by its path (the model reads
    it if it needs to); a file's text the editor embedded, with its path; the images.
    UsageError for what reins cannot take (audio, a binary file that is not an image)."""
    goal: list[str | Image] = []
    for block in blocks:
        match block:
            case TextContentBlock():
                goal.append(block.text)
            case ImageContentBlock():
                goal.append(Image.from_bytes(_decoded(block.data), name=block.uri or ""))
            case ResourceContentBlock():
                goal.append(f"@{_path(block.uri, workspace)}")
            case EmbeddedResourceContentBlock(resource=TextResourceContents() as text):
                where = _path(text.uri, workspace)
                goal.append(f'<file path="{where}">\n{text.text}\n</file>')
            case EmbeddedResourceContentBlock(resource=BlobResourceContents() as blob):
                if not (blob.mime_type or "").startswith("image/"):
                    raise UsageError(
                        f"{blob.uri}: reins takes the text of a file, or an image, not "
                        f"{blob.mime_type or 'binary data'}"
                    )
                goal.append(Image.from_bytes(_decoded(blob.blob), name=_path(blob.uri, workspace)))
            case AudioContentBlock():
                raise UsageError("reins takes no audio: give the prompt as text")
    return goal


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("an image's data is not base64") from None


def _path(uri: str, workspace: Path) -> str:
    """A `file://` URI as a path (relative to the workspace inside it); another URI as it is."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(os.path.realpath(unquote(parsed.path)))  # as the workspace is named
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)


def servers_of(given: Sequence[EditorServer]) -> list[MCPServerConfig]:
    """The editor's MCP servers (stdio and streamable HTTP; reins speaks no SSE) as reins'
    configs, each named so that its tools can be offered as NAME__TOOL."""
    servers: list[MCPServerConfig] = []
    for server in given:
        name = _name(server.name)
        match server:
            case McpServerStdio():
                env = {v.name: v.value for v in server.env}
                servers.append(
                    MCPServerConfig(
                        name=name, command=server.command, args=tuple(server.args), env=env
                    )
                )
            case HttpMcpServer():
                headers = {h.name: h.value for h in server.headers}
                servers.append(MCPServerConfig(name=name, url=server.url, headers=headers))
            case SseMcpServer() | AcpMcpServer():
                raise UsageError(
                    f"MCP server {server.name!r}: reins takes stdio and streamable HTTP "
                    f"servers, not {server.type}"
                )
    return servers


def _name(name: str) -> str:
    """A server's name as reins takes it: letters, digits, '_' and '-', at most 40."""
    name = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "-", name)).strip("-")
    return name[:40] or "server"
