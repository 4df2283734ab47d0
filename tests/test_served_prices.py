"""A model served elsewhere than by its provider (OPENAI_BASE_URL at a server of yours) has no
price unless you give one, and a cost budget on a model without a price is refused at the
start: through the API, and `reins run` as a real process against a real OpenAI-compatible
server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reins import Agent, Budgets, ModelInfo, UsageError, register_model, resolve_model
from reins.agent._config import load_config
from reins.core._catalog import CATALOG, _found, lookup
from reins.events import ModelResponded, Notice
from reins.models import OpenAIModel

from .servers import SlowOpenAI
from .test_catalog import own_catalog  # noqa: F401 (a fixture)
from .test_cli import REINS

SERVED = "cost budget $1: no price is known for openai:gpt-4o-mini (served at {url}), so the budget"


@pytest.fixture
def server() -> Iterator[SlowOpenAI]:
    with SlowOpenAI(["FINAL_ANSWER: hi", "FINAL_ANSWER: hi again"], gap=0) as peer:
        yield peer


def test_a_cost_budget_on_a_model_served_elsewhere_is_refused(
    server: SlowOpenAI, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = OpenAIModel(model="gpt-4o-mini", base_url=server.url, api_key="x")
    with pytest.raises(UsageError) as refused:
        Agent(model=mine, workspace=workspace, budgets=Budgets(cost_budget=1.0))
    assert str(refused.value).startswith(SERVED.format(url=server.url))
    assert '[models."openai:gpt-4o-mini"] input_price and output_price' in str(refused.value)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # the SDK's variable says it as well
    with pytest.raises(UsageError, match="no price is known for openai:gpt-4o-mini"):
        Agent(
            model=OpenAIModel(model="gpt-4o-mini", api_key="x"),
            workspace=workspace,
            budgets=Budgets(cost_budget=1),
        )
    agent = Agent(model=mine, workspace=workspace)  # no budget: it may run, uncounted
    with pytest.raises(UsageError, match="no price is known"):
        agent.resume_iter("any", cost_budget=1.0)
    assert server.requests == []
    # The provider's own API has a price, and the budget stands.
    monkeypatch.delenv("OPENAI_BASE_URL")
    Agent(
        model=OpenAIModel(model="gpt-4o-mini", api_key="x"),
        workspace=workspace,
        budgets=Budgets(cost_budget=1),
    )


@pytest.mark.real_model
@pytest.mark.usefixtures("own_catalog")
async def test_a_run_served_elsewhere_counts_no_cost_until_given_a_price(
    server: SlowOpenAI, workspace: Path
) -> None:
    mine = OpenAIModel(model="gpt-4o-mini", base_url=server.url, api_key="x")
    events = [e async for e in Agent(model=mine, workspace=workspace).iter("hi")]
    [response] = [e for e in events if isinstance(e, ModelResponded)]
    assert response.cost is None  # not OpenAI's $0.15 and $0.60 a million
    [notice] = [e for e in events if isinstance(e, Notice) and e.source == "catalog"]
    assert notice.text == (
        f"no price is known for model 'openai:gpt-4o-mini' (served at {server.url}): its cost "
        'is not counted; give its prices in [models."openai:gpt-4o-mini"] in your config '
        "(input_price, output_price: US dollars per million tokens)"
    )
    register_model(
        "openai:gpt-4o-mini",
        ModelInfo(context_window=128_000, input_price=1.0, output_price=2.0),
    )
    priced = Agent(model=mine, workspace=workspace, budgets=Budgets(cost_budget=1.0))
    result = await priced.run("hi")
    assert result.cost == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)  # the server's counts


@pytest.mark.usefixtures("own_catalog")
def test_the_configs_models_table_gives_windows_and_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "config.toml"
    user.write_text(
        '[models."vllm:house-model"]\ncontext_window = 32768\nmax_output = 4096\n'
        'input_price = 0.5\noutput_price = 1.5\n[providers.vllm]\nbase_url = "http://gpu:8000/v1"\n'
    )
    monkeypatch.setenv("REINS_CONFIG", str(user))
    assert not lookup("vllm:house-model").known
    model = resolve_model("vllm:house-model", load_config(tmp_path))
    info = lookup(model.name)
    assert (info.known, info.context_window, info.max_output) == (True, 32_768, 4096)
    assert (info.input_price, info.output_price) == (0.5, 1.5)
    # A project's file may give a window (it bounds nothing of yours), not a price.
    (tmp_path / "reins.toml").write_text('[models."vllm:house-model"]\ncontext_window = 8000\n')
    resolve_model("vllm:house-model", load_config(tmp_path))
    merged = lookup("vllm:house-model")
    assert (merged.context_window, merged.max_output, merged.input_price) == (8000, 4096, 0.5)
    (tmp_path / "reins.toml").write_text('[models."vllm:house-model"]\ninput_price = 0\n')
    with pytest.raises(UsageError, match=r'models."vllm:house-model".input_price: a project'):
        load_config(tmp_path)


def run(project: Path, server: SlowOpenAI, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REINS_", "OPENAI_"))}
    env |= {
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "x",
        "XDG_CONFIG_HOME": str(project / "xdg"),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [*REINS, "run", "say hi", "-m", "openai:gpt-4o-mini", "-w", "ws", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_reins_run_refuses_a_cost_budget_it_cannot_keep(tmp_path: Path, server: SlowOpenAI) -> None:
    (tmp_path / "ws").mkdir()
    refused = run(tmp_path, server, "--cost-budget", "1")
    assert refused.returncode == 2
    assert SERVED.format(url=server.url) in " ".join(refused.stderr.split())
    assert server.requests == []
    # Your price for it, in your own config: the budget is kept, the cost counted.
    config = tmp_path / "xdg" / "reins" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models."openai:gpt-4o-mini"]\ninput_price = 1.0\noutput_price = 2.0\n')
    done = run(tmp_path, server, "--cost-budget", "1", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [response] = [e for e in events if e["kind"] == "model_response"]
    assert response["cost"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)


@pytest.mark.real_model
@pytest.mark.usefixtures("own_catalog")
async def test_a_resume_keeping_a_cost_budget_no_longer_priced_is_refused(
    workspace: Path,
) -> None:
    listing = {"text": "", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    with SlowOpenAI([listing, "FINAL_ANSWER: done"], gap=0) as server:
        mine = OpenAIModel(model="gpt-4o-mini", base_url=server.url, api_key="x")
        register_model(
            "openai:gpt-4o-mini",
            ModelInfo(context_window=128_000, input_price=1.0, output_price=2.0),
        )
        agent = Agent(
            model=mine, workspace=workspace, budgets=Budgets(cost_budget=1.0, max_steps=1)
        )
        capped = await agent.run("list the files")
        assert capped.stop_reason.value == "max_steps"
        CATALOG.pop("openai:gpt-4o-mini")  # the price is gone (another config, say)
        _found.clear()
        with pytest.raises(UsageError, match=r"cost budget \$1: no price is known"):
            await Agent(model=mine, workspace=workspace, log=agent.log).resume(capped.run_id)
        assert len(server.requests) == 1
