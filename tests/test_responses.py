"""OpenAI's Responses API (`openai-responses:NAME`): against a real server that speaks it
(llama.cpp's `llama-server` on SmolLM2), and, for a reasoning model's encrypted reasoning
items that no server here makes, on recorded exchanges in the documented streaming format."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    ModelSettings,
    StopReason,
    TextChunk,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    resolve_model,
)
from reins.core._catalog import price
from reins.models import OpenAIResponsesModel
from reins.models._embedded import embedded_gguf
from reins.tools import write_file

from .llama_server import built_llama_server, run_llama_server
from .test_anthropic_recorded import Recorded

pytestmark = pytest.mark.real_model
GREEDY = ModelSettings(temperature=0.0, max_tokens=24)


@pytest.fixture(scope="module")
def responses_api() -> Iterator[str]:
    binary = built_llama_server()
    with run_llama_server(binary, embedded_gguf("smollm2")) as base_url:
        yield f"{base_url}/v1"


@pytest.fixture
async def model(responses_api: str) -> AsyncIterator[OpenAIResponsesModel]:
    provider = OpenAIResponsesModel(model="smollm2", base_url=responses_api, api_key="none")
    yield provider
    await provider.aclose()


async def test_text_streams_and_the_response_carries_it(model: OpenAIResponsesModel) -> None:
    items = [item async for item in model.stream([UserMessage(content="Say hello.")], [], GREEDY)]
    deltas = "".join(i.text for i in items if isinstance(i, TextChunk))
    response = items[-1]
    assert deltas
    assert response.message.text == deltas  # type: ignore[union-attr]
    assert response.finish == "end_turn"  # type: ignore[union-attr]
    assert response.usage.input_tokens > 0  # type: ignore[union-attr]
    assert 0 < response.usage.output_tokens <= 24  # type: ignore[union-attr]
    assert response.model_name == "openai-responses:smollm2"  # type: ignore[union-attr]


async def test_a_function_call_and_its_output_go_back_as_items(
    model: OpenAIResponsesModel,
) -> None:
    call = ToolCall(id="call_1", name="write_file", arguments={"path": "a.txt", "content": "hi"})
    messages = [
        UserMessage(content="Create a.txt containing hi"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="call_1", name="write_file", content="Wrote 2 bytes to a.txt"),
    ]
    answered = await model.request(messages, [write_file.spec], GREEDY)
    alone = await model.request(messages[:1], [write_file.spec], GREEDY)
    # the call and its output were read as part of the prompt
    assert answered.usage.input_tokens > alone.usage.input_tokens + 10


async def test_an_agent_runs_on_it_by_name(
    responses_api: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", responses_api)
    monkeypatch.setenv("OPENAI_API_KEY", "none")
    model = resolve_model("openai-responses:smollm2")
    assert isinstance(model, OpenAIResponsesModel)
    try:
        result = await Agent(
            model=model, workspace=workspace, budgets=Budgets(max_steps=2), settings=GREEDY
        ).run("Say hello.")
    finally:
        await model.aclose()
    assert result.stop_reason is not StopReason.ERROR
    assert result.usage.requests >= 1
    assert result.usage.output_tokens > 0


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def response(status: str, output: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1764633600,
        "status": status,
        "model": "o4-mini-2025-04-16",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def usage(input_tokens: int, cached: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": input_tokens + output_tokens,
    }


REASONING = {
    "type": "reasoning",
    "id": "rs_01",
    "summary": [{"type": "summary_text", "text": "The file must be written first."}],
    "encrypted_content": "gAAAAABencrypted==",
}
CALL = {
    "type": "function_call",
    "id": "fc_01",
    "call_id": "call_01",
    "name": "write_file",
    "arguments": '{"path": "a.txt", "content": "hi"}',
    "status": "completed",
}
ANSWER = {
    "type": "message",
    "id": "msg_01",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "a.txt says hi.", "annotations": []}],
}
THINKS_THEN_CALLS = sse(
    {
        "type": "response.created",
        "sequence_number": 0,
        "response": response("in_progress", [], usage(0, 0, 0)),
    },
    {
        "type": "response.output_item.added",
        "sequence_number": 1,
        "output_index": 0,
        "item": {**REASONING, "summary": []},
    },
    {
        "type": "response.reasoning_summary_text.delta",
        "sequence_number": 2,
        "item_id": "rs_01",
        "output_index": 0,
        "summary_index": 0,
        "delta": "The file must be written first.",
    },
    {
        "type": "response.output_item.done",
        "sequence_number": 3,
        "output_index": 0,
        "item": REASONING,
    },
    {"type": "response.output_item.done", "sequence_number": 4, "output_index": 1, "item": CALL},
    {
        "type": "response.completed",
        "sequence_number": 5,
        "response": response("completed", [REASONING, CALL], usage(1200, 0, 90)),
    },
)
ANSWERS = sse(
    {
        "type": "response.output_text.delta",
        "sequence_number": 0,
        "item_id": "msg_01",
        "output_index": 0,
        "content_index": 0,
        "delta": "a.txt says hi.",
        "logprobs": [],
    },
    {
        "type": "response.completed",
        "sequence_number": 1,
        "response": response("completed", [ANSWER], usage(1400, 1152, 8)),
    },
)


@pytest.fixture
async def recorded() -> AsyncIterator[Recorded]:
    peer = Recorded([], path="/v1/responses")
    server = await asyncio.start_server(peer.handle, "127.0.0.1", 0)
    peer.base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"  # type: ignore[attr-defined]
    yield peer
    server.close()
    await server.wait_closed()
    assert peer.answers == [], "recorded exchanges were not played"
    assert peer.unexpected == [], "requests came that were not recorded"


async def test_reasoning_items_go_back_encrypted_with_the_call(
    recorded: Recorded, workspace: Path
) -> None:
    recorded.answers = [THINKS_THEN_CALLS, ANSWERS]
    model = OpenAIResponsesModel(model="o4-mini", base_url=recorded.base_url, api_key="x")  # type: ignore[attr-defined]
    settings = ModelSettings(reasoning_effort="low", temperature=0.5, max_tokens=2000)
    agent = Agent(model=model, tools=[write_file], workspace=workspace, settings=settings)
    try:
        result = await agent.run("Create a.txt containing hi")
    finally:
        await model.aclose()

    assert (workspace / "a.txt").read_text() == "hi"
    assert result.final_answer == "a.txt says hi."
    first, second = recorded.requests
    sdk_types = TypeAdapter(ResponseCreateParamsStreaming)
    for body in (first, second):
        sdk_types.validate_python(body)
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"summary": "auto", "effort": "low"}
        assert body["max_output_tokens"] == 2000
        assert "temperature" not in body  # reasoning models refuse one
        assert body["tools"][0]["name"] == "write_file"
    reasoning, call, output = second["input"][2:5]
    assert reasoning == {
        "type": "reasoning",
        "id": "rs_01",
        "summary": [{"type": "summary_text", "text": "The file must be written first."}],
        "encrypted_content": "gAAAAABencrypted==",
    }
    assert call == {
        "type": "function_call",
        "call_id": "call_01",
        "name": "write_file",
        "arguments": '{"path": "a.txt", "content": "hi"}',
    }
    assert output["type"] == "function_call_output"
    assert output["call_id"] == "call_01"

    assert result.usage.input_tokens == 1200 + 1400
    assert result.usage.cache_read_tokens == 1152
    # Served by the test's peer, the run is not billed as OpenAI's; the same usage on OpenAI's
    # API is priced with its cached input apart. o4-mini per MTok: $1.10 input, $0.275 cached
    # input, $4.40 output.
    assert not result.cost
    fresh = 1200 + 1400 - 1152
    expected = (fresh * 1.10 + 1152 * 0.275 + (90 + 8) * 4.40) / 1e6
    assert price("openai:o4-mini", result.usage) == pytest.approx(expected)
