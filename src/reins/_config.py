"""Config files: the default model, and API keys and base URLs per provider or endpoint.

Two TOML files, both optional: the user's (`$REINS_CONFIG`, else
`$XDG_CONFIG_HOME/reins/config.toml`, else `~/.config/reins/config.toml`) and the project's
`reins.toml` (in the working directory or the nearest parent that has one), which wins key by
key. The usual environment variables (OPENAI_API_KEY, ANTHROPIC_BASE_URL, ...) win over both.

    model = "vllm:qwen2.5-7b"         # for `reins run` without --model (else: local)
    approval = "ask"                  # or "never-ask" (like --yes), or "pause"
    max_steps = 30                    # caps of `reins run` (its flags win): steps,
    token_budget = 200000             # tokens (input + output), seconds, US dollars
    time_budget = 600
    cost_budget = 2.0
    at_cap = "summarize"              # or "stop": what a cap ends the run with

    [providers.openai]
    api_key_env = "WORK_OPENAI_KEY"   # the variable that holds the key

    [providers.vllm]                  # a named OpenAI-compatible server: model `vllm:NAME`
    base_url = "http://gpu-box:8000/v1"

    [permissions]                     # per tool: allow, ask or deny
    write_file = "ask"
    [permissions.commands]            # per argv prefix of a shell command
    "git status" = "allow"
    "git push" = "ask"

    [sandbox]                         # what commands may do (`reins.sandbox.SandboxPolicy`)
    mode = "workspace-write"          # or read-only, danger-full-access
    network = false
    env = ["JAVA_HOME"]               # extra variables passed to commands, by name
    max_timeout = 600                 # seconds; a longer timeout asked for is cut to this

    checks = ["pytest -q"]            # must pass (in the sandbox) before a final answer stands
    stop_max_rejections = 3           # rejected answers before the run ends missing_evidence
    reflect = true                    # a model call judges each step with tools (--reflect)
    [[stop_hooks]]                    # the event as JSON on stdin; exit 2 + a message rejects
    command = "./scripts/review.sh"
    timeout = 60

    trusted_projects = ["~/src/app"]  # user file only: run these projects' checks and hooks

A project file is committed with the code, so it may name a key's variable but not hold a key,
and its permissions, approval and sandbox can only be stricter than the user's. Its `checks`
and `stop_hooks` are commands that run unasked when the agent says it is done, so they wait
(`Config.project_commands`) until the user trusts the project: in their own file
(`trusted_projects`, the folder that holds `reins.toml`) or when `reins run` asks.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import UsageError
from .permissions import PermissionRules
from .policies import GUARD_NAMES, Guards
from .sandbox import MODES, SandboxMode, SandboxPolicy

PROJECT_FILE = "reins.toml"


class Endpoint(BaseModel):
    """Where a provider's API is, and its key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    """The environment variable that holds the key (keeps the key out of the file)."""
    api: Literal["openai", "anthropic"] = "openai"
    """The wire format of a named endpoint (`openai`, `anthropic` and `ollama` know theirs)."""

    def key(self, name: str) -> str | None:
        if not self.api_key_env:
            return self.api_key
        key = os.environ.get(self.api_key_env) or self.api_key
        if key is None:
            raise UsageError(
                f"the config keeps the key of providers.{name} in ${self.api_key_env}, which is "
                "not set; export it, or change api_key_env"
            )
        return key


class SandboxConfig(BaseModel):
    """The `[sandbox]` table; unset keys keep `SandboxPolicy`'s defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: SandboxMode | None = None
    network: bool | None = None
    env: tuple[str, ...] = ()
    max_timeout: float | None = None

    def policy(self, *, mode: str | None = None, network: bool | None = None) -> SandboxPolicy:
        """The policy, with the command line's flags (`--sandbox`, `--network`) winning."""
        default = SandboxPolicy()
        chosen = self.network if network is None else network
        return SandboxPolicy(
            mode=cast(SandboxMode, mode or self.mode or default.mode),  # checked by the policy
            network=default.network if chosen is None else chosen,
            env=self.env,
            max_timeout=self.max_timeout or default.max_timeout,
        )


class GuardsConfig(BaseModel):
    """The `[guards]` table: each guard on or off, and its settings (see `Guards`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file_action: bool | None = None
    repeat_cache: bool | None = None
    loop: bool | None = None
    loop_threshold: int | None = Field(default=None, ge=2)
    anti_stall_threshold: int | None = Field(default=None, ge=1)
    markup: bool | None = None
    goal_anchor: int | None = Field(default=None, ge=0)
    one_call: bool | None = None

    def guards(self, *, off: Sequence[str] = (), on: Sequence[str] = ()) -> Guards:
        """The guards, with the command line's `--no-guard` and `--guard` winning."""
        chosen = Guards(**{k: v for k, v in self.model_dump().items() if v is not None})
        chosen = chosen.without(*off)
        for name in on:
            if name not in GUARD_NAMES:
                chosen.without(name)  # raises UsageError: no such guard
            field = name.replace("-", "_")
            if not getattr(chosen, field):
                default: dict[str, Any] = {field: 5 if field == "goal_anchor" else True}
                chosen = replace(chosen, **default)
        return chosen


class StopHookConfig(BaseModel):
    """A `[[stop_hooks]]` entry: a command that may reject a final answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    timeout: float = 60.0


class ProjectCommands(BaseModel):
    """The commands a project file sets (`checks`, `[[stop_hooks]]`), held aside until the user
    trusts the project: they would run, unasked, whenever the agent says it is done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    """The project file."""
    checks: tuple[str, ...] | None = None
    """None: the file does not set `checks` (the user's stand)."""
    stop_hooks: tuple[StopHookConfig, ...] | None = None

    def commands(self, *, checks: bool = True) -> list[tuple[str, str]]:
        """Each command with its kind (`check`, `stop hook`), in the order they would run."""
        return [
            *(("check", c) for c in (self.checks or ()) if checks),
            *(("stop hook", h.command) for h in self.stop_hooks or ()),
        ]


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """The model `reins run` uses when neither --model nor REINS_MODEL says."""
    providers: dict[str, Endpoint] = {}
    approval: Literal["ask", "never-ask", "pause"] = "ask"
    """Who answers a permission ask in `reins run`: the person at the terminal (with no
    terminal: denied), nobody (`never-ask`: approved, as `--yes`), or a later `reins resume`
    (`pause`: the run stops `waiting`)."""
    permissions: PermissionRules = PermissionRules()
    """The user's rules."""
    project_permissions: PermissionRules = PermissionRules()
    """The project's rules: they can only make a decision stricter."""
    sandbox: SandboxConfig = SandboxConfig()
    guards: GuardsConfig = GuardsConfig()
    max_steps: int | None = Field(default=None, gt=0)
    """The caps of `reins run` when its flags do not say (`Agent`'s fields of those names)."""
    token_budget: int | None = Field(default=None, gt=0)
    time_budget: float | None = Field(default=None, gt=0)
    cost_budget: float | None = Field(default=None, gt=0)
    at_cap: Literal["stop", "summarize"] = "stop"
    checks: tuple[str, ...] = ()
    """Commands that must pass before a final answer ends a run (`--check` adds to them)."""
    stop_hooks: tuple[StopHookConfig, ...] = ()
    stop_max_rejections: int = Field(default=3, ge=0)
    """Final answers rejected (by checks and stop hooks) before the run ends missing_evidence."""
    reflect: bool = False
    """Reflect on each step whose tools ran (`--reflect`; the Reflective agent)."""
    reflect_max_retries: int = Field(default=3, ge=1)
    """Reflections in a row judging a step failed that end the run (`stalled`)."""
    project_commands: ProjectCommands | None = None
    """The project file's `checks` and `stop_hooks` when the user's config does not trust the
    project: not in `checks` and `stop_hooks` (those are the user's) until `trusting_project`."""

    def endpoint(self, name: str) -> Endpoint:
        return self.providers.get(name) or Endpoint()

    def trusting_project(self) -> Config:
        """The config with the project file's commands in place of the user's (key by key)."""
        held = self.project_commands
        if held is None:
            return self
        update: dict[str, object] = {"project_commands": None}
        if held.checks is not None:
            update["checks"] = held.checks
        if held.stop_hooks is not None:
            update["stop_hooks"] = held.stop_hooks
        return self.model_copy(update=update)


def user_config_path() -> Path:
    if explicit := os.environ.get("REINS_CONFIG"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "reins" / "config.toml"


def project_config_path(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).exists():  # a folder by that name: an error that says so
            return folder / PROJECT_FILE
    return None


def load_config(start: Path | None = None) -> Config:
    """The user's file overlaid with the project's; no file: an empty config."""
    merged: dict[str, object] = {}
    providers: dict[str, Any] = {}
    rules: dict[str, PermissionRules] = {}
    user = user_config_path()
    project = project_config_path(start)
    sandbox = SandboxConfig()
    guards: dict[str, object] = {}
    trusted: list[Path] = []
    held: ProjectCommands | None = None
    if project is not None and user.exists() and project.exists() and project.samefile(user):
        project = None  # $REINS_CONFIG names the project file: it is the user's own
    for path, is_project in ((user, False), (project, True)):
        if path is None or not path.exists():
            continue
        data = _read(path)
        for key in ("project_permissions", "project_commands"):  # made here, not read
            if key in data:
                raise UsageError(f"config {path}: {key}: Extra inputs are not permitted")
        if is_project:
            _refuse_keys(path, data)
            _refuse_looser_approval(path, data)
            _refuse_trust(path, data)
            held = _project_commands(path, data)
        else:
            trusted = _trusted_projects(path, data.pop("trusted_projects", []))
        if (table := data.pop("permissions", None)) is not None:
            name = "project_permissions" if is_project else "permissions"
            rules[name] = _rules(path, table)
        layer_guards = data.pop("guards", {})
        if isinstance(layer_guards, dict):
            guards.update(layer_guards)  # key by key: the project's win
        else:
            merged["guards"] = layer_guards  # not a table: the validation below says so
        layer_sandbox = _sandbox(path, data.pop("sandbox", {}))
        sandbox = _tightened(sandbox, layer_sandbox, path) if is_project else layer_sandbox
        layer = data.pop("providers", None)
        if isinstance(layer, dict):
            for name, endpoint in layer.items():
                if isinstance(endpoint, dict) and isinstance(providers.get(name), dict):
                    providers[name] = {**providers[name], **endpoint}  # key by key
                else:
                    providers[name] = endpoint  # new, or not a table: validated below
        elif layer is not None:
            merged["providers"] = layer  # not a table: the validation below says so
        merged.update(data)
    try:
        config = Config.model_validate(
            {"providers": providers, "guards": guards, **merged, **rules, "sandbox": sandbox}
        )
    except ValidationError as exc:
        files = " and ".join(str(p) for p in (user, project) if p is not None and p.exists())
        raise UsageError(f"config ({files}): {_first_error(exc)}") from None
    if held is None:
        return config
    config = config.model_copy(update={"project_commands": held})
    if not held.commands() or held.path.parent in trusted:
        return config.trusting_project()  # nothing to run, or trusted by the user
    return config


def _read(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the config file {path}: {exc.strerror}") from None
    except RecursionError:
        raise UsageError(f"config file {path} is nested too deep to read") from None


def _rules(path: Path, table: object) -> PermissionRules:
    if not isinstance(table, dict):
        raise UsageError(f"{path}: permissions must be a table ([permissions])")
    try:
        return PermissionRules.from_table(table)
    except ValidationError as exc:
        where = _first_error(exc, "permissions").replace("permissions.tools.", "permissions.")
        raise UsageError(f'{path}: {where} (a rule is "allow", "ask" or "deny")') from None


def _refuse_looser_approval(path: Path, data: dict[str, object]) -> None:
    if data.get("approval") == "never-ask":
        raise UsageError(
            f'{path}: approval = "never-ask": a project file may only make approvals stricter; '
            f"set it in {user_config_path()} or pass --yes"
        )


def _refuse_trust(path: Path, data: dict[str, object]) -> None:
    if "trusted_projects" in data:
        raise UsageError(
            f"{path}: trusted_projects: a project file cannot trust itself (or any project); "
            f"trust a project in {user_config_path()}, or pass --trust-project"
        )


def _project_commands(path: Path, data: dict[str, object]) -> ProjectCommands | None:
    """The project file's commands, taken out of `data`; None if it sets none."""
    table = {key: data.pop(key) for key in ("checks", "stop_hooks") if key in data}
    if not table:
        return None
    try:
        return ProjectCommands.model_validate({**table, "path": path})
    except ValidationError as exc:
        raise UsageError(f"config {path}: {_first_error(exc)}") from None


def _trusted_projects(path: Path, value: object) -> list[Path]:
    """The folders named by the user's `trusted_projects`, resolved."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f'{path}: trusted_projects must be a list of folders, e.g. ["~/src/app"]')
    folders = []
    for name in value:
        folder = Path(name).expanduser()
        if not folder.is_absolute():
            raise UsageError(
                f"{path}: trusted_projects: {name!r} is not an absolute path; name the folder "
                'that holds reins.toml from the root or from ~, e.g. "~/src/app"'
            )
        folders.append(folder.resolve())
    return folders


def _refuse_keys(path: Path, data: dict[str, object]) -> None:
    providers = data.get("providers")
    for name, endpoint in providers.items() if isinstance(providers, dict) else []:
        if isinstance(endpoint, dict) and "api_key" in endpoint:
            raise UsageError(
                f"{path}: providers.{name}.api_key: a project file is shared with the code, so "
                "it must not hold a key; set api_key_env to the variable that holds it, or put "
                f"the key in {user_config_path()}"
            )


def _sandbox(path: Path, table: object) -> SandboxConfig:
    try:
        return SandboxConfig.model_validate(table)
    except ValidationError as exc:
        raise UsageError(f"config {path}: {_first_error(exc, 'sandbox')}") from None


def _first_error(exc: ValidationError, *table: str) -> str:
    """`where: what` of a validation's first error, `where` dotted from the file's top."""
    error = exc.errors()[0]
    return f"{'.'.join(str(part) for part in (*table, *error['loc']))}: {error['msg']}"


def _tightened(user: SandboxConfig, project: SandboxConfig, path: Path) -> SandboxConfig:
    """The project's sandbox table over the user's: it may only make the sandbox stricter."""
    mine = user.policy()
    loosened = []
    if project.mode and MODES.index(project.mode) > MODES.index(mine.mode):
        loosened.append(f"mode = {project.mode!r} (yours: {mine.mode!r})")
    if project.network and not mine.network:
        loosened.append("network = true")
    if set(project.env) - set(user.env):
        loosened.append(f"env adds {sorted(set(project.env) - set(user.env))}")
    if project.max_timeout and project.max_timeout > mine.max_timeout:
        loosened.append(f"max_timeout = {project.max_timeout:g} (yours: {mine.max_timeout:g})")
    if loosened:
        raise UsageError(
            f"{path}: [sandbox] {'; '.join(loosened)}: a project file may only tighten the "
            f"sandbox; loosen it in your own config ({user_config_path()}) or on the command "
            "line (--sandbox, --network)"
        )
    return SandboxConfig(
        mode=project.mode or user.mode,
        network=user.network if project.network is None else project.network,
        env=project.env if "env" in project.model_fields_set else user.env,
        max_timeout=project.max_timeout or user.max_timeout,
    )
