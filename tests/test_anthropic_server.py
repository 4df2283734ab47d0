"""The Anthropic adapter against a real Messages API: llama.cpp's `llama-server` on SmolLM2.

SmolLM2's chat template has no tools, so this server never answers with a `tool_use` block;
tool calls are tested against recorded exchanges in test_anthropic_recorded.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from reins import (
    AssistantMessage,
    ModelResponse,
    ModelSettings,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from reins.models import AnthropicModel
from reins.models._embedded import embedded_gguf
from reins.tools import write_file

from .llama_server import built_llama_server, run_llama_server

pytestmark = pytest.mark.real_model
WRITE = write_file.spec


@pytest.fixture(scope="module")
def messages_api() -> Iterator[str]:
    binary = built_llama_server()
    with run_llama_server(binary, embedded_gguf("smollm2")) as base_url:
        yield base_url


@pytest.fixture
async def model(messages_api: str) -> AsyncIterator[AnthropicModel]:
    provider = AnthropicModel(model="smollm2", base_url=messages_api, api_key="none")
    yield provider
    await provider.aclose()


async def test_text_streams_from_content_block_deltas(model: AnthropicModel) -> None:
    settings = ModelSettings(temperature=0.0, max_tokens=24)
    items = [i async for i in model.stream([UserMessage(content="Say hello.")], [], settings)]
    deltas = [i.text for i in items if isinstance(i, TextChunk)]
    [response] = [i for i in items if isinstance(i, ModelResponse)]
    assert len(deltas) > 3
    assert response.message.text == "".join(deltas)
    assert response.finish in ("end_turn", "max_tokens")
    assert response.usage.input_tokens > 0
    assert 0 < response.usage.output_tokens <= 24
    assert response.model_name == "anthropic:smollm2"


async def test_the_output_cap_maps_to_max_tokens(model: AnthropicModel) -> None:
    settings = ModelSettings(temperature=0.0, max_tokens=3)
    response = await model.request([UserMessage(content="Tell a long story.")], [], settings)
    assert (response.finish, response.usage.output_tokens) == ("max_tokens", 3)


async def test_a_tool_round_trip_is_accepted(model: AnthropicModel) -> None:
    call = ToolCall(id="toolu_1", name="write_file", arguments={"path": "a.txt", "content": "hi"})
    messages = [
        SystemMessage(content="You are a helpful assistant."),
        UserMessage(content="Create a.txt containing hi"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="toolu_1", name="write_file", content="Wrote 2 bytes to a.txt"),
    ]
    settings = ModelSettings(temperature=0.0, max_tokens=8)
    response = await model.request(messages, [WRITE], settings)
    alone = await model.request(messages[:2], [WRITE], settings)
    # the call and its result were read as part of the prompt (cached tokens included)
    assert response.usage.input_tokens > alone.usage.input_tokens + 10
