"""The model catalog: limits, prices, cost accounted per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from reins import Agent, Notice, StopReason
from reins.models._catalog import CATALOG, UNKNOWN, ModelInfo, lookup, register

from .test_testing import PretendRemote


def test_lookup_drops_the_provider_and_takes_the_longest_match() -> None:
    assert lookup("openai:gpt-4o-2024-08-06") is CATALOG["gpt-4o"]
    assert lookup("openai:gpt-4o-mini-2024-07-18") is CATALOG["gpt-4o-mini"]
    assert lookup("anthropic:claude-sonnet-4-5") is CATALOG["claude-sonnet-4"]
    assert lookup("http://127.0.0.1:8080/v1:qwen2.5-coder") is CATALOG["qwen2.5"]
    assert lookup("local:/models/x.gguf") is CATALOG["local"]
    assert lookup("openai:mystery-1") is UNKNOWN


def test_cost_from_usage() -> None:
    info = CATALOG["gpt-4o-mini"]
    assert info.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert info.cost(2000, 500) == pytest.approx((2000 * 0.15 + 500 * 0.6) / 1e6)
    assert UNKNOWN.cost(10, 10) is None


@pytest.mark.real_model
async def test_a_run_accounts_cost_and_warns_of_unknown_models(workspace: Path) -> None:
    model = PretendRemote()  # named "remote:pretend": not in the catalog
    run = Agent(model=model, workspace=workspace).iter("go")
    events = [e async for e in run]
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert (notice.source, notice.level) == ("catalog", "warning")
    assert "'remote:pretend' is not in the catalog" in notice.text
    assert run.state.cost == 0.0

    register(
        "pretend",
        ModelInfo(context_window=200_000, max_output=100, input_price=1.0, output_price=2.0),
    )
    try:
        priced = await Agent(model=model, workspace=workspace).run("go")
    finally:
        del CATALOG["pretend"]
    assert priced.stop_reason is StopReason.END_TURN
    assert priced.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)


class SettingsSpy(PretendRemote):
    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[int | None] = []

    async def request(self, messages, tools, settings):  # type: ignore[no-untyped-def]
        self.seen.append(settings.max_tokens)
        return await super().request(messages, tools, settings)


@pytest.mark.real_model
async def test_calls_are_capped_by_the_catalog_unless_the_settings_say(workspace: Path) -> None:
    from reins import ModelSettings

    known, unknown, capped = (
        SettingsSpy("openai:gpt-4o"),
        SettingsSpy("x:mystery"),
        SettingsSpy("x:y"),
    )
    await Agent(model=known, workspace=workspace).run("go")
    await Agent(model=unknown, workspace=workspace).run("go")
    await Agent(model=capped, workspace=workspace, settings=ModelSettings(max_tokens=77)).run("go")
    assert (known.seen, unknown.seen, capped.seen) == ([16_384], [2048], [77])
