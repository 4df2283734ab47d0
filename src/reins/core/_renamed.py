"""Names that moved or were renamed in 0.2: the old spelling keeps working for one release,
with a DeprecationWarning that says the new one (a package's `__getattr__` asks here)."""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def old_name(package: str, name: str, renamed: dict[str, tuple[str, str, str]]) -> Any:
    """The value `package.name` used to be, from `renamed[name]` = (module, attribute, the
    spelling to use now), with a warning at the caller's line; AttributeError if none."""
    if name not in renamed:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, attribute, spelling = renamed[name]
    warnings.warn(
        f"{package}.{name} is now {spelling}; the old name works until reins 0.3",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(module), attribute)
