"""OpenTelemetry traces of runs (GenAI semantic conventions): through the SDK's in-memory
exporter, and over OTLP/HTTP from the command line into a receiver the test runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from reins import Agent, AssistantMessage, Budgets, ModelSettings, StopReason, ToolCall, UsageError
from reins.models import OpenAIModel
from reins.testing import ScriptedModel
from reins.tools import read_file, write_file
from reins.tracing import tracer_for

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def exported() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def write_then_read() -> ScriptedModel:
    return ScriptedModel(
        [
            AssistantMessage(
                text="Writing it, and reading one that is not there.",
                tool_calls=(
                    ToolCall(
                        id="c1", name="write_file", arguments={"path": "a.txt", "content": "hi"}
                    ),
                    ToolCall(id="c2", name="read_file", arguments={"path": "missing.txt"}),
                ),
            ),
            "FINAL_ANSWER: a.txt says hi",
        ],
        name="openai:gpt-4o-mini",
    )


async def test_a_run_is_a_span_with_its_model_and_tool_calls_under_it(
    exported: tuple[TracerProvider, InMemorySpanExporter], workspace: Path
) -> None:
    provider, exporter = exported
    agent = Agent(
        model=write_then_read(),
        tools=[write_file, read_file],
        workspace=workspace,
        instrument=provider,
    )
    result = await agent.run("Create a.txt containing hi")
    assert result.stop_reason is StopReason.END_TURN

    spans = {span.name: span for span in exporter.get_finished_spans()}
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert set(spans) == {
        "invoke_agent reins",
        "chat gpt-4o-mini",
        "execute_tool write_file",
        "execute_tool read_file",
    }
    run = spans["invoke_agent reins"]
    assert run.parent is None
    for span in [*chats, spans["execute_tool write_file"], spans["execute_tool read_file"]]:
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
        assert run.start_time <= span.start_time <= span.end_time <= run.end_time

    attributes = dict(run.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.conversation.id"] == result.session_id
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["reins.stop_reason"] == "end_turn"
    assert attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert attributes["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert attributes["reins.cost_usd"] == pytest.approx(result.cost)

    assert len(chats) == result.usage.requests
    assert [c.kind for c in chats] == [SpanKind.CLIENT] * len(chats)
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == (  # type: ignore[misc,index]
        result.usage.input_tokens
    )

    wrote, missing = spans["execute_tool write_file"], spans["execute_tool read_file"]
    assert wrote.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "write_file",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "reins.step": 1,
    }
    assert wrote.status.status_code is StatusCode.UNSET
    assert missing.status.status_code is StatusCode.ERROR
    assert missing.attributes["error.type"] == "tool_error"  # type: ignore[index]


def delegating(tool_name: str, **arguments: str) -> ScriptedModel:
    """A parent's model: one call of `tool_name`, then the answer."""
    call = ToolCall(id="h1", name=tool_name, arguments={"task": "do it", **arguments})
    return ScriptedModel(
        [AssistantMessage(tool_calls=(call,)), "FINAL_ANSWER: done"], name="openai:gpt-4o"
    )


def helper(instrument: Any) -> Agent:
    return Agent(
        model=ScriptedModel(["FINAL_ANSWER: did it"], name="openai:gpt-4o-mini"),
        tools=[],
        instrument=instrument,
    )


@pytest.mark.parametrize("own", [True, False], ids=["its-own-provider", "inherited"])
async def test_a_subagents_run_is_traced_under_the_call_that_started_it(
    exported: tuple[TracerProvider, InMemorySpanExporter], workspace: Path, own: bool
) -> None:
    provider, exporter = exported
    child = helper(provider if own else None)  # None: traced as the run that starts it is
    parent = Agent(
        model=delegating("spawn_agent", profile="worker"),
        tools=[],
        workspace=workspace,
        subagents={"worker": child},
        instrument=provider,
    )
    result = await parent.run("hand it over")
    assert result.stop_reason is StopReason.END_TURN
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "invoke_agent reins"]
    [spawn] = [s for s in spans if s.name == "execute_tool spawn_agent"]
    top = next(s for s in runs if s.parent is None)
    [nested] = [s for s in runs if s is not top]
    assert spawn.parent is not None
    assert spawn.parent.span_id == top.context.span_id
    assert nested.parent is not None
    assert nested.parent.span_id == spawn.context.span_id  # the child's run, under the call
    assert nested.context.trace_id == top.context.trace_id
    assert nested.attributes["reins.parent_run_id"] == result.run_id  # type: ignore[index]
    [child_chat] = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert child_chat.parent is not None
    assert child_chat.parent.span_id == nested.context.span_id


@pytest.mark.parametrize("instrument", [None, False], ids=["inherited", "off"])
async def test_an_agent_as_a_tool_is_traced_as_the_run_that_calls_it_unless_turned_off(
    exported: tuple[TracerProvider, InMemorySpanExporter], workspace: Path, instrument: Any
) -> None:
    provider, exporter = exported
    tool = helper(instrument).as_tool("helper", "Does a task.")
    parent = Agent(
        model=delegating("helper"),
        tools=[tool],
        workspace=workspace,
        instrument=provider,
    )
    result = await parent.run("hand it over")
    assert result.stop_reason is StopReason.END_TURN
    spans = exporter.get_finished_spans()
    [call] = [s for s in spans if s.name == "execute_tool helper"]
    nested = [s for s in spans if s.name == "invoke_agent reins" and s.parent is not None]
    if instrument is False:
        assert nested == []
        assert not [s for s in spans if s.name == "chat gpt-4o-mini"]
        return
    [child_run] = nested
    assert child_run.parent is not None
    assert child_run.parent.span_id == call.context.span_id
    assert child_run.context.trace_id == call.context.trace_id


@pytest.mark.real_model  # a real connection, refused
async def test_a_failed_model_call_ends_its_span_and_the_runs_as_errors(
    exported: tuple[TracerProvider, InMemorySpanExporter], workspace: Path
) -> None:
    provider, exporter = exported
    model = OpenAIModel(model="gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="x")
    agent = Agent(
        model=model,
        workspace=workspace,
        instrument=provider,
        settings=ModelSettings(max_retries=0),
    )
    try:
        result = await agent.run("hello")
    finally:
        await model.aclose()
    assert result.stop_reason is StopReason.ERROR
    chat, run = exporter.get_finished_spans()
    assert (chat.name, run.name) == ("chat gpt-4o", "invoke_agent reins")
    for span in (chat, run):
        assert span.status.status_code is StatusCode.ERROR
        assert "no connection" in (span.status.description or "")


@pytest.mark.real_model
async def test_a_real_models_calls_carry_its_usage(
    exported: tuple[TracerProvider, InMemorySpanExporter], workspace: Path, llama_server: str
) -> None:
    provider, exporter = exported
    model = OpenAIModel(model="smollm2", base_url=llama_server, api_key="none", provider="llamacpp")
    agent = Agent(
        model=model,
        workspace=workspace,
        instrument=provider,
        budgets=Budgets(max_steps=2),
        settings=ModelSettings(temperature=0.0, max_tokens=32),
    )
    try:
        result = await agent.run("Say hello.")
    finally:
        await model.aclose()
    chats = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT]
    assert chats
    assert {s.attributes["gen_ai.provider.name"] for s in chats} == {"llamacpp"}  # type: ignore[index]
    assert {s.attributes["gen_ai.response.model"] for s in chats} == {"smollm2"}  # type: ignore[index]
    used = sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats)  # type: ignore[misc,index]
    assert used == result.usage.output_tokens > 0


def test_off_it_imports_nothing(workspace: Path) -> None:
    """Without instrument or an endpoint, a run loads no OpenTelemetry module at all."""
    code = (
        "import sys\n"
        "from reins import Agent\n"
        "from reins.testing import ScriptedModel\n"
        f"Agent(model=ScriptedModel(['FINAL_ANSWER: ok']), workspace={str(workspace)!r})"
        ".run_sync('go')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"
    assert tracer_for(None) is None
    assert tracer_for(False) is None


def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(UsageError, match=r"pip install 'reins\[otel\]'"):
        tracer_for(None)


async def test_a_run_that_cannot_be_traced_records_nothing(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    agent = Agent(model=ScriptedModel(["FINAL_ANSWER: ok"]), workspace=workspace)
    with pytest.raises(UsageError, match="reins\\[otel\\]"):
        await agent.run("go")
    assert await agent.log.runs() == []  # refused before anything was written


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each export and keeps its spans."""

    received: ClassVar[list[tuple[dict[str, Any], Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                self.received.extend((resource, span) for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")
        assert self.path == "/v1/traces"

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_cli_exports_over_otlp_when_the_endpoint_is_set(collector: str, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            [
                {
                    "text": "Writing.",
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}
                    ],
                },
                "FINAL_ANSWER: a.txt says hi",
            ]
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REINS_", "OTEL_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector
    done = subprocess.run(
        [sys.executable, "-m", "reins", "run", "write a.txt", "-m", f"script:{script}", "-w", "ws"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    names = sorted(span.name for _, span in Collector.received)
    assert names == [
        "chat " + str(script),
        "chat " + str(script),
        "execute_tool write_file",
        "invoke_agent reins",
    ]
    [(resource, run)] = [(r, s) for r, s in Collector.received if s.name.startswith("invoke")]
    assert resource["service.name"] == "reins"
    attributes = {a.key: a.value for a in run.attributes}
    assert attributes["gen_ai.operation.name"].string_value == "invoke_agent"
    assert attributes["reins.stop_reason"].string_value == "end_turn"
    children = [s for _, s in Collector.received if s is not run]
    assert {s.parent_span_id for s in children} == {run.span_id}
    assert {s.trace_id for s in children} == {run.trace_id}
