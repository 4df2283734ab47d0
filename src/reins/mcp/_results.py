"""An MCP tool's result as the observation the model reads: text, and the images and PDFs in it."""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
from pathlib import Path

import mcp.types as types

from ..core._errors import UsageError
from ..core._media import Document, Image, media_from_bytes


def observation(
    result: types.CallToolResult, *, save_to: Path | None = None, shown_as: str = ""
) -> str | list[str | Image | Document]:
    """Text content as it is; structured content as JSON when no text says it; images,
    audio and binary resources described, and saved under `save_to` (the run's spill folder,
    which the file tools can read, named to the model as `shown_as`) when there is one. An
    image or a PDF reins can send comes too, after the text (a list: the text, then them)."""
    parts: list[str] = []
    media: list[Image | Document] = []
    for item in result.content:
        match item:
            case types.TextContent():
                parts.append(item.text)
            case types.ImageContent() | types.AudioContent():
                kind = "image" if isinstance(item, types.ImageContent) else "audio"
                parts.append(_binary(kind, item.mime_type, item.data, save_to, shown_as, media))
            case types.ResourceLink():
                about = f" ({item.description})" if item.description else ""
                parts.append(f"[resource link: {item.uri} {item.name}{about}]")
            case types.EmbeddedResource():
                resource = item.resource
                if isinstance(resource, types.TextResourceContents):
                    parts.append(f"[resource {resource.uri}]\n{resource.text}")
                elif (text := _text_of(resource)) is not None:
                    parts.append(f"[resource {resource.uri}]\n{text}")
                else:
                    mime = resource.mime_type or "application/octet-stream"
                    blob = resource.blob
                    parts.append(
                        _binary("resource", mime, blob, save_to, shown_as, media, resource.uri)
                    )
            case _:
                parts.append(f"[{getattr(item, 'type', type(item).__name__)} content]")
    structured = result.structured_content
    if structured is not None and not any(isinstance(i, types.TextContent) for i in result.content):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(parts)
    return [text, *media] if media else text


def _text_of(resource: types.BlobResourceContents) -> str | None:
    """A blob that is text (a `text/*` or JSON type, in UTF-8), as text."""
    mime = resource.mime_type or ""
    if not (mime.startswith("text/") or mime.endswith(("json", "xml", "yaml"))):
        return None
    try:
        return base64.b64decode(resource.blob, validate=True).decode("utf-8")
    except ValueError:  # not base64, or not UTF-8
        return None


def _binary(
    kind: str,
    mime: str,
    data: str,
    folder: Path | None,
    shown_as: str,
    media: list[Image | Document],
    source: object = None,
) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return f"[{kind}, {mime}: its data is not valid base64]"
    with contextlib.suppress(UsageError):  # not a kind reins sends: described only
        media.append(media_from_bytes(raw))
    where = ""
    if folder is not None:
        suffix = mime.rpartition("/")[2].split("+")[0][:8] or "bin"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            name = f"mcp-{secrets.token_hex(6)}.{suffix}"
            (folder / name).write_bytes(raw)
            where = f", saved to {shown_as or folder}/{name}"
        except OSError:
            pass
    origin = f" from {source}" if source is not None else ""
    return f"[{kind}, {mime}, {len(raw)} bytes{where}{origin}]"
