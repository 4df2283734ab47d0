"""Amazon Bedrock (`bedrock:MODEL-ID`) against a real HTTP server on 127.0.0.1 that speaks the
Converse API (`POST /model/{id}/converse-stream`, answered in the AWS event-stream binary
encoding). Each event the server sends, and each request it got, is checked against botocore's
own service model of bedrock-runtime; boto3 signs with dummy credentials from the environment."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
import subprocess
import sys
import threading
from binascii import crc32
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import botocore.session
import pytest
from botocore.validate import ParamValidator

from reins import (
    Agent,
    AssistantMessage,
    ModelResponse,
    ModelSettings,
    StopReason,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolResultMessage,
    UsageError,
    UserMessage,
    resolve_model,
)
from reins.core._catalog import lookup
from reins.core._errors import ModelConnectionError, ModelHTTPError
from reins.core._media import Document, Image
from reins.core._model import Retrying, ThinkingChunk, takes_media
from reins.models import BedrockModel
from reins.tools import read_file, write_file

from .test_media import PDF, png
from .wire_server import (
    FAST,
    Answer,
    Received,
    WireServer,
    assert_a_stall_closes_the_connection,
    closed_url,
    stalling,
    wire_server,
)

pytestmark = pytest.mark.real_model
MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"
CACHE_POINT = {"cachePoint": {"type": "default"}}
SERVICE = botocore.session.get_session().get_service_model("bedrock-runtime")
STREAM = SERVICE.operation_model("ConverseStream")


def _checked(params: dict[str, Any], shape: Any) -> None:
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()


def frame(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One message of the AWS event-stream encoding: a prelude (lengths and their CRC), string
    headers, the JSON payload, the message's CRC."""
    encoded = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode()
        for k, v in headers.items()
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(encoded) + len(body) + 4, len(encoded))
    prelude += struct.pack(">I", crc32(prelude))
    message = prelude + encoded + body
    return message + struct.pack(">I", crc32(message))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    """An event of ConverseStream's output union, checked against its shape first."""
    shape = STREAM.output_shape.members["stream"].members[kind]
    wire = {k: v for k, v in payload.items() if k != "bytes"}
    _checked(wire, shape)
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, payload)


def stream(*events: bytes) -> Answer:
    return Answer(headers={"Content-Type": "application/vnd.amazon.eventstream"}, chunks=events)


def text(*pieces: str, stop: str = "end_turn", usage: tuple[int, int] = (10, 2)) -> Answer:
    return stream(
        event("messageStart", {"role": "assistant"}),
        *(
            event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}})
            for p in pieces
        ),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": stop}),
        metadata(*usage),
    )


def metadata(prompt: int, output: int, cache_read: int = 0) -> bytes:
    usage = {"inputTokens": prompt, "outputTokens": output, "totalTokens": prompt + output}
    if cache_read:
        usage["cacheReadInputTokens"] = cache_read
    return event("metadata", {"usage": usage, "metrics": {"latencyMs": 5}})


def calls_write_file(index: int = 0) -> list[bytes]:
    arguments = json.dumps({"path": "a.txt", "content": "hi"})
    return [
        event(
            "contentBlockStart",
            {
                "contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "write_file"}},
            },
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": index, "delta": {"toolUse": {"input": arguments[:12]}}},
        ),
        event(
            "contentBlockDelta",
            {"contentBlockIndex": index, "delta": {"toolUse": {"input": arguments[12:]}}},
        ),
        event("contentBlockStop", {"contentBlockIndex": index}),
        event("messageStop", {"stopReason": "tool_use"}),
    ]


def request_of(received: Received, *, blobs: bool = False) -> dict[str, Any]:
    """The request body, checked against ConverseStream's input shape (the model id is in the
    path); botocore's validator refuses unknown keys and wrong types. With `blobs`, the
    base64 of each image's and document's bytes is decoded for the check."""
    body = received.json()
    model_id = unquote(received.path.removeprefix("/model/").removesuffix("/converse-stream"))
    checked = json.loads(received.body, object_hook=_decoded) if blobs else body
    _checked({"modelId": model_id, **checked}, STREAM.input_shape)
    return {"modelId": model_id, **body}


def _decoded(value: dict[str, Any]) -> dict[str, Any]:
    if set(value) == {"bytes"}:
        return {"bytes": base64.b64decode(value["bytes"])}
    return value


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[WireServer]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    with wire_server() as running:
        yield running


def model(server: WireServer) -> BedrockModel:
    return BedrockModel(model=MODEL_ID, endpoint_url=server.url)


async def test_text_streams_with_usage_and_a_signed_request(server: WireServer) -> None:
    server.handler = lambda _: text("Hel", "lo.", usage=(12, 3))
    messages = [SystemMessage(content="Be brief."), UserMessage(content="Say hello.")]
    items = [
        i
        async for i in model(server).stream(
            messages, [], ModelSettings(max_tokens=64, temperature=0.2)
        )
    ]

    assert [i.text for i in items if isinstance(i, TextChunk)] == ["Hel", "lo."]
    [response] = [i for i in items if isinstance(i, ModelResponse)]
    assert response.message.text == "Hello."
    assert response.finish == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.model_name == f"bedrock:{MODEL_ID}"
    [sent] = server.received
    assert sent.path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
    assert "/us-east-1/bedrock/aws4_request" in sent.headers["authorization"]
    body = request_of(sent)
    # Claude 3.5 Haiku caches prompts on Bedrock: cache points after the system prompt and turn
    assert body["system"] == [{"text": "Be brief."}, CACHE_POINT]
    assert body["messages"] == [{"role": "user", "content": [{"text": "Say hello."}, CACHE_POINT]}]
    assert body["inferenceConfig"] == {"maxTokens": 64, "temperature": 0.2}
    assert "toolConfig" not in body


async def test_a_tool_call_assembles_and_its_result_goes_back(server: WireServer) -> None:
    server.handler = lambda _: stream(
        event("messageStart", {"role": "assistant"}), *calls_write_file(), metadata(40, 9)
    )
    prompt = [UserMessage(content="Create a.txt containing hi")]
    settings = ModelSettings(tool_choice="required")
    first = await model(server).request(prompt, [write_file.spec], settings)

    [call] = first.message.tool_calls
    assert (call.id, call.name) == ("tooluse_1", "write_file")
    assert call.arguments == {"path": "a.txt", "content": "hi"}
    assert first.finish == "tool_use"
    tools = request_of(server.received[0])["toolConfig"]
    assert tools["toolChoice"] == {"any": {}}
    [spec, point] = tools["tools"]
    assert point == CACHE_POINT
    assert spec["toolSpec"]["name"] == "write_file"
    assert spec["toolSpec"]["inputSchema"] == {"json": write_file.spec.parameters}

    server.handler = lambda _: text("Done.")
    history = [
        *prompt,
        first.message,
        ToolResultMessage(call_id="tooluse_1", name="write_file", content="Boom", is_error=True),
    ]
    await model(server).request(history, [write_file.spec], settings)
    turns = request_of(server.received[1])["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {
            "toolUse": {
                "toolUseId": "tooluse_1",
                "name": "write_file",
                "input": {"path": "a.txt", "content": "hi"},
            }
        }
    ]
    assert turns[2]["content"] == [
        {
            "toolResult": {
                "toolUseId": "tooluse_1",
                "content": [{"text": "Boom"}],
                "status": "error",
            }
        },
        CACHE_POINT,
    ]


async def test_reasoning_streams_and_goes_back_signed(server: WireServer) -> None:
    reasoning = {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Weighing."}}}
    signature = {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig=="}}}
    server.handler = lambda _: stream(
        event("messageStart", {"role": "assistant"}),
        event("contentBlockDelta", reasoning),
        event("contentBlockDelta", signature),
        event("contentBlockStop", {"contentBlockIndex": 0}),
        *calls_write_file(index=1),
        metadata(50, 20, cache_read=30),
    )
    settings = ModelSettings(thinking_budget=1024, max_tokens=2048, temperature=0.5)
    prompt = [UserMessage(content="?")]
    items = [i async for i in model(server).stream(prompt, [write_file.spec], settings)]

    assert [i.text for i in items if isinstance(i, ThinkingChunk)] == ["Weighing."]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    assert response.message.thinking == "Weighing."
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (80, 30)
    sent = request_of(server.received[0])
    assert sent["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }
    assert sent["inferenceConfig"] == {"maxTokens": 2048}  # thinking takes no temperature

    server.handler = lambda _: text("ok")
    result = ToolResultMessage(call_id="tooluse_1", name="write_file", content="Wrote 2 bytes")
    await model(server).request([*prompt, response.message, result], [write_file.spec], settings)
    turns = request_of(server.received[1])["messages"]
    assert turns[1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "Weighing.", "signature": "sig=="}}
    }


@pytest.mark.parametrize(
    ("model_id", "system", "tools", "turns"),
    [
        ("meta.llama3-1-70b-instruct-v1:0", 0, 0, 0),  # Bedrock caches none of Llama's
        ("amazon.nova-pro-v1:0", 1, 0, 2),  # Nova caches no tools
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", 1, 1, 2),
    ],
)
async def test_cache_points_go_where_the_model_takes_them(
    server: WireServer, model_id: str, system: int, tools: int, turns: int
) -> None:
    server.handler = lambda _: text("ok")
    history = [
        SystemMessage(content="Be brief."),
        UserMessage(content="Create a.txt"),
        AssistantMessage(tool_calls=(ToolCall(id="t1", name="write_file", arguments={}),)),
        ToolResultMessage(call_id="t1", name="write_file", content="Wrote 0 bytes"),
        UserMessage(content="Now b.txt"),
    ]
    await BedrockModel(model=model_id, endpoint_url=server.url).request(
        history, [write_file.spec], FAST
    )
    body = request_of(server.received[0])
    assert body["system"].count(CACHE_POINT) == system
    assert body["toolConfig"]["tools"].count(CACHE_POINT) == tools
    assert sum(t["content"].count(CACHE_POINT) for t in body["messages"]) == turns
    if turns:  # the two latest user turns end with one
        assert [t["content"][-1] == CACHE_POINT for t in body["messages"]] == [True, False, True]

    unmarked = BedrockModel(model=model_id, endpoint_url=server.url, prompt_cache=False)
    await unmarked.request(history, [write_file.spec], FAST)
    assert CACHE_POINT not in json.loads(server.received[1].body).get("system", [])
    assert "cachePoint" not in server.received[1].body.decode()


async def test_a_guardrail_is_a_refusal(server: WireServer) -> None:
    server.handler = lambda _: text("", stop="guardrail_intervened")
    response = await model(server).request([UserMessage(content="?")], [], FAST)
    assert response.finish == "refusal"


def error(status: int, code: str, message: str) -> Answer:
    body = json.dumps({"message": message}).encode()
    headers = {
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/",
    }
    return Answer(status=status, headers=headers, chunks=[body])


async def test_throttling_is_retried_and_a_bad_request_is_not(server: WireServer) -> None:
    answers = iter([error(429, "ThrottlingException", "Too many requests"), text("ok")])
    server.handler = lambda _: next(answers)
    items = [i async for i in model(server).stream([UserMessage(content="?")], [], FAST)]
    [retry] = [i for i in items if isinstance(i, Retrying)]
    assert "HTTP 429: ThrottlingException: Too many requests" in retry.error
    assert isinstance(items[-1], ModelResponse)
    assert items[-1].message.text == "ok"

    server.handler = lambda _: error(400, "ValidationException", "The model id is invalid")
    with pytest.raises(ModelHTTPError, match="ValidationException: The model id is invalid"):
        await model(server).request([UserMessage(content="?")], [], FAST)
    assert len(server.received) == 3  # the 400 was not retried


async def test_an_exception_in_the_stream_is_retried_like_its_status(server: WireServer) -> None:
    exception = {":exception-type": "throttlingException", ":content-type": "application/json"}
    exception[":message-type"] = "exception"
    _checked({"message": "slow"}, SERVICE.shape_for("ThrottlingException"))
    answers = iter(
        [
            stream(
                event("messageStart", {"role": "assistant"}),
                event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "par"}}),
                frame(exception, {"message": "slow"}),
            ),
            text("whole"),
        ]
    )
    server.handler = lambda _: next(answers)
    items = [i async for i in model(server).stream([UserMessage(content="?")], [], FAST)]
    [retry] = [i for i in items if isinstance(i, Retrying)]
    assert "HTTP 429: throttlingException: slow" in retry.error
    assert isinstance(items[-1], ModelResponse)
    assert items[-1].message.text == "whole"


async def test_no_server_is_a_connection_error(server: WireServer) -> None:
    url = closed_url()
    lost = BedrockModel(model=MODEL_ID, endpoint_url=url)
    with pytest.raises(ModelConnectionError, match=f"no connection to {url}"):
        await lost.request([UserMessage(content="?")], [], ModelSettings(max_retries=0))


async def test_no_credentials_is_one_clear_error(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(UsageError, match="needs AWS credentials: set AWS_ACCESS_KEY_ID"):
        await model(server).request([UserMessage(content="?")], [], FAST)
    assert server.received == []


async def test_an_agent_runs_a_tool_through_bedrock_from_the_environment(
    server: WireServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = iter(
        [
            stream(
                event("messageStart", {"role": "assistant"}),
                *calls_write_file(),
                metadata(100, 10),
            ),
            text("a.txt says hi.", usage=(140, 5)),
        ]
    )
    server.handler = lambda _: next(replies)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)  # boto3's own variable
    bedrock = resolve_model(f"bedrock:{MODEL_ID}")
    result = await Agent(model=bedrock, tools=[write_file], workspace=workspace).run(
        "Create a.txt containing hi"
    )

    assert (workspace / "a.txt").read_text() == "hi"
    assert result.final_answer == "a.txt says hi."
    assert result.stop_reason is StopReason.END_TURN
    assert (result.usage.input_tokens, result.usage.requests) == (240, 2)
    answered = request_of(server.received[1])["messages"]
    assert answered[-1]["content"][0]["toolResult"]["toolUseId"] == "tooluse_1"


async def test_without_boto3_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if not installed
    with pytest.raises(UsageError, match=r"pip install 'reins\[bedrock\]'"):
        await BedrockModel(model=MODEL_ID).request([UserMessage(content="?")], [], FAST)


async def test_images_and_documents_go_as_converse_blocks(server: WireServer) -> None:
    server.handler = lambda _: text("A red dot.")
    image, document = Image.from_bytes(png()), Document.from_bytes(PDF, name="my spec, v2.pdf")
    call = ToolCall(id="tooluse_1", name="read_file", arguments={"path": "dot.png"})
    messages = [
        UserMessage(content="What do these show?", media=(image, document)),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="tooluse_1", name="read_file", content="dot.png", media=(image,)),
    ]
    bedrock = model(server)
    assert takes_media(bedrock)
    assert not takes_media(BedrockModel(model="meta.llama3-1-70b-instruct-v1:0"))
    await bedrock.request(messages, [read_file.spec], FAST)

    asked, _, answered = request_of(server.received[0], blobs=True)["messages"]
    encoded = base64.b64encode(png()).decode()  # the JSON wire carries bytes as base64
    assert asked["content"] == [
        {"text": "What do these show?"},
        {"image": {"format": "png", "source": {"bytes": encoded}}},
        {
            "document": {
                "format": "pdf",
                "name": "my spec- v2",  # what Converse allows in a name
                "source": {"bytes": base64.b64encode(PDF).decode()},
            }
        },
        CACHE_POINT,
    ]
    assert answered["content"][1] == CACHE_POINT
    assert answered["content"][0]["toolResult"]["content"] == [
        {"text": "dot.png"},
        {"image": {"format": "png", "source": {"bytes": encoded}}},
    ]


async def test_a_stalled_stream_times_out_and_its_connection_is_closed(
    server: WireServer,
) -> None:
    first = event("messageStart", {"role": "assistant"})
    again = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})
    server.handler = lambda _: stalling("application/vnd.amazon.eventstream", first, again)
    # the worker thread's read is not left to run on: closing the stream closed the connection
    await assert_a_stall_closes_the_connection(model(server), server)


def test_the_catalog_knows_bedrock_models_by_their_maker_s_names() -> None:
    """models.dev lists only Bedrock's current ids; an older id, or an inference profile of a
    region, is found by its maker's name (a window of 8,192 tokens would compact every step)."""
    sonnet = lookup("bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0")
    assert (sonnet.context_window, sonnet.known, sonnet.vision) == (200_000, True, True)
    assert lookup(f"bedrock:{MODEL_ID}").context_window == 200_000
    assert lookup("bedrock:amazon.nova-pro-v1:0").context_window == 300_000


def test_reins_run_answers_through_bedrock(
    server: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.handler = lambda _: text("Hello from Bedrock.", usage=(20, 4))
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    done = subprocess.run(
        [sys.executable, "-m", "reins", "run", "-m", f"bedrock:{MODEL_ID}", "Say hello."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Hello from Bedrock." in done.stdout
    assert request_of(server.received[0])["messages"][-1]["content"][0] == {"text": "Say hello."}


async def test_more_streams_at_once_than_asyncio_has_threads(server: WireServer) -> None:
    """Parallel runs (subagents) each hold a thread while their stream waits: more of them than
    asyncio's default pool has threads all reach the server at once."""
    many = min(32, (os.cpu_count() or 1) + 4) + 2
    together = threading.Barrier(many, timeout=10)

    def answer(_: Received) -> Answer:
        together.wait()  # answers only once every request has arrived
        return text("ok")

    server.handler = answer
    bedrock = model(server)
    replies = await asyncio.gather(
        *(bedrock.request([UserMessage(content="?")], [], FAST) for _ in range(many))
    )
    assert [r.message.text for r in replies] == ["ok"] * many
