"""The configurations a suite run compares, by name: a base, and changes that differ by one thing.

`on`, `off`, `reins-served` and the peers are the bases, and `NAMED` changes of `on` with a name
of their own (`syntax-refuse` is `on+guard.syntax-check=refuse`); a name may add changes after
`+`, each `KEY=VALUE`, so two configs of one invocation can differ by exactly one setting:

    on,on+guard.done-check=off          the done-check guard's A/B
    on,on+env.REINS_LOCAL_THREADS=1      an environment variable's
    on,on+model=local:smollm2            another model, the same everything else

`--set KEY=VALUE` makes a change in every reins config of the run. The keys:

- `guard.NAME`: a guard on or off (`done-check`, `loop`, ... as `--no-guard` spells them), or a
  `Guards` setting (`guard.loop_threshold=4`); a guard added later is a key at once;
- `budget.FIELD`: a `Budgets` field (`budget.notices=off`);
- `settings.FIELD`: a `ModelSettings` field (`settings.temperature=0.2`);
- `agent.FIELD`: any other `Agent` keyword (`agent.reflect=on`, `agent.mode=write-test`,
  `agent.checks=["python3 -m pytest -q"]`);
- `env.NAME`: an environment variable, set while each of the config's runs is made and runs
  (and while its model is loaded: a config whose variables differ loads its own);
- `model`: the model string this config runs (`--model` for the others).

A value is `on`/`off` (or `true`/`false`), JSON (a number, a list, `null`), or else text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any

import peers

BASES = ("on", "off", "reins-served", *peers.PEERS)
NAMED = {
    "no-escapes": ("reins, escapes not read back", ["guard.escapes=off"]),
    "syntax-refuse": ("reins, breaking writes refused", ["guard.syntax-check=refuse"]),
    "syntax-off": ("reins, no syntax check", ["guard.syntax-check=off"]),
    "before-29": (
        "reins, without issue 29's changes",
        [
            "guard.escapes=off",
            "guard.syntax-check=off",
            "guard.rereads=off",
            "guard.change-review=off",
            "guard.compute=off",
            "env.REINS_PREFIX_CACHE=0",
        ],
    ),
}
"""Configs that are `on` with a change, by a name: label, changes."""
_WORDS = {"on": True, "true": True, "yes": True, "off": False, "false": False, "no": False}


@dataclass(kw_only=True)
class Config:
    """How one configuration runs a task."""

    label: str
    changes: list[str] = field(default_factory=list[str])
    """The `KEY=VALUE` changes made to its base (`--set`'s included), as written."""
    peer: str | None = None
    """A peer harness on llama-server (`peers.PEERS`), else reins."""
    served: bool = False
    """reins' OpenAI-compatible provider on llama-server, not the model in process."""
    model: str | None = None
    """Its own model string; None: the run's `--model`."""
    guards: Any = None
    """The `Guards` of its agents."""
    budgets: dict[str, Any] = field(default_factory=dict[str, Any])
    """`Budgets` fields other than the step cap (which is `--max-steps`)."""
    settings: Any = None
    """The `ModelSettings` of its agents (None: the agent's default)."""
    agent: dict[str, Any] = field(default_factory=dict[str, Any])
    """Other `Agent` keywords."""
    env: dict[str, str] = field(default_factory=dict[str, str])

    def with_changes(self, changes: list[str]) -> Config:
        """This config with `KEY=VALUE` changes made (a bad one: SystemExit saying why)."""
        if changes and self.peer:
            raise SystemExit(
                f"config {self.label!r}: a peer takes no changes ({', '.join(changes)}): "
                "they are reins' settings"
            )
        made = replace(
            self,
            changes=[*self.changes, *changes],
            budgets=dict(self.budgets),
            agent=dict(self.agent),
            env=dict(self.env),
        )
        for change in changes:
            key, equals, text = change.partition("=")
            if not equals or not key:
                raise SystemExit(f"{change!r}: a change is KEY=VALUE (guard.done-check=off)")
            made._make(key.strip(), text.strip(), change)
        return made

    def _make(self, key: str, text: str, change: str) -> None:
        from reins import Guards, ModelSettings
        from reins.agent._budgets import Budgets

        kind, _, name = key.partition(".")
        if kind == "model" and not name:
            self.model = text
        elif kind == "env" and name:
            self.env[name] = text
        elif kind == "guard" and name:
            self.guards = _replaced(self.guards or Guards(), name.replace("-", "_"), text, change)
        elif kind == "budget" and name:
            if name == "max_steps":
                raise SystemExit(f"{change!r}: the step cap is --max-steps, the same for all")
            _replaced(Budgets(), name, text, change)  # a field Budgets has, of its type
            self.budgets[name] = value_of(text)
        elif kind == "settings" and name:
            base = self.settings or ModelSettings()
            self.settings = _replaced(base, name, text, change)
        elif kind == "agent" and name:
            self.agent[name] = _agent_value(name, text, change)
        else:
            raise SystemExit(
                f"{change!r}: no such key; the keys: guard.NAME, budget.FIELD, settings.FIELD, "
                "agent.FIELD, env.NAME, model"
            )

    @contextmanager
    def environment(self) -> Iterator[None]:
        """Its environment variables set, for as long as the block runs."""
        before = {name: os.environ.get(name) for name in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def value_of(text: str) -> Any:
    """`on`/`off` as a bool, JSON as its value, anything else as the text."""
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    try:
        return json.loads(text)
    except ValueError:
        return text


_OWN_KEYS = {"guards": "guard.NAME", "budgets": "budget.FIELD", "settings": "settings.FIELD"}
_RUNNER_SETS = ("model", "workspace", "log", "approval", "tools")
"""`Agent` keywords run.py sets for every task (`model` is the `model` key)."""


def _agent_value(name: str, text: str, change: str) -> Any:
    from reins import Agent

    if name in _OWN_KEYS:
        raise SystemExit(f"{change!r}: {name} are changed one by one, by {_OWN_KEYS[name]}")
    known = [f.name for f in fields(Agent) if f.init and f.name not in _RUNNER_SETS]
    if name not in known:
        raise SystemExit(
            f"{change!r}: Agent has no keyword {name!r} to change; it has "
            f"{', '.join(k for k in known if k not in _OWN_KEYS)}"
        )
    return value_of(text)


def _replaced(settings: Any, name: str, text: str, change: str) -> Any:
    """`settings` (a dataclass) with field `name` set from `text`, of the field's type."""
    known = {f.name for f in fields(settings) if f.init}
    if name not in known:
        raise SystemExit(
            f"{change!r}: {type(settings).__name__} has no {name!r}; it has {', '.join(known)}"
        )
    now = getattr(settings, name)
    value = text if isinstance(now, str) else value_of(text)  # a word setting: `off` is a word
    if isinstance(now, bool) and not isinstance(value, bool):
        raise SystemExit(f"{change!r}: {name} is on or off")
    if isinstance(now, int | float) and not isinstance(now, bool):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SystemExit(f"{change!r}: {name} is a number")
        if isinstance(now, int) and isinstance(value, float):
            raise SystemExit(f"{change!r}: {name} is a whole number")
    try:
        return replace(settings, **{name: value})
    except Exception as exc:  # the settings' own check (a UsageError): said as it is
        raise SystemExit(f"{change!r}: {exc}") from None


def base(name: str) -> Config:
    """One of `BASES`, unchanged."""
    from reins import Guards, ModelSettings
    from reins.core._guard_settings import GUARD_NAMES

    if name == "on":  # the defaults
        return Config(label="reins, policies on")
    if name == "off":  # every guard, this one and any added later, and the budget notices
        return Config(
            label="reins, policies off",
            guards=Guards().without(*GUARD_NAMES),
            budgets={"notices": False},
        )
    if name == "reins-served":
        served = ModelSettings(temperature=peers.TEMPERATURE, max_tokens=peers.DEFAULT_MAX_TOKENS)
        return Config(label="reins served, policies on", served=True, settings=served)
    if name in peers.PEERS:
        return Config(label=name, peer=name)
    if name in NAMED:
        label, changes = NAMED[name]
        return replace(base("on").with_changes(changes), label=label)
    known = ", ".join([*BASES, *NAMED])
    raise SystemExit(f"unknown config {name!r}; the bases: {known} (then +KEY=VALUE)")


def parse(names: list[str], sets: list[str]) -> list[Config]:
    """The configs `--configs` names (each `BASE[+KEY=VALUE...]`), with `--set`'s changes made
    in each reins one; labelled by their base and their own changes."""
    chosen: list[Config] = []
    for spec in names:
        name, *changes = (part.strip() for part in spec.split("+"))
        config = base(name).with_changes(changes)
        if changes:
            config.label += " + " + ", ".join(changes)
        if not config.peer:
            config = config.with_changes(sets)
        chosen.append(config)
    labels = [c.label for c in chosen]
    if len(set(labels)) < len(labels):
        raise SystemExit(f"configs named twice: {', '.join(names)}")
    return chosen
