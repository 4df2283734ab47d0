"""The Anthropic adapter on recorded exchanges in the documented Messages API streaming format,
for what no server here produces (tool_use and thinking blocks, refusals). The peer fails the
test if an exchange is not played, or if a request comes that was not recorded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from pydantic import TypeAdapter

from reins import Agent, Budgets, ModelSettings, StopReason, UsageError, UserMessage
from reins.core._catalog import price
from reins.events import ToolCallFinished
from reins.models import AnthropicModel
from reins.tools import write_file

pytestmark = pytest.mark.real_model
EPHEMERAL = {"type": "ephemeral"}


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def message_start(input_tokens: int, cached: int = 0, written: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": written,
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return {"type": "message_start", "message": message}


def block(
    index: int, content_block: dict[str, Any], *deltas: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": content_block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def finish(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


TOOL_USE = sse(
    message_start(400, cached=72),
    {"type": "ping"},
    *block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "thinking_delta", "thinking": "I need to write the file."},
        {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
    ),
    *block(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Writing it now."}),
    *block(
        2,
        {"type": "tool_use", "id": "toolu_01", "name": "write_file", "input": {}},
        {"type": "input_json_delta", "partial_json": ""},
        {"type": "input_json_delta", "partial_json": '{"path": "a.txt",'},
        {"type": "input_json_delta", "partial_json": ' "content": "hi"}'},
    ),
    *finish("tool_use", 89),
)
DONE = sse(
    message_start(520),
    *block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "a.txt says hi."}),
    *finish("end_turn", 6),
)
WRITES_THE_CACHE = sse(
    message_start(100, written=2000),
    *block(
        0,
        {"type": "tool_use", "id": "toolu_07", "name": "write_file", "input": {}},
        {"type": "input_json_delta", "partial_json": '{"path": "a.txt", "content": "hi"}'},
    ),
    *finish("tool_use", 50),
)
READS_THE_CACHE = sse(
    message_start(150, cached=2000),
    *block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "a.txt says hi."}),
    *finish("end_turn", 10),
)
REDACTED_THEN_TOOL = sse(
    message_start(300),
    *block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "thinking_delta", "thinking": "Check first."},
        {"type": "signature_delta", "signature": "sig-A"},
    ),
    *block(1, {"type": "redacted_thinking", "data": "ENCRYPTED=="}),
    *block(
        2,
        {"type": "tool_use", "id": "toolu_02", "name": "write_file", "input": {}},
        {"type": "input_json_delta", "partial_json": '{"path": "b.txt", "content": "ok"}'},
    ),
    *finish("tool_use", 40),
)
REFUSAL = sse(
    message_start(30),
    *block(0, {"type": "text", "text": ""}, {"type": "text_delta", "text": "I can't"}),
    *finish("refusal", 2),
)


class Recorded:
    """Serves recorded answers to POST `path`, in order, and keeps the requests."""

    def __init__(self, answers: list[bytes], path: str = "/v1/messages") -> None:
        self.path = path
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.unexpected: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        length = next(
            int(line.split(":", 1)[1])
            for line in lines
            if line.lower().startswith("content-length")
        )
        body = json.loads(await reader.readexactly(length))
        if not lines[0].startswith(f"POST {self.path} ") or not self.answers:
            self.unexpected.append(lines[0])
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
        else:
            self.requests.append(body)
            answer = self.answers.pop(0)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(answer)}\r\nconnection: close\r\n\r\n".encode()
                + answer
            )
        await writer.drain()
        writer.close()
        await writer.wait_closed()


@pytest.fixture
async def recorded() -> AsyncIterator[tuple[Recorded, AnthropicModel]]:
    peer = Recorded([])
    server = await asyncio.start_server(peer.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    model = AnthropicModel(model="claude-recorded", base_url=f"http://127.0.0.1:{port}")
    yield peer, model
    await model.aclose()
    server.close()
    await server.wait_closed()
    assert peer.answers == [], "recorded exchanges were not played"
    assert peer.unexpected == [], "requests came that were not recorded"


async def test_a_tool_use_turn_runs_the_tool_and_the_next_turn_ends(
    recorded: tuple[Recorded, AnthropicModel], workspace: Path
) -> None:
    peer, model = recorded
    peer.answers = [TOOL_USE, DONE]
    agent = Agent(model=model, tools=[write_file], workspace=workspace)
    run = agent.iter("Create a.txt containing hi")
    events = [e async for e in run]

    assert (workspace / "a.txt").read_text() == "hi"
    [done] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (done.result.call_id, done.result.is_error) == ("toolu_01", False)
    state = run.state
    assert state.finished is not None
    assert (state.finished.stop_reason, state.finished.final_answer) == (
        StopReason.END_TURN,
        "a.txt says hi.",
    )
    first = state.messages[2]
    assert (first.thinking, first.text) == ("I need to write the file.", "Writing it now.")  # type: ignore[union-attr]
    assert state.usage.input_tokens == 472 + 520  # cached prompt tokens included
    assert state.usage.output_tokens == 89 + 6

    second = peer.requests[1]
    assert second["messages"][-2]["content"][-1] == {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "write_file",
        "input": {"path": "a.txt", "content": "hi"},
    }
    result, asked = second["messages"][-1]["content"]  # the done-check's question joins the turn
    assert second["messages"][-1]["role"] == "user"
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": "Wrote 2 bytes to a.txt",
        "is_error": False,
    }
    assert asked["type"] == "text"
    assert asked["text"].startswith("That change succeeded. Is the goal reached now?")
    assert peer.requests[0]["stream"] is True
    assert peer.requests[0]["tools"][0]["name"] == "write_file"


async def test_prompt_caching_marks_the_prefix_and_prices_reads_and_writes(
    recorded: tuple[Recorded, AnthropicModel], workspace: Path
) -> None:
    peer, recorded_model = recorded
    peer.answers = [WRITES_THE_CACHE, READS_THE_CACHE]
    model = AnthropicModel(model="claude-sonnet-4-5", base_url=recorded_model.base_url)
    agent = Agent(model=model, tools=[write_file], workspace=workspace)
    try:
        result = await agent.run("Create a.txt containing hi")
    finally:
        await model.aclose()

    assert result.final_answer == "a.txt says hi."
    first, second = peer.requests
    sdk_types = TypeAdapter(MessageCreateParamsStreaming)
    for body in (first, second):
        sdk_types.validate_python(body)
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert all("cache_control" not in tool for tool in body["tools"][:-1])
        [system] = body["system"]
        assert system["type"] == "text"
        assert system["cache_control"] == EPHEMERAL
        turns = body["messages"]
        marked = [
            (i, j)
            for i, turn in enumerate(turns)
            for j, content in enumerate(turn["content"])
            if "cache_control" in content
        ]
        users = [i for i, turn in enumerate(turns) if turn["role"] == "user"]
        assert marked == [(i, len(turns[i]["content"]) - 1) for i in users[-2:]]
    # The second request's first breakpoint is where the first request's prompt ended: the
    # prefix written by the first step is read by the second.
    assert second["messages"][0] == first["messages"][-1]
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"

    usage = result.usage
    assert (usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (
        100 + 2000 + 150 + 2000,
        2000,
        2000,
    )
    # Served by the test's peer, the run is not billed as Anthropic's; the same usage on
    # Anthropic's API is priced with its cache writes and reads apart. Claude Sonnet 4.5 per
    # MTok: $3 fresh input, $3.75 cache write, $0.30 read, $15 output.
    assert not result.cost
    expected = ((100 + 150) * 3 + 2000 * 3.75 + 2000 * 0.30 + (50 + 10) * 15) / 1e6
    assert price("anthropic:claude-sonnet-4-5", usage) == pytest.approx(expected)


async def test_a_refusal_maps_to_the_refusal_stop(
    recorded: tuple[Recorded, AnthropicModel],
) -> None:
    peer, model = recorded
    peer.answers = [REFUSAL]
    response = await model.request([UserMessage(content="x")], [], ModelSettings())
    assert (response.finish, response.message.text) == ("refusal", "I can't")


async def test_signed_and_redacted_thinking_go_back_unchanged(
    recorded: tuple[Recorded, AnthropicModel], workspace: Path
) -> None:
    """With extended thinking and tool use, the API wants the turn's thinking blocks back as
    they came, signatures and redacted blocks included, ahead of the tool use."""
    peer, model = recorded
    peer.answers = [REDACTED_THEN_TOOL, DONE]
    settings = ModelSettings(max_tokens=4096, thinking_budget=2048, temperature=0.0)
    agent = Agent(model=model, tools=[write_file], workspace=workspace, settings=settings)
    result = await agent.run("Create b.txt containing ok")
    assert result.stop_reason is StopReason.END_TURN

    first, second = peer.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in first  # extended thinking takes none
    assert first["tool_choice"] == {"type": "auto"}
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Check first.", "signature": "sig-A"},
            {"type": "redacted_thinking", "data": "ENCRYPTED=="},
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "write_file",
                "input": {"path": "b.txt", "content": "ok"},
            },
        ],
    }


async def test_a_thinking_budget_above_the_output_cap_is_refused(
    recorded: tuple[Recorded, AnthropicModel],
) -> None:
    _, model = recorded
    settings = ModelSettings(max_tokens=1024, thinking_budget=2048)
    with pytest.raises(UsageError, match=r"max_tokens \(1024\) must exceed thinking_budget"):
        await model.request([UserMessage(content="x")], [], settings)


async def test_the_summary_at_a_cap_defines_the_tools_and_calls_none(
    recorded: tuple[Recorded, AnthropicModel], workspace: Path
) -> None:
    """The API refuses a history with tool_use and tool_result blocks but no tools."""
    peer, model = recorded
    peer.answers = [TOOL_USE, DONE]
    agent = Agent(
        model=model,
        tools=[write_file],
        workspace=workspace,
        budgets=Budgets(max_steps=1, at_cap="summarize"),
    )
    result = await agent.run("Create a.txt containing hi")
    assert (result.stop_reason, result.final_answer) == (StopReason.MAX_STEPS, "a.txt says hi.")
    assert result.partial

    first, summary = peer.requests
    assert summary["tools"] == first["tools"]
    assert "write_file" in [t["name"] for t in summary["tools"]]
    assert (first["tool_choice"], summary["tool_choice"]) == ({"type": "auto"}, {"type": "none"})
    blocks = [b["type"] for m in summary["messages"] for b in m["content"]]
    assert {"tool_use", "tool_result"} <= set(blocks)
