"""Images and documents on each provider's wire, against servers the tests start that speak
it: the exact request bodies they got (checked against the SDKs' own types too) for a goal
with an image and a PDF, and for `read_file` of an image."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from reins import Agent, Document, Image
from reins.events import Notice
from reins.models import AnthropicModel, OpenAIModel, OpenAIResponsesModel
from reins.tools import read_file

from . import test_responses as responses
from .test_anthropic_recorded import DONE, Recorded, block, finish, message_start, sse
from .test_media import PDF, png

pytestmark = pytest.mark.real_model


@pytest.fixture
async def peer() -> AsyncIterator[Recorded]:
    recorded = Recorded([])
    server = await asyncio.start_server(recorded.handle, "127.0.0.1", 0)
    recorded.base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"  # type: ignore[attr-defined]
    yield recorded
    server.close()
    await server.wait_closed()
    assert recorded.answers == [], "recorded exchanges were not played"
    assert recorded.unexpected == [], "requests came that were not recorded"


def data_url(data: bytes, media_type: str) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def goal() -> list[str | Image | Document]:
    return [
        "What is wrong here?",
        Image.from_bytes(png(), name="shot.png"),
        Document.from_bytes(PDF, name="spec.pdf"),
    ]


# OpenAI chat completions: streamed chunks.
def chat_sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [choice],
    }


CHAT_READS = chat_sse(
    chunk({"role": "assistant", "content": None}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "shot.png"}'},
                }
            ]
        }
    ),
    chunk({}, "tool_calls"),
)
CHAT_DONE = chat_sse(chunk({"role": "assistant", "content": "A red pixel."}), chunk({}, "stop"))


async def test_openai_chat_sends_image_url_and_file_parts(peer: Recorded, workspace: Path) -> None:
    peer.path = "/v1/chat/completions"
    peer.answers = [CHAT_READS, CHAT_DONE]
    (workspace / "shot.png").write_bytes(png(red=7))
    model = OpenAIModel(model="gpt-4o", base_url=f"{peer.base_url}/v1", api_key="x")  # type: ignore[attr-defined]
    try:
        result = await Agent(model=model, tools=[read_file], workspace=workspace).run(goal())
    finally:
        await model.aclose()
    assert result.final_answer == "A red pixel."
    first, second = peer.requests
    for body in (first, second):
        TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
    assert first["messages"][1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is wrong here?"},
            {"type": "image_url", "image_url": {"url": data_url(png(), "image/png")}},
            {
                "type": "file",
                "file": {"filename": "spec.pdf", "file_data": data_url(PDF, "application/pdf")},
            },
        ],
    }
    # A tool message holds text only: the image it returned follows in a user message.
    tool, shown = second["messages"][3:]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "image shot.png (image/png, 69 bytes)",
    }
    assert shown == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "The image shot.png (image/png, 69 bytes) that read_file returned "
                "(call call_1):",
            },
            {"type": "image_url", "image_url": {"url": data_url(png(red=7), "image/png")}},
        ],
    }


async def test_a_catalog_model_without_vision_is_sent_a_note(
    peer: Recorded, workspace: Path
) -> None:
    peer.path = "/v1/chat/completions"
    peer.answers = [CHAT_DONE]
    model = OpenAIModel(model="llama3.2", base_url=f"{peer.base_url}/v1", api_key="x")  # type: ignore[attr-defined]
    agent = Agent(model=model, workspace=workspace)
    try:
        result = await agent.run(goal())
    finally:
        await model.aclose()
    [body] = peer.requests
    assert body["messages"][1] == {
        "role": "user",
        "content": "What is wrong here?\n\n"
        "[image shot.png (image/png, 69 bytes) was given here; this model cannot take images, "
        "so it was not sent]\n\n"
        "[document spec.pdf (application/pdf, 48 bytes) was given here; this model cannot "
        "take documents, so it was not sent]",
    }
    notices = [e.text for e in await agent.log.events(result.run_id) if isinstance(e, Notice)]
    assert "model 'openai:llama3.2' takes no images or documents" in notices[0]


def uncached(block: dict[str, Any]) -> dict[str, Any]:
    """A block without the cache breakpoint the adapter puts on a turn's last block."""
    return {k: v for k, v in block.items() if k != "cache_control"}


ANTHROPIC_READS = sse(
    message_start(400),
    *block(
        0,
        {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}},
        {"type": "input_json_delta", "partial_json": '{"path": "shot.png"}'},
    ),
    *finish("tool_use", 20),
)


async def test_anthropic_sends_image_and_document_blocks(peer: Recorded, workspace: Path) -> None:
    peer.answers = [ANTHROPIC_READS, DONE]
    (workspace / "shot.png").write_bytes(png(red=7))
    model = AnthropicModel(model="claude-sonnet-4-5", base_url=peer.base_url)  # type: ignore[attr-defined]
    try:
        await Agent(model=model, tools=[read_file], workspace=workspace).run(goal())
    finally:
        await model.aclose()
    first, second = peer.requests
    for body in (first, second):
        TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
    image = {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(png()).decode(),
        },
    }
    document = {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(PDF).decode(),
        },
        "title": "spec.pdf",
    }
    blocks = [uncached(b) for b in first["messages"][0]["content"]]
    assert blocks == [{"type": "text", "text": "What is wrong here?"}, image, document]
    [result] = second["messages"][2]["content"]
    assert uncached(result) == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": [
            {"type": "text", "text": "image shot.png (image/png, 69 bytes)"},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(png(red=7)).decode(),
                },
            },
        ],
        "is_error": False,
    }


async def test_the_responses_api_sends_input_image_and_input_file(
    peer: Recorded, workspace: Path
) -> None:
    peer.path = "/v1/responses"
    reads = {**responses.CALL, "name": "read_file", "arguments": '{"path": "shot.png"}'}
    peer.answers = [
        responses.sse(
            {
                "type": "response.completed",
                "sequence_number": 0,
                "response": responses.response("completed", [reads], responses.usage(10, 0, 5)),
            }
        ),
        responses.ANSWERS,
    ]
    (workspace / "shot.png").write_bytes(png(red=7))
    model = OpenAIResponsesModel(model="gpt-4.1", base_url=f"{peer.base_url}/v1", api_key="x")  # type: ignore[attr-defined]
    try:
        await Agent(model=model, tools=[read_file], workspace=workspace).run(goal())
    finally:
        await model.aclose()
    first, second = peer.requests
    for body in (first, second):
        TypeAdapter(ResponseCreateParamsStreaming).validate_python(body)
    assert first["input"][1] == {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is wrong here?"},
            {"type": "input_image", "image_url": data_url(png(), "image/png"), "detail": "auto"},
            {
                "type": "input_file",
                "filename": "spec.pdf",
                "file_data": data_url(PDF, "application/pdf"),
            },
        ],
    }
    assert second["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_01",
        "output": [
            {"type": "input_text", "text": "image shot.png (image/png, 69 bytes)"},
            {
                "type": "input_image",
                "image_url": data_url(png(red=7), "image/png"),
                "detail": "auto",
            },
        ],
    }
