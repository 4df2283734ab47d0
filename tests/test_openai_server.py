"""The OpenAI-compatible provider against a real server: llama-cpp-python's, on SmolLM2."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    ModelResponse,
    ModelSettings,
    StopReason,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    resolve_model,
)
from reins.events import ToolCallFinished
from reins.models import OpenAIModel
from reins.tools import write_file

pytestmark = pytest.mark.real_model

GREEDY = ModelSettings(temperature=0.0, max_tokens=64)
WRITE = write_file.spec


@pytest.fixture
async def model(llama_server: str) -> AsyncIterator[OpenAIModel]:
    provider = OpenAIModel(
        model="smollm2", base_url=llama_server, api_key="none", provider="llamacpp"
    )
    yield provider
    await provider.aclose()


async def test_a_tool_call_comes_back_typed(model: OpenAIModel) -> None:
    messages = [UserMessage(content="Create the file hello.txt containing the word hi")]
    response = await model.request(messages, [WRITE], GREEDY)
    assert response.finish == "tool_use"
    [call] = response.message.tool_calls
    assert call.name == "write_file"
    assert call.raw_arguments is None
    assert set(call.arguments) == {"path", "content"}
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.model_name == "llamacpp:smollm2"


async def test_text_streams_as_deltas(model: OpenAIModel) -> None:
    settings = ModelSettings(temperature=0.0, max_tokens=24)
    items = [item async for item in model.stream([UserMessage(content="Say hello.")], [], settings)]
    deltas = [i.text for i in items if isinstance(i, TextChunk)]
    response = items[-1]
    assert len(deltas) > 3  # it really streamed
    assert response.message.text == "".join(deltas)  # type: ignore[union-attr]
    assert response.finish in ("end_turn", "max_tokens")  # type: ignore[union-attr]
    assert response.usage.requests == 1  # type: ignore[union-attr]  # (this server sends no usage)


async def test_the_output_cap_maps_to_max_tokens(model: OpenAIModel) -> None:
    settings = ModelSettings(temperature=0.0, max_tokens=3)
    response = await model.request(
        [UserMessage(content="Write a long story about a cat.")], [], settings
    )
    assert response.finish == "max_tokens"
    assert response.usage.output_tokens == 3


async def test_a_server_that_cannot_stream_tool_calls_is_asked_without_streaming(
    model: OpenAIModel,
) -> None:
    messages = [UserMessage(content="Create the file hello.txt containing the word hi")]
    items = [item async for item in model.stream(messages, [WRITE], GREEDY)]
    [response] = [i for i in items if isinstance(i, ModelResponse)]
    assert response.message.tool_calls[0].name == "write_file"
    assert not [i for i in items if isinstance(i, TextChunk)]
    assert model._streams_tools is False  # the next call does not try to stream again


async def test_a_tool_round_trip_is_accepted(model: OpenAIModel) -> None:
    """History with a call and its result goes back to the server as it expects it."""
    call = ToolCall(id="call_1", name="write_file", arguments={"path": "a.txt", "content": "hi"})
    messages = [
        SystemMessage(content="You are a helpful assistant."),
        UserMessage(content="Create a.txt containing hi"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(call_id="call_1", name="write_file", content="Wrote 2 bytes to a.txt"),
    ]
    response = await model.request(messages, [WRITE], GREEDY)
    assert response.usage.input_tokens > 40  # the whole history was read
    assert isinstance(response.message, AssistantMessage)


async def test_an_agent_runs_tools_on_the_real_model(model: OpenAIModel, workspace: Path) -> None:
    agent = Agent(
        model=model,
        tools=[write_file],
        workspace=workspace,
        budgets=Budgets(max_steps=2),
        settings=GREEDY,
    )
    run = agent.iter("Create the file hello.txt containing the word hi")
    events = [e async for e in run]
    writes = [
        e for e in events if isinstance(e, ToolCallFinished) and e.result.name == "write_file"
    ]
    assert writes, [e.kind for e in events]
    assert any(not w.result.is_error for w in writes), [w.result.content for w in writes]
    ok = {w.result.call_id for w in writes if not w.result.is_error}
    calls = [
        c
        for m in run.state.messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
        if c.id in ok
    ]
    arguments = calls[-1].arguments  # the file holds what the last good write sent
    assert (workspace / arguments["path"]).read_text() == arguments["content"]
    assert run.state.finished is not None
    assert run.state.finished.stop_reason in (StopReason.END_TURN, StopReason.MAX_STEPS)
    assert json.dumps(arguments)  # what the model sent is a plain JSON object


async def test_an_endpoint_named_in_the_config_reaches_the_server(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[providers.box]\nbase_url = "{llama_server}"\n')
    monkeypatch.setenv("REINS_CONFIG", str(config))
    model = resolve_model("box:smollm2")
    assert isinstance(model, OpenAIModel)
    try:
        response = await model.request([UserMessage(content="Say hello.")], [], GREEDY)
    finally:
        await model.aclose()
    assert response.model_name == "box:smollm2"
    assert response.message.text.strip()


NO_LLAMA = (
    "import sys; sys.modules['llama_cpp'] = None; from reins.cli import main; "
    "sys.argv = ['reins', *sys.argv[1:]]; main()"
)
"""`reins ARGS` as on a machine without `reins[local]`: llama.cpp cannot be imported."""


def _keyless_env(tmp_path: Path) -> dict[str, str]:
    """The environment with no provider key, no reins setting and no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REINS_", "OPENAI_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    (tmp_path / "none.toml").touch()
    return env | {"REINS_CONFIG": str(tmp_path / "none.toml")}


def test_without_the_embedded_model_a_hosted_key_picks_the_model(
    llama_server: str, tmp_path: Path
) -> None:
    """`pip install reins` with no `[local]`: `reins run` runs the hosted model whose key is
    set (this server stands in for OpenAI's), and says so; with no key, it says what to do."""
    import subprocess
    import sys

    (tmp_path / "ws").mkdir()
    env = _keyless_env(tmp_path)
    command = [sys.executable, "-c", NO_LLAMA, "run", "Say hi.", "-w", "ws", "--max-steps", "1"]
    keyless = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert keyless.returncode == 2
    assert "pip install 'reins[local]'" in keyless.stderr
    assert "OPENAI_API_KEY" in keyless.stderr

    env |= {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llama_server}
    done = subprocess.run(
        [*command, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert "running openai:gpt-4o-mini, as OPENAI_API_KEY is set" in done.stderr
    started = json.loads(done.stdout.splitlines()[0])
    assert started["config"]["model"] == "openai:gpt-4o-mini"
    responded = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(e["kind"] == "model_response" for e in responded), done.stdout + done.stderr


async def test_mcp_serve_without_the_embedded_model_runs_the_hosted_one(
    llama_server: str, tmp_path: Path
) -> None:
    """`reins mcp serve` picks its model as `reins run` does: with no `[local]` and a key set,
    that provider's small model (this server stands in for OpenAI's)."""
    import sys

    from mcp import Client, StdioServerParameters

    (tmp_path / "ws").mkdir()
    env = _keyless_env(tmp_path) | {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llama_server}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", NO_LLAMA, "mcp", "serve", "-w", "ws", "--store", str(tmp_path / "store")],
        env=env,
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        ran = await client.call_tool("run", {"goal": "Say hi.", "max_steps": 1})
        outcome = ran.structured_content
        assert outcome is not None, ran
        listed = await client.call_tool("sessions", {})
        runs = listed.structured_content["result"]  # type: ignore[index]
        assert [(r["run_id"], r["model"]) for r in runs] == [
            (outcome["run_id"], "openai:gpt-4o-mini")
        ]
