"""Model strings -> Model objects."""

from __future__ import annotations

import importlib.util
import os

from ._errors import UnknownModel, UsageError
from ._model import Model

KNOWN = (
    "local, local:PATH.gguf, openai:NAME, anthropic:NAME, ollama:NAME, http(s)://HOST/v1 (an "
    "OpenAI-compatible server; model name from REINS_MODEL_NAME), script:FILE.json"
)
OLLAMA_URL = "http://localhost:11434/v1"


def resolve_model(spec: str) -> Model:
    """The model a string names; see `KNOWN`. Keys and base URLs come from the environment
    (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OLLAMA_BASE_URL)."""
    kind, _, rest = spec.partition(":")
    if kind == "script" and rest:
        from .testing import ScriptedModel

        return ScriptedModel.from_file(rest)
    if kind == "local":
        return _local(rest or None)
    if kind in ("openai", "ollama") and rest:
        from .models import OpenAIModel

        if kind == "ollama":
            base_url = os.environ.get("OLLAMA_BASE_URL", OLLAMA_URL)
            return OpenAIModel(model=rest, base_url=base_url, api_key="ollama", provider="ollama")
        return OpenAIModel(model=rest)
    if kind == "anthropic" and rest:
        from .models import AnthropicModel

        return AnthropicModel(model=rest)
    if kind in ("http", "https"):
        from .models import OpenAIModel

        name = os.environ.get("REINS_MODEL_NAME", "default")
        return OpenAIModel(model=name, base_url=spec, provider=spec)
    raise UnknownModel(f"unknown model {spec!r}; known forms: {KNOWN}")


def _local(path: str | None) -> Model:
    if importlib.util.find_spec("llama_cpp") is None:
        raise UsageError(
            "the local model needs llama-cpp-python; install it with pip install 'reins[local]'"
        )
    from .models import LocalModel
    from .models._embedded import embedded_gguf

    if path is None:
        embedded_gguf()  # a clear error now if the model file is missing
    elif not os.path.isfile(path):
        raise UsageError(f"no GGUF model file at {path!r}")
    return LocalModel(path=path)
