"""The context layer: what the model is shown each round, and how it stays inside the window.

Names load on first use (PEP 562): the config reads `ContextSettings` at start-up (they live in
`reins.core`, which records them in a run's config), and must not load the builder with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core._context_settings import ContextSettings
    from ._builder import ContextBuilder, ContextTooLarge
    from ._modes import MODES, Mode
    from ._profiles import infer_profile
    from ._prompt import system_prompt
    from ._sections import PromptContext, PromptSection, SectionSource

_EXPORTS = {
    "ContextBuilder": "._builder",
    "ContextTooLarge": "._builder",
    "ContextSettings": "..core._context_settings",
    "MODES": "._modes",
    "Mode": "._modes",
    "PromptContext": "._sections",
    "PromptSection": "._sections",
    "SectionSource": "._sections",
    "infer_profile": "._profiles",
    "system_prompt": "._prompt",
}

__all__ = [
    "MODES",
    "ContextBuilder",
    "ContextSettings",
    "ContextTooLarge",
    "Mode",
    "PromptContext",
    "PromptSection",
    "SectionSource",
    "infer_profile",
    "system_prompt",
]


_RENAMED = {
    "Section": ("reins.context._sections", "Section", "reins.context.PromptSection (render=)")
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        from ..core._renamed import old_name

        return old_name(__name__, name, _RENAMED)
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value
