"""The constructor keywords `Agent` took before its settings were grouped: they keep working for
one release (0.2), with a DeprecationWarning that names the new spelling."""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ._budgets import Budgets
from ._groups import Ask, Checks, Subagents, as_ask, as_checks, as_subagents

_MOVED = {
    "max_steps": ("budgets", "max_steps"),
    "token_budget": ("budgets", "token_budget"),
    "time_budget": ("budgets", "time_budget"),
    "cost_budget": ("budgets", "cost_budget"),
    "budget_notices": ("budgets", "notices"),
    "at_cap": ("budgets", "at_cap"),
    "on_cap": ("budgets", "on_cap"),
    "stop_hooks": ("checks", "stop_hooks"),
    "stop_max_rejections": ("checks", "max_rejections"),
    "ask_timeout": ("ask", "timeout"),
    "subagent_steps": ("subagents", "max_steps"),
    "subagent_timeout": ("subagents", "timeout"),
}
"""An old keyword of `Agent`: the group it moved to, and its name there."""

_GROUPS: dict[str, tuple[type, Callable[[Any], Any]]] = {
    "budgets": (Budgets, lambda given: given if isinstance(given, Budgets) else Budgets()),
    "checks": (Checks, as_checks),
    "ask": (Ask, as_ask),
    "subagents": (Subagents, as_subagents),
}
"""A group: its class, and what makes the group whole from what was given (None: it is off,
and a setting of it has nothing to set)."""

_RECORDED = ("model_id", "profile", "profile_inferred")
"""Keywords that only set what the log records: set after the agent is made, warned."""

ClassT = TypeVar("ClassT", bound=type)


def old_spellings(cls: ClassT) -> ClassT:
    """`cls(max_steps=10, ...)` made as `cls(budgets=Budgets(max_steps=10, ...))` (and so for
    each group), and `cls(profile=...)` as `cls()` recording it, warned."""
    made = cls.__init__  # type: ignore[misc]
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}

    @functools.wraps(made)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        old = {name: kwargs.pop(name) for name in list(kwargs) if name in _MOVED}
        for group, (kind, whole) in _GROUPS.items():
            mine = [name for name in old if _MOVED[name][0] == group]
            if not mine:
                continue
            moved = {_MOVED[name][1]: old[name] for name in mine}
            given = ", ".join(f"{field}=..." for field in moved)
            names = ", ".join(mine)
            warnings.warn(
                f"{type(self).__name__}({names}=...) is deprecated: give {group}="
                f"{kind.__name__}({given}) (reins.{kind.__name__}); the old keywords go in 0.3",
                DeprecationWarning,
                stacklevel=2,
            )
            base = whole(kwargs.get(group, defaults[group]))
            if base is not None:  # a group that is off keeps nothing of its settings
                kwargs[group] = dataclasses.replace(base, **moved)
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
