"""The token estimate calibrated by the provider's counts: an OpenAI-compatible server on
127.0.0.1 reports the input tokens of each request, the loop records its own estimate of the
same request, and the run's fold divides the one by the other."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reins import Agent, ContextSettings, RunState
from reins.context import ContextBuilder
from reins.context._tokens import estimate
from reins.core._state import MAX_RATIO
from reins.events import ModelRequested, ModelResponded
from reins.models import OpenAIModel
from reins.store import SQLiteLog
from reins.testing import ScriptedModel

from .test_model_faults import Peer, chunk, streamed


def counted(prompt_tokens: int) -> dict[str, Any]:
    """The last chunk of a stream: the server's count of the request."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": 0}
    return {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"} | {
        "choices": [],
        "usage": usage,
    }


def read_call(prompt_tokens: int) -> list[dict[str, Any]]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'},
    }
    return [
        chunk({"role": "assistant", "tool_calls": [call]}),
        chunk({}, "tool_calls"),
        counted(prompt_tokens),
    ]


def answer(prompt_tokens: int) -> list[dict[str, Any]]:
    return [
        chunk({"role": "assistant", "content": "FINAL_ANSWER: read"}),
        chunk({}, "stop"),
        counted(prompt_tokens),
    ]


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = Peer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def model(peer: Peer) -> AsyncIterator[OpenAIModel]:
    provider = OpenAIModel(model="m", base_url=peer.base_url, api_key="x")
    yield provider
    await provider.aclose()


@pytest.mark.real_model
async def test_the_providers_count_calibrates_the_estimate_and_the_log_keeps_it(
    peer: Peer, model: OpenAIModel, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("a line of the notes, fifty characters in all....\n" * 60)
    peer.script = [streamed(read_call(2000)), streamed(answer(6000))]
    log = SQLiteLog(tmp_path / "log")
    agent = Agent(model=model, workspace=workspace, log=log)
    run = agent.iter("read the notes")
    events = [e async for e in run]
    first, second = [e.estimated_tokens for e in events if isinstance(e, ModelRequested)]
    assert first is not None
    assert second is not None
    assert second - first > 1000  # the file: 3,000 characters, at three a token
    assert [e.usage.input_tokens for e in events if isinstance(e, ModelResponded)] == [2000, 6000]
    # The last pair: what the provider counted over what reins estimated of that request.
    assert run.state.token_ratio == pytest.approx(6000 / second)
    # A resume, a replay, `reins show` fold the log to the same calibration.
    assert RunState.fold(await log.events(run.state.run_id)).token_ratio == run.state.token_ratio

    # A request counted from the estimate alone (after a compaction, say) is corrected by it.
    builder = ContextBuilder(model=model, settings=ContextSettings(), tools=[])
    messages = run.state.view()
    assert builder.counted(run.state, messages) == round(estimate(messages) * run.state.token_ratio)


@pytest.mark.real_model
async def test_an_odd_count_is_bounded(peer: Peer, model: OpenAIModel, workspace: Path) -> None:
    peer.script = [streamed(answer(10_000_000))]  # a server that counts wildly
    run = Agent(model=model, workspace=workspace).iter("hi")
    [_ async for _ in run]
    assert run.state.token_ratio == MAX_RATIO


async def test_a_test_doubles_guessed_counts_calibrate_nothing(workspace: Path) -> None:
    run = Agent(model=ScriptedModel(["FINAL_ANSWER: hi"]), workspace=workspace).iter("hi")
    events = [e async for e in run]
    assert [e.estimated_tokens for e in events if isinstance(e, ModelRequested)] == [None]
    assert run.state.token_ratio == 1.0
