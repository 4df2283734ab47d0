"""Images and documents as each provider's wire takes them (base64, from the value's bytes).

Checked against the SDKs' own types: OpenAI chat's `image_url` and `file` content parts, the
Responses API's `input_image` and `input_file`, Anthropic's `image` and `document` blocks,
Bedrock Converse's `image` and `document` blocks (Gemini's inline data is in `_gemini`).
"""

from __future__ import annotations

import re
from typing import Any

from ..core._media import Document, Image

DEFAULT_FILENAME = "document.pdf"
"""OpenAI wants a file name with a file's data; a document given as bytes has none."""


def chat_part(media: Image | Document) -> dict[str, Any]:
    """An OpenAI chat content part (`ChatCompletionContentPartParam`)."""
    if isinstance(media, Image):
        return {"type": "image_url", "image_url": {"url": media.data_url()}}
    filename = media.name or DEFAULT_FILENAME
    return {"type": "file", "file": {"filename": filename, "file_data": media.data_url()}}


def responses_part(media: Image | Document) -> dict[str, Any]:
    """A Responses API input content item (`ResponseInputImageParam`, `...FileParam`)."""
    if isinstance(media, Image):
        return {"type": "input_image", "image_url": media.data_url(), "detail": "auto"}
    filename = media.name or DEFAULT_FILENAME
    return {"type": "input_file", "filename": filename, "file_data": media.data_url()}


def anthropic_block(media: Image | Document) -> dict[str, Any]:
    """An Anthropic content block (`ImageBlockParam`, `DocumentBlockParam`)."""
    source = {"type": "base64", "media_type": media.media_type, "data": media.base64()}
    if isinstance(media, Image):
        return {"type": "image", "source": source}
    block: dict[str, Any] = {"type": "document", "source": source}
    if media.name:
        block["title"] = media.name
    return block


def bedrock_block(media: Image | Document) -> dict[str, Any]:
    """A Converse content block (botocore's `ImageBlock`, `DocumentBlock`), raw bytes: boto3
    encodes them."""
    if isinstance(media, Image):
        kind = media.media_type.removeprefix("image/")  # png, jpeg, gif, webp: Converse's names
        return {"image": {"format": kind, "source": {"bytes": media.data}}}
    return {
        "document": {
            "format": "pdf",
            "name": _bedrock_name(media.name),
            "source": {"bytes": media.data},
        }
    }


def _bedrock_name(name: str) -> str:
    """Converse takes a document name of letters, digits, spaces (one at a time), hyphens,
    parentheses and square brackets only."""
    stem = name.rsplit(".", 1)[0] if name else ""
    cleaned = re.sub(r"\s+", " ", re.sub(r"[^A-Za-z0-9\s\-()\[\]]", "-", stem)).strip()
    return cleaned or "document"


def returned_by(media: Image | Document, tool: str, call_id: str) -> str:
    """What precedes a tool result's image or document when it goes in a user message (the
    wire's tool results hold text only)."""
    return f"The {media.describe()} that {tool} returned (call {call_id}):"
