"""Model strings -> Model objects."""

from __future__ import annotations

from ._errors import UnknownModel
from ._model import Model

KNOWN = "script:FILE.json"


def resolve_model(spec: str) -> Model:
    """The model a string names, e.g. `script:demo.json` (a scripted list of replies)."""
    kind, _, rest = spec.partition(":")
    if kind == "script" and rest:
        from .testing import ScriptedModel

        return ScriptedModel.from_file(rest)
    raise UnknownModel(f"unknown model {spec!r}; known forms: {KNOWN}")
