"""The test doubles and the guard against real model calls in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Message,
    ModelResponse,
    ModelSettings,
    StreamItem,
    ToolCall,
    ToolSpec,
    Usage,
    UsageError,
)
from reins.core._model import ALLOW_MODEL_REQUESTS
from reins.testing import ScriptedModel, block_model_requests, load_script


class PretendRemote:
    """A model that is not a test double, as a provider would be."""

    name = "remote:pretend"

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        message = AssistantMessage(text="from afar")
        return ModelResponse(
            message=message,
            usage=Usage(input_tokens=1000, output_tokens=500, requests=1),
            finish="end_turn",
            model_name=self.name,
        )

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        yield await self.request(messages, tools, settings)


async def test_real_models_are_refused_in_tests(workspace: Path) -> None:
    agent = Agent(model=PretendRemote(), workspace=workspace)
    with pytest.raises(UsageError, match="real model requests are disabled here"):
        await agent.run("go")


@pytest.mark.real_model
async def test_a_marked_test_may_call_a_real_model(workspace: Path) -> None:
    result = await Agent(model=PretendRemote(), workspace=workspace).run("go")
    assert result.final_answer == "from afar"


def test_block_restores_the_previous_setting() -> None:
    from reins.core import _model

    before = _model.ALLOW_MODEL_REQUESTS
    with block_model_requests():
        assert _model.ALLOW_MODEL_REQUESTS is False
    assert _model.ALLOW_MODEL_REQUESTS is before
    assert ALLOW_MODEL_REQUESTS is True  # the module default


def test_load_script_reads_texts_and_calls(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        '["plain", {"text": "t", "thinking": "hm", "tool_calls": '
        '[{"name": "f", "arguments": {"a": 1}, "id": "x"}, {"name": "g"}]}]'
    )
    assert load_script(path) == [
        "plain",
        AssistantMessage(
            text="t",
            thinking="hm",
            tool_calls=(ToolCall(id="x", name="f", arguments={"a": 1}), ToolCall(id="", name="g")),
        ),
    ]
    model = ScriptedModel.from_file(path)
    assert model.replies[1] == AssistantMessage(
        text="t",
        thinking="hm",
        tool_calls=(
            ToolCall(id="x", name="f", arguments={"a": 1}),
            ToolCall(id="call_1_1", name="g"),
        ),
    )


def test_script_errors_name_the_place(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('["ok", {"tool_calls": [{"arguments": {}}]}]')
    with pytest.raises(UsageError, match=r"reply 1: Field required at tool_calls\.0\.name"):
        load_script(path)
    path.write_text('[{"text": "x", "extra": 1}]')
    with pytest.raises(UsageError, match="reply 0: Extra inputs are not permitted at extra"):
        load_script(path)
    path.write_text('{"text": "x"}')
    with pytest.raises(UsageError, match="must be a JSON list of replies"):
        load_script(path)
    path.write_text('["ok", 3]')
    with pytest.raises(UsageError, match="reply 1 must be a text or an object"):
        load_script(path)
