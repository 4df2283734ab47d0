"""Gemini (`gemini:NAME`) against a real HTTP server on 127.0.0.1 that speaks the Gemini REST
API (`v1beta/models/{m}:streamGenerateContent?alt=sse`): its answers are built from the SDK's
own types (google.genai.types), and the requests it received are read back into them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.genai import types

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
from reins.agent._config import Config, Endpoint
from reins.agent._resolve import default_model
from reins.core._errors import ModelConnectionError, ModelHTTPError
from reins.core._media import Document, Image
from reins.core._model import Retrying, ThinkingChunk, takes_media
from reins.models import GeminiModel
from reins.tools import write_file

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
SIGNATURE = b"\x01signed-thought\xff"


def sse(*responses: types.GenerateContentResponse) -> Answer:
    events = [
        f"data: {r.model_dump_json(by_alias=True, exclude_none=True)}\r\n\r\n".encode()
        for r in responses
    ]
    return Answer(headers={"Content-Type": "text/event-stream"}, chunks=events)


def chunk(
    *parts: types.Part, finish: str | None = None, usage: tuple[int, int, int] | None = None
) -> types.GenerateContentResponse:
    meta = None
    if usage is not None:
        prompt, output, thoughts = usage
        meta = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt,
            candidates_token_count=output,
            thoughts_token_count=thoughts,
            total_token_count=prompt + output + thoughts,
        )
    candidate = types.Candidate(
        content=types.Content(role="model", parts=list(parts)), finish_reason=finish, index=0
    )
    return types.GenerateContentResponse(candidates=[candidate], usage_metadata=meta)


@dataclass
class Sent:
    """A request body the server got, read into the SDK's own types (which forbid unknown
    fields, so a misspelt key fails here)."""

    contents: list[types.Content]
    system: types.Content | None
    tools: list[types.Tool]
    tool_config: types.ToolConfig | None
    generation: types.GenerationConfig


def request_of(received: Received) -> Sent:
    body = received.json()
    assert set(body) <= {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    system, tool_config = body.get("systemInstruction"), body.get("toolConfig")
    return Sent(
        contents=[types.Content.model_validate(c) for c in body["contents"]],
        system=types.Content.model_validate(system) if system else None,
        tools=[types.Tool.model_validate(t) for t in body.get("tools", [])],
        tool_config=types.ToolConfig.model_validate(tool_config) if tool_config else None,
        generation=types.GenerationConfig.model_validate(body.get("generationConfig", {})),
    )


@pytest.fixture
def server() -> Iterator[WireServer]:
    with wire_server() as running:
        yield running


def model(server: WireServer) -> GeminiModel:
    return GeminiModel(model="gemini-2.5-flash", base_url=server.url, api_key="test-key")


async def test_text_streams_with_usage_and_the_request_is_the_api_s(server: WireServer) -> None:
    server.handler = lambda _: sse(
        chunk(types.Part(text="Hel")),
        chunk(types.Part(text="lo."), finish="STOP", usage=(12, 3, 0)),
    )
    messages = [SystemMessage(content="Be brief."), UserMessage(content="Say hello.")]
    settings = ModelSettings(max_tokens=64, temperature=0.2)
    items = [i async for i in model(server).stream(messages, [], settings)]

    assert [i.text for i in items if isinstance(i, TextChunk)] == ["Hel", "lo."]
    [response] = [i for i in items if isinstance(i, ModelResponse)]
    assert response.message.text == "Hello."
    assert response.finish == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.model_name == "gemini:gemini-2.5-flash"
    [sent] = server.received
    # the SDK's API version: v1 now (GOOGLE_GENAI_API_VERSION=beta: v1beta), same routes
    assert sent.path == "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == "test-key"
    request = request_of(sent)
    assert request.generation.max_output_tokens == 64
    assert request.generation.temperature == 0.2
    assert request.system is not None
    assert request.system.parts == [types.Part(text="Be brief.")]
    assert [c.role for c in request.contents] == ["user"]  # the system prompt is apart


async def test_a_function_call_and_its_thought_signature_go_back(server: WireServer) -> None:
    server.handler = lambda _: sse(
        chunk(
            types.Part(
                function_call=types.FunctionCall(
                    name="write_file", args={"path": "a.txt", "content": "hi"}
                ),
                thought_signature=SIGNATURE,
            ),
            finish="STOP",
            usage=(40, 9, 20),
        )
    )
    prompt = [UserMessage(content="Create a.txt containing hi")]
    settings = ModelSettings(tool_choice="required")
    first = await model(server).request(prompt, [write_file.spec], settings)

    [call] = first.message.tool_calls
    assert (call.name, call.arguments) == ("write_file", {"path": "a.txt", "content": "hi"})
    assert first.finish == "tool_use"
    assert first.usage.output_tokens == 29  # thinking is billed as output
    sent = request_of(server.received[0])
    [declaration] = sent.tools[0].function_declarations or []
    assert declaration.name == "write_file"
    assert declaration.parameters_json_schema == write_file.spec.parameters
    assert sent.tool_config is not None
    assert sent.tool_config.function_calling_config is not None
    assert sent.tool_config.function_calling_config.mode == "ANY"

    server.handler = lambda _: sse(chunk(types.Part(text="Done."), finish="STOP"))
    history = [
        *prompt,
        first.message,
        ToolResultMessage(call_id=call.id, name="write_file", content="Wrote 2 bytes"),
    ]
    await model(server).request(history, [write_file.spec], settings)
    contents = request_of(server.received[1]).contents
    assert [c.role for c in contents] == ["user", "model", "user"]
    [sent_call] = contents[1].parts or []
    assert sent_call.function_call is not None
    assert sent_call.function_call.args == {"path": "a.txt", "content": "hi"}
    assert sent_call.thought_signature == SIGNATURE  # unchanged, on the call it came with
    [result] = contents[2].parts or []
    assert result.function_response is not None
    assert result.function_response.name == "write_file"
    assert result.function_response.response == {"output": "Wrote 2 bytes"}


async def test_thoughts_stream_as_thinking_with_the_budget_asked(server: WireServer) -> None:
    server.handler = lambda _: sse(
        chunk(types.Part(text="Weighing it.", thought=True)),
        chunk(types.Part(text="42"), finish="MAX_TOKENS", usage=(5, 1, 7)),
    )
    settings = ModelSettings(thinking_budget=512, max_tokens=1024)
    items = [i async for i in model(server).stream([UserMessage(content="?")], [], settings)]

    assert [i.text for i in items if isinstance(i, ThinkingChunk)] == ["Weighing it."]
    [response] = [i for i in items if isinstance(i, ModelResponse)]
    assert (response.message.thinking, response.message.text) == ("Weighing it.", "42")
    assert response.finish == "max_tokens"
    config = request_of(server.received[0]).generation
    assert config.thinking_config is not None
    assert config.thinking_config.thinking_budget == 512
    assert config.thinking_config.include_thoughts is True


async def test_reasoning_effort_is_gemini_s_thinking_level(server: WireServer) -> None:
    server.handler = lambda _: sse(chunk(types.Part(text="42"), finish="STOP"))
    await model(server).request(
        [UserMessage(content="?")], [], ModelSettings(reasoning_effort="low")
    )
    config = request_of(server.received[0]).generation.thinking_config
    assert config is not None
    assert config.thinking_level == types.ThinkingLevel.LOW
    assert config.thinking_budget is None
    both = ModelSettings(reasoning_effort="high", thinking_budget=100)
    with pytest.raises(UsageError, match="thinking_budget or a reasoning_effort"):
        await model(server).request([UserMessage(content="?")], [], both)
    assert len(server.received) == 1


async def test_a_blocked_answer_is_a_refusal(server: WireServer) -> None:
    server.handler = lambda _: sse(chunk(finish="SAFETY", usage=(5, 0, 0)))
    response = await model(server).request([UserMessage(content="?")], [], FAST)
    assert response.finish == "refusal"


def error(status: int, message: str, **headers: str) -> Answer:
    body = json.dumps({"error": {"code": status, "message": message, "status": "X"}}).encode()
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}
    return Answer(status=status, headers=headers, chunks=[body])


async def test_a_rate_limit_is_retried_after_the_time_the_server_asks(server: WireServer) -> None:
    answers = iter(
        [
            error(429, "slow down", **{"Retry-After": "0.05"}),
            sse(chunk(types.Part(text="ok"), finish="STOP")),
        ]
    )
    server.handler = lambda _: next(answers)
    items = [i async for i in model(server).stream([UserMessage(content="?")], [], FAST)]

    [retry] = [i for i in items if isinstance(i, Retrying)]
    assert retry.delay == 0.05
    assert "HTTP 429" in retry.error
    assert "slow down" in retry.error
    assert items[-1].message.text == "ok"  # type: ignore[union-attr]
    assert len(server.received) == 2


async def test_an_error_in_the_stream_is_retried_like_its_status(server: WireServer) -> None:
    overloaded = {"error": {"code": 503, "message": "The model is overloaded.", "status": "X"}}
    broken = sse(chunk(types.Part(text="Hel")))
    broken.chunks = [*broken.chunks, f"data: {json.dumps(overloaded)}\r\n\r\n".encode()]
    answers = iter([broken, sse(chunk(types.Part(text="Hello."), finish="STOP"))])
    server.handler = lambda _: next(answers)
    items = [i async for i in model(server).stream([UserMessage(content="?")], [], FAST)]

    [retry] = [i for i in items if isinstance(i, Retrying)]
    assert "HTTP 503" in retry.error
    assert "The model is overloaded." in retry.error
    assert isinstance(items[-1], ModelResponse)
    assert items[-1].message.text == "Hello."


async def test_a_bad_request_fails_at_once_with_the_server_s_message(server: WireServer) -> None:
    server.handler = lambda _: error(400, "API key not valid")
    with pytest.raises(ModelHTTPError) as caught:
        await model(server).request([UserMessage(content="?")], [], FAST)
    assert caught.value.status == 400
    assert "API key not valid" in str(caught.value)
    assert len(server.received) == 1  # not retried


async def test_no_server_is_a_connection_error_naming_it() -> None:
    lost = GeminiModel(model="m", base_url=closed_url(), api_key="k")
    with pytest.raises(ModelConnectionError, match=r"no connection to .*Connection refused"):
        await lost.request([UserMessage(content="?")], [], ModelSettings(max_retries=0))


async def test_an_agent_runs_a_tool_through_gemini_from_the_environment(
    server: WireServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = iter(
        [
            sse(
                chunk(
                    types.Part(
                        function_call=types.FunctionCall(
                            name="write_file", args={"path": "a.txt", "content": "hi"}
                        ),
                        thought_signature=SIGNATURE,
                    ),
                    finish="STOP",
                    usage=(100, 10, 0),
                )
            ),
            sse(chunk(types.Part(text="a.txt says hi."), finish="STOP", usage=(140, 5, 0))),
        ]
    )
    server.handler = lambda _: next(replies)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    gemini = resolve_model("gemini:gemini-2.5-flash")
    result = await Agent(model=gemini, tools=[write_file], workspace=workspace).run(
        "Create a.txt containing hi"
    )

    assert (workspace / "a.txt").read_text() == "hi"
    assert result.final_answer == "a.txt says hi."
    assert result.stop_reason is StopReason.END_TURN
    assert (result.usage.input_tokens, result.usage.requests) == (240, 2)
    assert {r.headers["x-goog-api-key"] for r in server.received} == {"env-key"}
    answered = request_of(server.received[1]).contents
    assert answered[-1].parts
    assert answered[-1].parts[0].function_response is not None


def test_with_only_a_gemini_key_and_no_embedded_model_gemini_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name)
    )
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    spec, why = default_model()
    assert spec == "gemini:gemini-2.5-flash"
    assert "running gemini:gemini-2.5-flash, as GEMINI_API_KEY is set" in why
    monkeypatch.setitem(sys.modules, "google.genai", None)  # the extra not installed
    assert default_model() == ("local", "")


async def test_a_named_endpoint_may_speak_the_gemini_api(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.handler = lambda _: sse(chunk(types.Part(text="Hi."), finish="STOP"))
    monkeypatch.setenv("GATEWAY_KEY", "gateway-key")
    endpoint = Endpoint(base_url=server.url, api="gemini", api_key_env="GATEWAY_KEY")
    gateway = resolve_model("gateway:gemini-2.5-flash", Config(providers={"gateway": endpoint}))
    assert gateway.name == "gateway:gemini-2.5-flash"
    response = await gateway.request([UserMessage(content="?")], [], FAST)
    assert response.message.text == "Hi."
    assert server.received[0].headers["x-goog-api-key"] == "gateway-key"


def test_google_is_another_spelling_and_a_key_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "other")
    gemini = resolve_model("google:gemini-2.5-pro")
    assert gemini.name == "gemini:gemini-2.5-pro"
    assert gemini.api_key == "k"  # type: ignore[attr-defined]  # the one Google's SDK takes
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(UsageError, match="GEMINI_API_KEY"):
        resolve_model("gemini:gemini-2.5-pro")


async def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)  # as if not installed
    with pytest.raises(UsageError, match=r"pip install 'reins\[gemini\]'"):
        await GeminiModel(model="m", api_key="k").request([UserMessage(content="?")], [], FAST)


async def test_images_and_documents_go_inline(server: WireServer) -> None:
    server.handler = lambda _: sse(chunk(types.Part(text="A red dot."), finish="STOP"))
    image, document = Image.from_bytes(png()), Document.from_bytes(PDF, name="spec.pdf")
    call = ToolCall(id="call_1", name="read_file", arguments={"path": "dot.png"})
    messages = [
        UserMessage(content="What do these show?", media=(image, document)),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="call_1", name="read_file", content="dot.png", media=(image,)),
    ]
    gemini = model(server)
    assert takes_media(gemini)
    await gemini.request(messages, [], FAST)

    asked, _, answered = request_of(server.received[0]).contents
    assert asked.parts == [
        types.Part(text="What do these show?"),
        types.Part(inline_data=types.Blob(mime_type="image/png", data=png())),
        types.Part(inline_data=types.Blob(mime_type="application/pdf", data=PDF)),
    ]
    response, said, inline = answered.parts or []
    assert response.function_response is not None
    assert response.function_response.response == {"output": "dot.png"}
    assert said.text == f"The {image.describe()} that read_file returned (call call_1):"
    assert inline.inline_data == types.Blob(mime_type="image/png", data=png())


async def test_a_stalled_stream_times_out_and_its_connection_is_closed(server: WireServer) -> None:
    first, again = (b"".join(sse(chunk(types.Part(text=t))).chunks) for t in ("Hel", "lo"))
    server.handler = lambda _: stalling("text/event-stream", first, again)
    await assert_a_stall_closes_the_connection(model(server), server)


async def test_vertex_ai_runs_on_application_default_credentials(
    server: WireServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`vertex:NAME`: Google Cloud's credentials (a service account's key file, from
    GOOGLE_APPLICATION_CREDENTIALS), exchanged at the token service (here the local server)
    for a bearer token, with a JWT signed by the key."""
    token = json.dumps({"access_token": "ya29.local", "expires_in": 3600, "token_type": "Bearer"})

    def answer(received: Received) -> Answer:
        if received.path == "/token":
            body = token.encode()
            headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
            return Answer(headers=headers, chunks=[body])
        return sse(chunk(types.Part(text="Hello from Vertex."), finish="STOP", usage=(7, 4, 0)))

    server.handler = answer
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    adc = tmp_path / "service-account.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "my-project",
                "private_key_id": "k1",
                "private_key": pem.decode(),
                "client_email": "reins@my-project.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": f"{server.url}/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    for variable in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(variable, raising=False)
    vertex = resolve_model("google-vertex:gemini-2.5-pro")
    assert vertex.name == "vertex:gemini-2.5-pro"
    vertex.base_url = server.url  # type: ignore[attr-defined]  # Google's own, else
    response = await vertex.request([UserMessage(content="hi")], [], FAST)

    assert response.message.text == "Hello from Vertex."
    refresh, call = server.received
    assert b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" in refresh.body
    assert call.path == (
        "/v1beta1/projects/my-project/locations/europe-west4/publishers/google/models/"
        "gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert call.headers["authorization"] == "Bearer ya29.local"
    assert "x-goog-api-key" not in call.headers


def test_vertex_ai_without_a_project_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(UsageError, match="needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT"):
        GeminiModel(model="gemini-2.5-pro", vertex=True, provider="vertex").client()


async def test_vertex_ai_without_credentials_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    vertex = GeminiModel(model="gemini-2.5-pro", vertex=True, provider="vertex")
    with pytest.raises(UsageError, match="Vertex AI needs Google Cloud credentials: run gcloud"):
        await vertex.request([UserMessage(content="?")], [], FAST)
