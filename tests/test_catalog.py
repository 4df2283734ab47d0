"""The model catalog: limits, prices, cost accounted per run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reins import Agent, StopReason, Usage
from reins.core._catalog import (
    CATALOG,
    GENEROUS_OUTPUT,
    UNKNOWN,
    ModelInfo,
    _found,
    lookup,
    price,
    priced,
    register,
)
from reins.events import Notice

from .test_testing import PretendRemote


def test_lookup_drops_the_provider_and_takes_the_longest_match() -> None:
    assert lookup("openai:gpt-4o-2024-08-06") is CATALOG["gpt-4o"]
    assert lookup("openai:gpt-4o-mini-2024-07-18") is CATALOG["gpt-4o-mini"]
    assert lookup("anthropic:claude-sonnet-4-5") is CATALOG["claude-sonnet-4"]
    assert lookup("http://127.0.0.1:8080/v1:qwen2.5-coder") is CATALOG["qwen2.5"]
    assert lookup("local:/models/x.gguf") is CATALOG["local"]
    assert lookup("openai:mystery-1") is UNKNOWN


def test_a_model_the_catalog_does_not_list_takes_models_dev_figures() -> None:
    info = lookup("openai:gpt-3.5-turbo")
    assert "gpt-3.5" not in " ".join(CATALOG)
    assert (info.known, info.context_window, info.max_output) == (True, 16_385, 4096)
    # reins' provider names, models.dev's ids: Gemini, Bedrock (whose ids hold a colon).
    gemini = lookup("gemini:gemini-2.5-flash")
    assert (gemini.context_window, gemini.max_output, gemini.vision) == (1_048_576, 65_536, True)
    bedrock = lookup("bedrock:anthropic.claude-haiku-4-5-20251001-v1:0")
    assert (bedrock.context_window, bedrock.max_output) == (200_000, 64_000)
    # A server of yours: the model's figures wherever it is listed, its org prefix or not.
    served = lookup("vllm:meta-llama/Llama-3.1-8B-Instruct")
    assert (served.known, served.context_window) == (True, 131_072)
    # A tagged variant of a listed model; the same letters alone are no variant.
    assert lookup("groq:llama-3.3-70b-versatile-beta").context_window == 131_072
    assert lookup("x:gemini-2.5-flashy") is UNKNOWN
    assert UNKNOWN.max_output == GENEROUS_OUTPUT > 2048


def test_hosted_prices_come_from_genai_prices() -> None:
    million = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert price("openai:gpt-4o-mini", million) == pytest.approx(0.15 + 0.60)
    assert price("openai:gpt-4o-mini-2024-07-18", million) == pytest.approx(0.75)
    cached = Usage(
        input_tokens=100_000,
        cache_read_tokens=60_000,
        cache_write_tokens=20_000,
        output_tokens=10_000,
    )
    # Claude Sonnet 4.5: $3 fresh, $0.30 cache read, $3.75 cache write, $15 output per MTok.
    expected = (20_000 * 3 + 60_000 * 0.30 + 20_000 * 3.75 + 10_000 * 15) / 1e6
    assert price("anthropic:claude-sonnet-4-5", cached) == pytest.approx(expected)


def test_models_no_one_bills_for() -> None:
    usage = Usage(input_tokens=5000, output_tokens=500)
    assert price("local:smollm2", usage) == 0.0
    assert price("ollama:qwen2.5-coder", usage) == 0.0
    # An endpoint of your own serving a model under a hosted model's name is not billed as it.
    assert price("myserver:gpt-4o", usage) is None
    assert price("openai:mystery-1", usage) is None
    assert price("ollama:mistral-small", usage) == 0.0  # on a machine of yours, listed or not


def test_a_model_served_elsewhere_is_priced_as_whoever_serves_it_or_not_at_all() -> None:
    million = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    # OPENAI_BASE_URL at a server of yours: not OpenAI's bill.
    assert price("openai:gpt-4o-mini", million, at="http://127.0.0.1:8000/v1") is None
    assert not priced("openai:gpt-4o-mini", at="http://127.0.0.1:8000/v1")
    # At OpenAI's own address, or at a provider genai-prices knows by its URL: its prices.
    assert price("openai:gpt-4o-mini", million, at="https://api.openai.com/v1") == 0.75
    routed = price("openai:openai/gpt-4o-mini", million, at="https://openrouter.ai/api/v1")
    assert routed is not None
    assert routed > 0
    assert priced("openai:gpt-4o-mini")
    assert priced("ollama:mistral-small", at="http://localhost:11434/v1")


@pytest.fixture
def own_catalog() -> Iterator[None]:
    """Entries a test registers go away after it, with the lookups made."""
    kept = dict(CATALOG)
    yield
    CATALOG.clear()
    CATALOG.update(kept)
    _found.clear()


@pytest.mark.usefixtures("own_catalog")
def test_own_prices_win_and_price_the_cache_apart() -> None:
    info = ModelInfo(context_window=1000, input_price=2.0, output_price=10.0, cache_read_price=0.5)
    usage = Usage(
        input_tokens=2000, cache_read_tokens=1000, cache_write_tokens=500, output_tokens=100
    )
    assert info.cost(usage) == pytest.approx((500 * 2.0 + 1000 * 0.5 + 500 * 2.0 + 100 * 10) / 1e6)
    assert UNKNOWN.cost(usage) is None
    register("pricey", info)
    assert price("acme:pricey-2", usage) == info.cost(usage)


@pytest.mark.real_model
@pytest.mark.usefixtures("own_catalog")
async def test_a_run_accounts_cost_and_warns_of_unknown_models(workspace: Path) -> None:
    model = PretendRemote()  # named "remote:pretend": not in the catalog
    run = Agent(model=model, workspace=workspace).iter("go")
    events = [e async for e in run]
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert (notice.source, notice.level) == ("catalog", "warning")
    assert notice.text == (
        "model 'remote:pretend' is not in the catalog: assuming a 8192-token context, no price "
        "(cost not counted); give its window with --context-window or "
        '[models."remote:pretend"] in your config (context_window, input_price, output_price)'
    )
    assert run.state.cost == 0.0

    register(
        "pretend",
        ModelInfo(context_window=200_000, max_output=100, input_price=1.0, output_price=2.0),
    )
    priced = await Agent(model=model, workspace=workspace).run("go")
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
    assert (known.seen, capped.seen) == ([16_384], [77])
    # Not the old 2,048: as much as the assumed window leaves.
    [cap] = unknown.seen
    assert cap is not None
    assert 2048 < cap < UNKNOWN.context_window
