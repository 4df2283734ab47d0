"""The constructor keywords `Agent` took before its settings were grouped: they keep working for
one release (0.2), with a DeprecationWarning that names the new spelling."""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any, TypeVar

from ._budgets import Budgets

_BUDGETS = {
    "max_steps": "max_steps",
    "token_budget": "token_budget",
    "time_budget": "time_budget",
    "cost_budget": "cost_budget",
    "budget_notices": "notices",
    "at_cap": "at_cap",
    "on_cap": "on_cap",
}
"""An old keyword of `Agent`, and its name in `Budgets`."""

_RECORDED = ("model_id", "profile", "profile_inferred")
"""Keywords that only set what the log records: set after the agent is made, warned."""

ClassT = TypeVar("ClassT", bound=type)


def old_spellings(cls: ClassT) -> ClassT:
    """`cls(max_steps=10, ...)` made as `cls(budgets=Budgets(max_steps=10, ...))`, and
    `cls(profile=...)` as `cls()` recording it, warned."""
    made = cls.__init__  # type: ignore[misc]

    @functools.wraps(made)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        old = {name: kwargs.pop(name) for name in list(kwargs) if name in _BUDGETS}
        if old:
            given = ", ".join(f"{_BUDGETS[name]}=..." for name in old)
            warnings.warn(
                f"{type(self).__name__}({', '.join(old)}=...) is deprecated: give "
                f"budgets=Budgets({given}) (reins.Budgets); the old keywords go in 0.3",
                DeprecationWarning,
                stacklevel=2,
            )
            base = kwargs.get("budgets") or Budgets()
            changes = {_BUDGETS[name]: value for name, value in old.items()}
            kwargs["budgets"] = dataclasses.replace(base, **changes)
        recorded = {name: kwargs.pop(name) for name in _RECORDED if name in kwargs}
        if recorded:
            warnings.warn(
                f"{type(self).__name__}({', '.join(recorded)}=...) is deprecated: these are "
                "only recorded, by reins (a model given as a string is recorded as that "
                "string); the keywords go in 0.3",
                DeprecationWarning,
                stacklevel=2,
            )
        made(self, *args, **kwargs)
        for name, value in recorded.items():
            setattr(self, name, value)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls
