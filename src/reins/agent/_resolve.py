"""Model strings -> Model objects."""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

from ..core._errors import UnknownModel, UsageError
from ..core._model import Model
from ..models._embedded import DEFAULT_EMBEDDED, EMBEDDED, check_installed, embedded_model
from ._config import Config, load_config, user_config_path
from ._model_entries import register_entries

if TYPE_CHECKING:
    from ..memory import Embeddings

KNOWN = (
    f"local, local:NAME (an embedded model: {', '.join(EMBEDDED)}), local:PATH.gguf, "
    "openai:NAME, openai-responses:NAME (OpenAI's Responses API), anthropic:NAME, "
    "gemini:NAME (or google:NAME), vertex:NAME (Gemini on Vertex AI), bedrock:MODEL-ID, "
    "ollama:NAME, ENDPOINT:NAME (an endpoint of the config), http(s)://HOST/v1 (an "
    "OpenAI-compatible server; model name from REINS_MODEL_NAME), script:FILE.json"
)
OLLAMA_URL = "http://localhost:11434/v1"
HOSTED_DEFAULTS = (
    ("OPENAI_API_KEY", "openai:gpt-4o-mini", "openai"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5", "anthropic"),
    ("GEMINI_API_KEY", "gemini:gemini-2.5-flash", "google.genai"),
)
"""The models run when none is named and the embedded one is not installed, by key set (and
the SDK its provider needs installed: Gemini's is an extra)."""


def default_model() -> tuple[str, str]:
    """The model to run when none is named, and why, if it is not the embedded one: a
    machine without llama.cpp whose environment holds a hosted provider's key runs that
    provider's small model instead of failing."""
    if importlib.util.find_spec("llama_cpp") is None:
        for variable, spec, sdk in HOSTED_DEFAULTS:
            if os.environ.get(variable) and _installed(sdk):
                return spec, (
                    f"the embedded model is not installed (pip install 'reins[local]'): "
                    f"running {spec}, as {variable} is set"
                )
    return "local", ""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        return False


def resolve_model(spec: str, config: Config | None = None) -> Model:
    """The model a string names; see `KNOWN`. Keys and base URLs come from the environment
    (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OLLAMA_BASE_URL),
    then from the config files (`reins.agent._config`); a provider an untrusted project's file sets
    is an error (`Config.trusting_project` or `distrusting_project` settles it first). The
    config's `[models]` entries go into the model catalog."""
    if config is not None:
        register_entries(config.models)
    kind, _, rest = spec.partition(":")
    if kind == "script" and rest:
        from ..testing import ScriptedModel

        return ScriptedModel.from_file(rest)
    if kind == "local":
        return _local(rest or None)
    if kind in ("http", "https"):
        from ..models import OpenAIModel

        name = os.environ.get("REINS_MODEL_NAME", "default")
        return OpenAIModel(model=name, base_url=spec, provider=spec)
    if not rest:
        raise UnknownModel(f"unknown model {spec!r}; known forms: {KNOWN}")
    if config is None:
        config = load_config()
        register_entries(config.models)
    kind = ALIASES.get(kind, kind)  # google: is gemini: in the config too
    held = config.untrusted
    if held is not None and kind in held.providers:  # the CLI has asked (or refused) before
        raise UsageError(
            f"{held.path} sets providers.{kind}, and this project is not trusted: add its "
            f"folder to trusted_projects in {user_config_path()}, or resolve with "
            "load_config().trusting_project() (or distrusting_project(): yours alone)"
        )
    if kind == "bedrock":
        return _bedrock(rest, config)
    if kind == "vertex":
        from ..models import GeminiModel

        base_url = config.endpoint("vertex").base_url
        return GeminiModel(model=rest, vertex=True, provider="vertex", base_url=base_url)
    if kind == "openai-responses":  # OpenAI's other API: the same provider, key and URL
        from ..models import OpenAIResponsesModel

        openai = resolve_model(f"openai:{rest}", config)
        return OpenAIResponsesModel(
            model=rest,
            base_url=openai.base_url,  # type: ignore[attr-defined]
            api_key=openai.api_key,  # type: ignore[attr-defined]
        )
    endpoint = config.endpoint(kind)
    base_url = _from_env(kind, "base_url") or endpoint.base_url
    api_key = _from_env(kind, "api_key") or endpoint.key(kind)
    if kind in HOSTED and base_url is None and not api_key:
        # The provider's own API: a request without a key could only fail (after retries).
        variables = " or ".join(_ENV[kind]["api_key"].split())
        raise UsageError(
            f"{spec} needs an API key: set {variables}, or name the variable that "
            f"holds it as api_key_env under [providers.{kind}] in {user_config_path()}"
        )
    if kind == "ollama":
        base_url, api_key = base_url or OLLAMA_URL, api_key or "ollama"
    elif kind not in HOSTED:
        if kind not in config.providers:
            raise UnknownModel(f"unknown model {spec!r}; known forms: {KNOWN}")
        if base_url is None:
            raise UsageError(f"the config's providers.{kind} needs a base_url for {spec!r}")
    if kind == "gemini" or endpoint.api == "gemini":
        from ..models import GeminiModel

        return GeminiModel(model=rest, base_url=base_url, api_key=api_key, provider=kind)
    if kind == "anthropic" or endpoint.api == "anthropic":
        from ..models import AnthropicModel

        return AnthropicModel(model=rest, base_url=base_url, api_key=api_key, provider=kind)
    if endpoint.api == "openai-responses" and kind not in ("openai", "ollama"):
        from ..models import OpenAIResponsesModel

        return OpenAIResponsesModel(model=rest, base_url=base_url, api_key=api_key, provider=kind)
    from ..models import OpenAIModel

    return OpenAIModel(model=rest, base_url=base_url, api_key=api_key, provider=kind)


EMBEDDINGS = (
    "openai:NAME, ollama:NAME, ENDPOINT:NAME (an OpenAI-compatible endpoint of the config), "
    "http(s)://HOST/v1 (llama.cpp's llama-server --embeddings, vLLM)"
)


def resolve_embeddings(spec: str, config: Config | None = None) -> Embeddings:
    """The embedding model a string names (memory's recall by meaning): a model of an
    OpenAI-compatible `/v1/embeddings`, its server and key found as a chat model's are."""
    from ..memory import Embeddings
    from ..models import OpenAIModel

    kind, _, rest = spec.partition(":")
    if kind in ("http", "https"):
        return Embeddings(model="default", base_url=spec)
    others = ("local", "script", "anthropic", "bedrock", "vertex", "openai-responses")
    kind = ALIASES.get(kind, kind)
    model = resolve_model(spec, config) if rest and kind not in (*others, "gemini") else None
    if type(model) is not OpenAIModel:
        raise UsageError(
            f"memory embeddings {spec!r}: embeddings come from an OpenAI-compatible "
            f"/v1/embeddings; known forms: {EMBEDDINGS}"
        )
    return Embeddings(model=rest, base_url=model.base_url, api_key=model.api_key)


HOSTED = ("openai", "anthropic", "gemini")
"""The providers whose own API needs a key (unless a base URL names another server)."""
ALIASES = {"google": "gemini", "google-gla": "gemini", "google-vertex": "vertex"}
"""Other spellings users bring: pydantic-ai's names for the Gemini API and Vertex AI."""
_ENV = {
    "openai": {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"},
    "anthropic": {"base_url": "ANTHROPIC_BASE_URL", "api_key": "ANTHROPIC_API_KEY"},
    "gemini": {"base_url": "GOOGLE_GEMINI_BASE_URL", "api_key": "GOOGLE_API_KEY GEMINI_API_KEY"},
    "ollama": {"base_url": "OLLAMA_BASE_URL"},
}
"""The environment variables each provider's SDK users know (they win over the config);
where two are named, the first set wins."""


def _from_env(provider: str, setting: str) -> str | None:
    for variable in _ENV.get(provider, {}).get(setting, "").split():
        if value := os.environ.get(variable):
            return value
    return None


def _bedrock(model_id: str, config: Config) -> Model:
    """Amazon Bedrock's Converse API: credentials and region are boto3's own (AWS_* variables,
    ~/.aws, a role); the config's providers.bedrock may set the endpoint (`base_url`)."""
    from ..models import BedrockModel

    endpoint = config.endpoint("bedrock")
    return BedrockModel(model=model_id, endpoint_url=endpoint.base_url)


def _local(path: str | None) -> Model:
    """`local` (the default embedded model), `local:NAME` (an embedded model), or
    `local:PATH.gguf`. An embedded model's parts are only found here (a clear error now if they
    are missing); the first load assembles them."""
    name = DEFAULT_EMBEDDED if path is None else path if path in EMBEDDED else None
    if importlib.util.find_spec("llama_cpp") is None:
        if path is None:  # the default: say how to get it, and what else there is
            raise UsageError(
                "the default model runs in this process and is not installed: pip install "
                "'reins[local]' (llama.cpp compiles, about 9 minutes on 2 cores, and the model "
                "is 1.1 GB); or use a hosted model, e.g. --model openai:gpt-4o-mini with "
                "OPENAI_API_KEY set, or --model anthropic:claude-haiku-4-5 with ANTHROPIC_API_KEY"
            )
        wheel = f"'reins[{embedded_model(name).extra}]'" if name else "llama-cpp-python"
        raise UsageError(
            f"the local model needs llama-cpp-python; install it with pip install {wheel}"
        )
    from ..models import LocalModel

    if name is not None:
        check_installed(name)
        return LocalModel(embedded=path)
    if not os.path.isfile(path or ""):
        raise UsageError(f"no GGUF model file at {path!r} (embedded models: {', '.join(EMBEDDED)})")
    return LocalModel(path=path)
