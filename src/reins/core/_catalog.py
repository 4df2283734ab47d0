"""What reins knows about models: limits, capabilities and prices.

Prices come from `genai-prices`, the maintained table pydantic-ai uses, and context windows and
output caps from models.dev (`reins.core._limits`); both are imported on first need. This
catalog keeps the entries they are checked against (output caps, vision, thinking), the open
models you run yourself (free) and your own entries (`register`, the config's `[models]`:
your figures win). A model served elsewhere than by its provider (a base URL of yours) is
priced as the provider that URL is, if genai-prices knows it, else not at all. A model none of
them knows runs with conservative limits, no price, and a notice in the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core._messages import Usage
from ._limits import limits

GENEROUS_OUTPUT = 32_000
"""The output cap of a model whose own is not known: the context window still bounds it."""


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    context_window: int
    max_output: int = GENEROUS_OUTPUT
    input_price: float | None = None
    """USD per million input tokens; None: genai-prices' figures are used."""
    output_price: float | None = None
    cache_read_price: float | None = None
    """USD per million prompt tokens read from the provider's cache; None: the input price."""
    cache_write_price: float | None = None
    """USD per million prompt tokens written to the provider's cache; None: the input price."""
    tools: bool = True
    thinking: bool = False
    vision: bool = False
    known: bool = True

    def cost(self, usage: Usage) -> float | None:
        """The price of `usage` at this entry's own prices; None if it has none."""
        if self.input_price is None or self.output_price is None:
            return None
        read, written = usage.cache_read_tokens, usage.cache_write_tokens
        fresh = usage.input_tokens - read - written
        read_price = _either(self.cache_read_price, self.input_price)
        write_price = _either(self.cache_write_price, self.input_price)
        return (
            fresh * self.input_price
            + read * read_price
            + written * write_price
            + usage.output_tokens * self.output_price
        ) / 1e6


def _either(price: float | None, default: float) -> float:
    return default if price is None else price


UNKNOWN = ModelInfo(context_window=8192, known=False)
"""Conservative limits for a model reins has no facts about."""

FREE_LOCAL = ModelInfo(context_window=8192, max_output=2048, input_price=0.0, output_price=0.0)

CATALOG: dict[str, ModelInfo] = {
    # OpenAI (prices: genai-prices)
    "gpt-4o": ModelInfo(context_window=128_000, max_output=16_384, vision=True),
    "gpt-4o-mini": ModelInfo(context_window=128_000, max_output=16_384, vision=True),
    "gpt-4.1": ModelInfo(context_window=1_047_576, max_output=32_768, vision=True),
    "gpt-5": ModelInfo(context_window=400_000, max_output=128_000, thinking=True, vision=True),
    "o3": ModelInfo(context_window=200_000, max_output=100_000, thinking=True, vision=True),
    "o4-mini": ModelInfo(context_window=200_000, max_output=100_000, thinking=True, vision=True),
    # Anthropic
    "claude-opus-4": ModelInfo(
        context_window=200_000, max_output=32_000, thinking=True, vision=True
    ),
    "claude-sonnet-4": ModelInfo(
        context_window=200_000, max_output=64_000, thinking=True, vision=True
    ),
    "claude-haiku-4": ModelInfo(
        context_window=200_000, max_output=64_000, thinking=True, vision=True
    ),
    "claude-3-7-sonnet": ModelInfo(
        context_window=200_000, max_output=64_000, thinking=True, vision=True
    ),
    "claude-3-5-haiku": ModelInfo(context_window=200_000, max_output=8_192, vision=True),
    # Open models, run locally or on a server of your own: no price.
    "llama3.2": FREE_LOCAL,
    "llama3.1": ModelInfo(
        context_window=131_072, max_output=4096, input_price=0.0, output_price=0.0
    ),
    "qwen2.5": ModelInfo(context_window=32_768, max_output=8192, input_price=0.0, output_price=0.0),
    "smollm2": FREE_LOCAL,
    "local": FREE_LOCAL,
}


_found: dict[str, ModelInfo] = {}
"""Lookups already made: the loop prices every response."""


def lookup(model_name: str) -> ModelInfo:
    """Facts for a model name such as `openai:gpt-4o-2024-08-06` or `anthropic:claude-sonnet-4-5`:
    the provider prefix is dropped and the longest catalog name the rest starts with wins."""
    info = _found.get(model_name)
    if info is None:
        info = _found[model_name] = _search(model_name)
    return info


def _search(model_name: str) -> ModelInfo:
    provider, name = split_name(model_name)
    if provider == "local" or model_name == "local":
        return CATALOG["local"]
    if (own := CATALOG.get(model_name.lower())) is not None:  # an entry for this provider's
        return own
    name = name.lower()
    best = max((key for key in CATALOG if name.startswith(key)), key=len, default=None)
    if best is not None:
        return CATALOG[best]
    found = limits(provider, name)
    if found is not None:
        return ModelInfo(
            context_window=found.window,
            max_output=found.output or GENEROUS_OUTPUT,
            tools=found.tools,
            thinking=found.thinking,
            vision=found.vision,
        )
    return UNKNOWN


FREE_PROVIDERS = ("local", "ollama")
"""Providers that run the model on a machine of yours: nobody bills for its tokens."""


def served_at(model: object) -> str | None:
    """The base URL a model's requests go to, if not its provider's own API (`served_at` of
    the providers: a base URL given, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL)."""
    url = getattr(model, "served_at", None)
    return url if isinstance(url, str) and url else None


def price(model_name: str, usage: Usage, *, at: str | None = None) -> float | None:
    """What `usage` of a model cost in USD: the catalog's own prices (yours: `register`, the
    config's `[models]`), else genai-prices' (cache reads and writes priced apart); None when
    neither knows the model. `at`: the base URL its requests went to (`served_at`): a model
    served elsewhere than by its provider is priced as the provider that URL is (OpenRouter,
    Azure, Groq, …), or not at all: a server of yours is not billed as OpenAI."""
    own = lookup(model_name).cost(usage)
    if own is not None:
        return own
    found = _priced_model(model_name, at)
    if found is None:
        return 0.0 if split_name(model_name)[0] in FREE_PROVIDERS else None
    from genai_prices import Usage as PricedUsage
    from genai_prices import calc_price

    counted = PricedUsage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    provider_id, name = found
    return float(calc_price(counted, name, provider_id=provider_id).total_price)


def priced(model_name: str, *, at: str | None = None) -> bool:
    """Whether `price` knows what the model costs (a cost budget can be kept)."""
    info = lookup(model_name)
    if info.input_price is not None and info.output_price is not None:
        return True
    return split_name(model_name)[0] in FREE_PROVIDERS or _priced_model(model_name, at) is not None


def split_name(model_name: str) -> tuple[str, str]:
    """`provider:model` -> (provider, model): at the first colon, as model ids hold colons
    (Bedrock's `...-v1:0`, Ollama's `llama3.2:3b`); a URL's provider ends at its last; a bare
    name has no provider."""
    if "://" in model_name:
        provider, _, name = model_name.rpartition(":")
    else:
        provider, _, name = model_name.partition(":")
    return (provider, name) if name else ("", provider)  # a bare name: no provider


SAME_PRICES = {
    "openai-responses": "openai",
    "gemini": "google",
    "vertex": "google",
    "bedrock": "aws",
}
"""Providers of reins' naming that bill as another of genai-prices'."""

_priced: dict[tuple[str, str | None], tuple[str, str] | None] = {}


def _priced_model(model_name: str, at: str | None) -> tuple[str, str] | None:
    """genai-prices' provider id and the model's name, for a model it prices: of the provider
    the base URL `at` is, else of a provider of reins' naming it knows (`openai`,
    `anthropic`, `groq`, …) or, for a bare name, of the provider it guesses; None otherwise."""
    key = (model_name, at)
    if key not in _priced:
        from genai_prices import data_snapshot

        provider, name = split_name(model_name)
        provider = SAME_PRICES.get(provider, provider)
        name = name.lower()
        try:
            found, _ = data_snapshot.get_snapshot().find_provider_model(
                name, None, None if at else provider or None, at
            )
        except LookupError:
            _priced[key] = None
        else:
            _priced[key] = (found.id, name)
    return _priced[key]


def register(name: str, info: ModelInfo) -> None:
    """Add or correct a catalog entry (for example your negotiated prices)."""
    CATALOG[name.lower()] = info
    _found.clear()


register_model = register
"""`reins.register_model(name, ModelInfo(...))`: a model's window, cap or prices, by name as the
loop sees it (`openai:gpt-4o-mini`, or a name a model's name starts with after its provider)."""
