"""Config files: the default model, and API keys and base URLs per provider or endpoint.

Two TOML files, both optional: the user's (`$REINS_CONFIG`, which must exist, else
`$XDG_CONFIG_HOME/reins/config.toml`, else `~/.config/reins/config.toml`) and the project's
`reins.toml` (in the working directory or the nearest parent that has one), which wins key by
key. The usual environment variables (OPENAI_API_KEY, ANTHROPIC_BASE_URL, ...) win over both.

    model = "vllm:qwen2.5-7b"         # for `reins run` without --model (else: local)
    approval = "ask"                  # or "allow" (like --yes), "deny", "pause"
    max_steps = 30                    # caps of `reins run` (its flags win): steps,
    token_budget = 200000             # tokens (input + output), seconds, US dollars
    time_budget = 600
    cost_budget = 2.0
    at_cap = "summarize"              # or "stop": what a cap ends the run with
    budget_notices = false            # the caps stop the run without telling the model first

    [providers.openai]
    api_key_env = "WORK_OPENAI_KEY"   # the variable that holds the key

    [providers.vllm]                  # a named OpenAI-compatible server: model `vllm:NAME`
    base_url = "http://gpu-box:8000/v1"

    [permissions]                     # per tool: allow, ask or deny
    write_file = "ask"
    [permissions.commands]            # per argv prefix of a shell command
    "git status" = "allow"
    "git push" = "ask"

    [server]                          # `reins serve` (user file only; its flags win)
    host = "127.0.0.1"
    port = 8765

    [sandbox]                         # what commands may do (`reins.sandbox.SandboxPolicy`)
    mode = "workspace-write"          # or read-only, danger-full-access
    network = false
    env = ["JAVA_HOME"]               # extra variables passed to commands, by name
    max_timeout = 600                 # seconds; a longer timeout asked for is cut to this

    checks = ["pytest -q"]            # must pass (in the sandbox) before a final answer stands
    stop_max_rejections = 3           # rejected answers before the run ends missing_evidence
    reflect = true                    # a model call judges each step with tools (--reflect)
    checkpoints = false               # no snapshots for `reins diff/undo/rewind` (on: default)
    [memory]                          # facts kept across sessions (`reins memory`)
    capture = "project"               # a model call at a turn's end: project, user, off (default)
    recall = "all"                    # what runs read: all (default), writable, off
    redact = ['ACME-\\d{6}']          # RE2 rules: never kept (nor keys, tokens, passwords)
    [[stop_hooks]]                    # the event as JSON on stdin; exit 2 + a message rejects
    command = "./scripts/review.sh"
    timeout = 60
    [[hooks.before_tool]]             # also after_tool, session_start, prompt (Claude Code's
    matcher = "run_command"           # PreToolUse, ...): exit 2 blocks; JSON on stdout may
    command = "./scripts/guard.sh"    # change the call or add context

    trusted_projects = ["~/src/app"]  # user file only: these projects' checks, hooks, providers

A project file is committed with the code, so it may name a key's variable but not hold a key,
and its permissions, approval and sandbox can only be stricter than the user's; so can its caps
(`max_steps`, the budgets, `stop_max_rejections`, `reflect_max_retries`): it may lower one the
user set, not raise it. What it sets that acts for it waits (`Config.untrusted`) until the user
trusts the project, in their own file (`trusted_projects`, the folder that holds `reins.toml`)
or when `reins run` asks: its `checks`, `stop_hooks` and `hooks` (commands that run unasked
when the agent says it is done, around tool calls, at a session's start or on a prompt; once
trusted they run after the user's, never instead), its
`[providers.*]` tables (where the model's requests go, with the prompts and files, and which
key they carry), and a `model` that names no provider of the user's (`script:`, `local:PATH`,
a URL, or an endpoint only the project defines).
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..context import ContextSettings
from ..core._errors import UsageError
from ..core._files import NotAFile, read_regular
from ..mcp._config import MCPServerConfig, servers_from_json, servers_from_table
from ..memory._settings import CAPTURES, DEFAULT_BUDGET, RECALLS, Memory, narrower
from ..permissions import ApprovalMode, PermissionRules
from ..policies import HOOK_EVENTS, Guards, Hook, HookEvent
from ..sandbox import MODES, SandboxMode, SandboxPolicy
from ._model_entries import ModelEntry, price_keys

PROJECT_FILE = "reins.toml"


class Endpoint(BaseModel):
    """Where a provider's API is, and its key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    """The environment variable that holds the key (keeps the key out of the file)."""
    api: Literal["openai", "openai-responses", "anthropic", "gemini"] = "openai"
    """The wire format of a named endpoint: chat completions, OpenAI's Responses API,
    Anthropic's Messages API or the Gemini API (`openai`, `anthropic`, `gemini` and `ollama`
    know theirs)."""
    context_window: int | None = Field(default=None, ge=256)
    """The context window of its models, in tokens, where the catalog does not know them."""

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


class ServerConfig(BaseModel):
    """The `[server]` table of `reins serve` (the user's file only: a project cannot open a
    port); its flags win."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)


class SandboxConfig(BaseModel):
    """The `[sandbox]` table; unset keys keep `SandboxPolicy`'s defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: SandboxMode | None = None
    network: bool | None = None
    env: tuple[str, ...] = ()
    max_timeout: float | None = Field(default=None, gt=0)

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
    repetition: bool | None = None
    schema_echo: bool | None = None
    done_check: bool | None = None
    escapes: bool | None = None
    syntax_check: Literal["report", "refuse", "off"] | bool | None = None
    """true: "report", false: "off", as the other guards are switched."""
    rereads: bool | None = None
    change_review: bool | None = None
    compute: bool | None = None
    read_first: bool | None = None
    repeat_block: bool | None = None

    def guards(
        self,
        *,
        off: Sequence[str] = (),
        on: Sequence[str] = (),
        loop_threshold: int | None = None,
        anti_stall_threshold: int | None = None,
        goal_anchor: int | None = None,
    ) -> Guards:
        """The guards, with the command line's `--no-guard`, `--guard` and settings winning."""
        given = {k: v for k, v in self.model_dump().items() if v is not None}
        if isinstance(given.get("syntax_check"), bool):
            given["syntax_check"] = "report" if given["syntax_check"] else "off"
        chosen = Guards(**given)
        return chosen.switched(
            off=off,
            on=on,
            loop_threshold=loop_threshold,
            anti_stall_threshold=anti_stall_threshold,
            goal_anchor=goal_anchor,
        )


class ContextConfig(BaseModel):
    """The `[context]` table: the window and compaction (see `ContextSettings`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: int | None = Field(default=None, ge=256)
    compaction: bool | None = None
    threshold: float | None = Field(default=None, ge=0.1, le=1.0)
    keep_recent: int | None = Field(default=None, ge=1)
    compaction_model: str | None = None
    summary_chars: int | None = Field(default=None, ge=500)
    message_token_budget: int | None = Field(default=None, ge=64)

    def settings(self, *, window: int | None = None) -> ContextSettings:
        """The settings, with `window` (the command line's, an endpoint's) winning."""
        chosen = {k: v for k, v in self.model_dump().items() if v is not None}
        if window is not None:
            chosen["window"] = window
        return ContextSettings(**chosen)


class MemoryConfig(BaseModel):
    """The `[memory]` table: what runs remember across sessions (see `reins.memory.Memory`).
    Captures are off unless you turn them on (`capture = "project"`): each costs a model call
    at a turn's end. A project's file may only narrow `recall` and `capture`, add `redact`
    rules and lower `budget`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recall: Literal["all", "writable", "off"] = "all"
    capture: Literal["project", "user", "off"] = "off"
    model: str | None = None
    """The extractor (None: the run's model, a hosted one's cheapest sibling)."""
    embeddings: str | None = None
    """Recall by meaning too: an OpenAI-compatible embedding model (`openai:NAME`,
    `ollama:NAME`, `ENDPOINT:NAME`, `http(s)://HOST/v1`); None: by words alone."""
    budget: int = Field(default=DEFAULT_BUDGET, ge=0)
    redact: tuple[str, ...] = ()
    """Regexes (RE2) of what must never be kept, besides keys, tokens and passwords."""
    timeout: float = Field(default=5.0, gt=0)

    def settings(self) -> Memory | None:
        """The agent's `memory`; None when it neither reads nor writes."""
        if self.recall == "off" and self.capture == "off":
            return None
        return Memory(**self.model_dump())


class ProfileConfig(BaseModel):
    """A `[profiles.NAME]` table: what a run of that kind uses (`reins run --profile NAME`, or
    inferred from the goal); the command line's flags win over it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    system_prompt: str | None = None
    """In place of reins' base prompt."""
    instructions: str | None = None
    tools: tuple[str, ...] | None = None
    max_steps: int | None = Field(default=None, gt=0)
    thinking_budget: int | None = Field(default=None, gt=0)
    mode: str | None = None
    context: ContextConfig = ContextConfig()
    """Over the `[context]` table, key by key."""

    @field_validator("mode")
    @classmethod
    def _a_mode(cls, mode: str | None) -> str | None:
        from ..context import MODES
        from ..context._modes import resolve_mode

        if resolve_mode(mode)[1] is not None:  # as --mode: not explore, read-only, in its place
            raise ValueError(f"no mode {mode!r}; the modes: {', '.join(MODES)}")
        return mode

    def context_over(self, base: ContextConfig) -> ContextConfig:
        return base.model_copy(update=self.context.model_dump(exclude_none=True))


class StopHookConfig(BaseModel):
    """A `[[stop_hooks]]` entry: a command that may reject a final answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    timeout: float = Field(default=60.0, gt=0)

    @field_validator("command")
    @classmethod
    def _a_command(cls, command: str) -> str:
        if not command.strip():  # it would run nothing and accept every answer, unchecked
            raise ValueError("a stop hook is an empty command: give the command to run")
        return command


class HookConfig(BaseModel):
    """A `[[hooks.EVENT]]` entry: a command run at that hook point (`reins.policies.Hook`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    matcher: str = ""
    timeout: float = Field(default=60.0, gt=0)


class HooksConfig(BaseModel):
    """The `[hooks]` table: command hooks by hook point, each a list of tables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_start: tuple[HookConfig, ...] = ()
    prompt: tuple[HookConfig, ...] = ()
    before_tool: tuple[HookConfig, ...] = ()
    after_tool: tuple[HookConfig, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _our_names(cls, data: object) -> object:
        if isinstance(data, dict):
            ours = {theirs: mine for mine, theirs in HOOK_EVENTS.items()}
            for key in data:
                if key in ours:  # Claude Code's name for it
                    raise ValueError(
                        f"hooks.{key}: reins calls Claude Code's {key} {ours[key]}: write "
                        f"[[hooks.{ours[key]}]]"
                    )
        return data

    @model_validator(mode="after")
    def _hooks_that_work(self) -> HooksConfig:
        try:
            self.in_order()
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return self

    def in_order(self) -> list[Hook]:
        """The hooks, by hook point in the order they fire, each point's in the file's order."""
        return [
            Hook(event=event, command=h.command, matcher=h.matcher, timeout=h.timeout)
            for event in HOOK_POINTS
            for h in getattr(self, event)
        ]

    def then(self, other: HooksConfig, *, unless: HooksConfig | None = None) -> HooksConfig:
        """These hooks, then `other`'s at each point, less those here or in `unless`."""
        merged: dict[str, tuple[HookConfig, ...]] = {}
        for event in HOOK_POINTS:
            mine = getattr(self, event)
            skip = {*mine, *(getattr(unless, event) if unless is not None else ())}
            merged[event] = (
                *mine,
                *(h for h in dict.fromkeys(getattr(other, event)) if h not in skip),
            )
        return HooksConfig.model_validate(merged)


HOOK_POINTS: tuple[HookEvent, ...] = ("session_start", "prompt", "before_tool", "after_tool")


class Untrusted(BaseModel):
    """What a project file sets that acts for it, held aside until the user trusts the project:
    the commands that would run, unasked, whenever the agent says it is done, and the settings
    that decide where the model's requests (the prompts, with what the agent read) go and which
    key they carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    """The project file (or the project's folder, when only its skills are held)."""
    folder: Path
    """The project's folder: what the user trusts."""
    checks: tuple[str, ...] = ()
    """Run after the user's once trusted (the user's always stand)."""
    stop_hooks: tuple[StopHookConfig, ...] = ()
    hooks: HooksConfig = HooksConfig()
    """The project's command hooks (`[[hooks.before_tool]]`, ...): after the user's once
    trusted."""
    providers: dict[str, Endpoint] = {}
    """The project's `[providers.*]` tables: over the user's, key by key, once trusted."""
    model: str | None = None
    """A `model` that names none of the user's providers (see `needs_trust`)."""
    mcp_servers: dict[str, MCPServerConfig] = {}
    """The project's MCP servers (`[mcp_servers]`, `.mcp.json`): commands that start, or
    URLs the agent's tool calls go to; beside the user's once trusted."""
    skills: tuple[Path, ...] = ()
    """The project's skills (folders with a SKILL.md under `.reins/skills/` and
    `.agents/skills/`): instructions the model would follow, offered once trusted."""

    def items(self, *, checks: bool = True, model: bool = True) -> list[tuple[str, str]]:
        """Each command or setting with its kind (`check`, `stop hook`, `setting`), commands in
        the order they would run, settings as the file writes them. `checks=False` and
        `model=False` leave those out (a resume takes its checks and model from its log)."""
        settings = [
            f"providers.{name}.{key} = {json.dumps(value, ensure_ascii=False)}"
            for name, endpoint in self.providers.items()
            for key, value in endpoint.model_dump(exclude_unset=True).items()
        ]
        if model and self.model is not None:
            settings.append(f"model = {json.dumps(self.model, ensure_ascii=False)}")
        return [
            *(("check", c) for c in self.checks if checks),
            *(("stop hook", h.command) for h in self.stop_hooks),
            *((_hook_kind(h), h.command) for h in self.hooks.in_order()),
            *(("MCP server", f"{name}: {_launch(m)}") for name, m in self.mcp_servers.items()),
            *(("skill", str(folder)) for folder in self.skills),
            *(("setting", s) for s in settings),
        ]


def _hook_kind(hook: Hook) -> str:
    """`before_tool hook`, and the tools it runs for: `before_tool hook (write_file|edit)`."""
    return f"{hook.event} hook ({hook.matcher})" if hook.matcher else f"{hook.event} hook"


BUILT_IN_PROVIDERS = ("openai", "anthropic", "ollama")
CAPS = (
    "max_steps",
    "token_budget",
    "time_budget",
    "cost_budget",
    "stop_max_rejections",
    "reflect_max_retries",
)
"""The keys a project file may lower but not raise above the user's."""


def needs_trust(model: str, providers: Collection[str]) -> bool:
    """Whether a project's `model` would act for the project: one of the user's providers
    (`openai`, `anthropic`, `ollama`, an endpoint in `providers`) or an embedded model does
    not; a script, a GGUF file, a URL (which gets $OPENAI_API_KEY), or an endpoint only the
    project defines does."""
    from ..models._embedded import EMBEDDED

    kind, _, rest = model.partition(":")
    if not rest:
        return False  # `local` (`local:` too), or no model at all (an error when resolved)
    if kind == "local" and rest in EMBEDDED:
        return False  # an embedded model the user installed
    if kind in ("script", "local", "http", "https"):
        return True
    return kind not in (*BUILT_IN_PROVIDERS, *providers)


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """The model `reins run` uses when neither --model nor REINS_MODEL says."""
    providers: dict[str, Endpoint] = {}
    approval: ApprovalMode = "ask"
    """Who answers a permission ask in `reins run`, in `Agent(approval=...)`'s words: the
    person at the terminal (`ask`; with no terminal: denied), nobody (`allow`: approved, as
    `--yes`; `deny`: denied), or a later `reins resume` (`pause`: the run stops `waiting`).
    The old `never-ask` is read as `allow`, with a notice."""
    notices: tuple[str, ...] = ()
    """What the files said in an old spelling, for the command to show (made here, not read)."""
    permissions: PermissionRules = PermissionRules()
    """The user's rules."""
    project_permissions: PermissionRules = PermissionRules()
    """The project's rules: they can only make a decision stricter."""
    sandbox: SandboxConfig = SandboxConfig()
    server: ServerConfig = ServerConfig()
    guards: GuardsConfig = GuardsConfig()
    context: ContextConfig = ContextConfig()
    memory: MemoryConfig = MemoryConfig()
    profiles: dict[str, ProfileConfig] = {}
    instruction_files: tuple[str, ...] = ("AGENTS.md",)
    """The project instruction files read into the prompt, from the repository root down to
    the workspace (`AGENTS.override.md` first in each folder); e.g. ["AGENTS.md", "CLAUDE.md"]."""
    max_steps: int | None = Field(default=None, gt=0)
    """The caps of `reins run` when its flags do not say (`Agent`'s fields of those names)."""
    token_budget: int | None = Field(default=None, gt=0)
    time_budget: float | None = Field(default=None, gt=0)
    cost_budget: float | None = Field(default=None, gt=0)
    budget_notices: bool = True
    """Tell the model what is left of its budgets (`--no-budget-notices`: not)."""
    at_cap: Literal["stop", "summarize"] = "stop"
    checks: tuple[str, ...] = ()
    """Commands that must pass before a final answer ends a run (`--check` adds to them)."""
    stop_hooks: tuple[StopHookConfig, ...] = ()
    hooks: HooksConfig = HooksConfig()
    """Commands around tool calls, at a session's start and on a prompt (`[[hooks.*]]`)."""
    stop_max_rejections: int = Field(default=3, ge=0)
    """Final answers rejected (by checks and stop hooks) before the run ends missing_evidence."""
    reflect: bool = False
    """Reflect on each step whose tools ran (`--reflect`; the Reflective agent)."""
    checkpoints: bool = True
    """Snapshot the workspace before each step's first change, for `reins diff`, `undo` and
    `rewind` (`Agent.checkpoints`)."""
    planning: bool = False
    """Offer `plan` and `todo` (`--planning`)."""
    subagents: bool = False
    """Offer `spawn_agent` (`--subagents`): the model hands a subtask to a child run, a copy
    of itself or one of the `[profiles.*]` by name."""
    reflect_max_retries: int = Field(default=3, ge=1)
    """Reflections in a row judging a step failed that end the run (`stalled`)."""
    mcp_servers: dict[str, MCPServerConfig] = {}
    """The MCP servers whose tools runs are offered (`[mcp_servers.NAME]`, or `mcpServers`
    in `mcp.json` beside the config file; a project's `.mcp.json` and `[mcp_servers]` once
    the project is trusted)."""
    skill_folders: tuple[Path, ...] = ()
    """Where skills are found: the user's (`skills/` beside the config file), then each of
    a trusted project's skills."""
    models: dict[str, ModelEntry] = {}
    """Windows, output caps and prices by model name (`[models."NAME"]`, see
    `reins.agent._model_entries`): registered in the catalog when a model is resolved."""
    untrusted: Untrusted | None = None
    """What the project file sets that waits for the user's trust: not in `checks`,
    `stop_hooks`, `providers` and `model` (those are the user's) until `trusting_project`."""

    def endpoint(self, name: str) -> Endpoint:
        return self.providers.get(name) or Endpoint()

    def trusting_project(self) -> Config:
        """The config with what the project file holds in it: its checks and stop hooks after
        the user's, its providers over the user's key by key, its model in place of theirs."""
        held = self.untrusted
        if held is None:
            return self
        providers = dict(self.providers)
        for name, endpoint in held.providers.items():
            mine = providers.get(name, Endpoint())
            providers[name] = Endpoint.model_validate(
                {**mine.model_dump(exclude_unset=True), **endpoint.model_dump(exclude_unset=True)}
            )
        return self.model_copy(
            update={
                "untrusted": None,
                "checks": (*self.checks, *held.checks),
                "stop_hooks": (*self.stop_hooks, *held.stop_hooks),
                "hooks": self.hooks.then(held.hooks),
                "providers": providers,
                "model": held.model or self.model,
                "mcp_servers": {**self.mcp_servers, **held.mcp_servers},
                "skill_folders": (*self.skill_folders, *held.skills),
            }
        )

    def distrusting_project(self) -> Config:
        """The config without what the project file holds: the user's alone."""
        return self.model_copy(update={"untrusted": None})


def user_config_path() -> Path:
    if explicit := os.environ.get("REINS_CONFIG"):
        return Path(explicit).expanduser()
    return _default_user_config()


def _default_user_config() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "reins" / "config.toml"


def project_config_path(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).exists():  # a folder by that name: an error that says so
            return folder / PROJECT_FILE
    return None


def load_config(start: Path | None = None) -> Config:
    """The user's file overlaid with the project's; no file: an empty config. What the project
    file sets that acts for it is held in `untrusted` unless the user's file trusts the project
    (`trusted_projects`)."""
    merged: dict[str, object] = {}
    rules: dict[str, PermissionRules] = {}
    user = user_config_path()
    if os.environ.get("REINS_CONFIG") and not user.exists():  # a file named is a file wanted
        raise UsageError(
            f"REINS_CONFIG names the config file {user}, which does not exist: fix the path, "
            f"or unset REINS_CONFIG to read {_default_user_config()} (if there is one)"
        )
    project = project_config_path(start)
    sandbox = SandboxConfig()
    guards: dict[str, object] = {}
    context: dict[str, object] = {}
    memory: dict[str, object] = {}
    models: dict[str, object] = {}
    trusted: list[Path] = []
    held: dict[str, Any] | None = None
    notices: tuple[str, ...] = ()
    servers = _user_mcp_json(user)
    if project is not None and user.exists() and project.exists() and project.samefile(user):
        project = None  # $REINS_CONFIG names the project file: it is the user's own
    for path, is_project in ((user, False), (project, True)):
        if path is None or not path.exists():
            continue
        data = _read(path)
        notices += _old_spellings(path, data)
        for key in ("project_permissions", "untrusted", "notices"):  # made here, not read
            if key in data:
                raise UsageError(f"config {path}: {key}: Extra inputs are not permitted")
        if is_project:
            _refuse_keys(path, data)
            if prices := price_keys(data.get("models")):
                raise UsageError(
                    f"config {path}: {prices[0]}: a project's file may not set a price (it "
                    f"bounds your cost budget); set it in {user_config_path()}"
                )
            _refuse_profile_models(path, data.get("profiles"))
            _refuse_looser_approval(path, data)
            _refuse_trust(path, data)
            _lower_caps(data, merged)
            held = _held(data, merged.get("providers"), path)
        else:
            trusted = _trusted_projects(path, data.pop("trusted_projects", []))
            if (table := data.pop("mcp_servers", None)) is not None:
                servers.update(servers_from_table(table, str(path)))
        if (table := data.pop("permissions", None)) is not None:
            name = "project_permissions" if is_project else "permissions"
            rules[name] = _rules(path, table)
        layer_guards = data.pop("guards", {})
        if isinstance(layer_guards, dict):
            guards.update(layer_guards)  # key by key: the project's win
        else:
            merged["guards"] = layer_guards  # not a table: the validation below says so
        layer_context = data.pop("context", {})
        if isinstance(layer_context, dict):
            if is_project and "compaction_model" in layer_context:
                raise UsageError(
                    f"config {path}: context.compaction_model: a project's file may not choose "
                    "the model your history is sent to; set it in your own config"
                )
            context.update(layer_context)  # key by key, as the guards
        else:
            merged["context"] = layer_context
        layer_memory = data.pop("memory", {})
        if isinstance(layer_memory, dict):
            if is_project:
                layer_memory = _narrowed_memory(path, layer_memory, memory)
            memory.update(layer_memory)
        else:
            merged["memory"] = layer_memory
        layer_models = data.pop("models", {})
        if isinstance(layer_models, dict):
            for name, entry in layer_models.items():  # key by key: the project's win
                mine = models.get(name)
                both = isinstance(mine, dict) and isinstance(entry, dict)
                models[name] = {**mine, **entry} if both else entry  # type: ignore[dict-item]
        else:
            merged["models"] = layer_models
        layer_sandbox = _sandbox(path, data.pop("sandbox", {}))
        sandbox = _tightened(sandbox, layer_sandbox, path) if is_project else layer_sandbox
        merged.update(data)
    trusted += _recorded_trust(user)
    project_json = project_mcp_json(start, project)
    if project_json is not None:
        held = held if held is not None else {}
        listed = servers_from_json(project_json, project=True)
        held["mcp_servers"] = {**listed, **held.get("mcp_servers", {})}  # reins.toml wins
        project = project or project_json
    folder = project.parent if project is not None else (start or Path.cwd()).resolve()
    skills = project_skills(folder)
    if skills and folder != user.parent:
        held = held if held is not None else {}
        held["skills"] = tuple(skills)
        project = project or folder
    try:
        config = Config.model_validate(
            {
                "guards": guards,
                "context": context,
                "memory": memory,
                "models": models,
                **merged,
                **rules,
                "sandbox": sandbox,
                "mcp_servers": servers,
                "skill_folders": (user.parent / SKILLS,),
                "notices": notices,
            }
        )
    except ValidationError as exc:
        files = " and ".join(str(p) for p in (user, project) if p is not None and p.exists())
        raise UsageError(f"config {files}: {_first_error(exc)}") from None
    if project is None or held is None:
        return config
    untrusted = _untrusted(project, folder, held, config)
    if not untrusted.items():
        return config  # nothing that acts for the project (or only what the user has already)
    config = config.model_copy(update={"untrusted": untrusted})
    return config.trusting_project() if untrusted.folder in trusted else config


def _narrowed_memory(
    path: Path, theirs: dict[str, object], mine: dict[str, object]
) -> dict[str, object]:
    """A project's `[memory]`, as far as it narrows the user's: it may read and write less,
    never more, and may not choose the models the conversation is sent to."""
    for key in ("model", "embeddings"):
        if key in theirs:
            raise UsageError(
                f"config {path}: memory.{key}: a project's file may not choose the model your "
                "conversation is sent to; set it in your own config"
            )
    layer = dict(theirs)
    defaults = MemoryConfig()
    options: tuple[str, ...]
    for key, options in (("recall", RECALLS), ("capture", CAPTURES)):
        asked, have = theirs.get(key), mine.get(key, getattr(defaults, key))
        if isinstance(asked, str) and isinstance(have, str) and {asked, have} <= set(options):
            layer[key] = narrower(options, have, asked)  # else the validation says what is wrong
    if isinstance(redact := theirs.get("redact"), list | tuple):
        layer["redact"] = (*mine.get("redact", ()), *redact)  # type: ignore[misc]
    budget, cap = theirs.get("budget"), mine.get("budget", DEFAULT_BUDGET)
    if _number(budget) and _number(cap) and budget > cap:  # type: ignore[operator]
        layer["budget"] = cap
    return layer


def _lower_caps(data: dict[str, object], mine: dict[str, object]) -> None:
    """The project's caps, each no higher than the user's (when the user set it)."""
    for key in CAPS:
        theirs, cap = data.get(key), mine.get(key)
        if _number(theirs) and _number(cap) and theirs > cap:  # type: ignore[operator]
            data[key] = cap


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _held(data: dict[str, object], providers: object, path: Path) -> dict[str, Any]:
    """What waits for the user's trust, taken out of the project file's `data`."""
    held: dict[str, Any] = {
        key: data.pop(key) for key in ("checks", "stop_hooks", "hooks", "providers") if key in data
    }
    if (table := data.pop("mcp_servers", None)) is not None:
        held["mcp_servers"] = servers_from_table(table, str(path), project=True)
    model = data.get("model")
    mine = providers if isinstance(providers, dict) else {}
    if isinstance(model, str) and needs_trust(model, mine):
        held["model"] = data.pop("model")
    return held


def _untrusted(path: Path, folder: Path, held: dict[str, Any], config: Config) -> Untrusted:
    """The project's held settings, validated, less what changes nothing: a check or a stop
    hook the user runs anyway, a provider setting equal to the user's, an empty table."""
    try:
        untrusted = Untrusted.model_validate({**held, "path": path, "folder": folder})
    except ValidationError as exc:
        raise UsageError(f"config {path}: {_first_error(exc)}") from None
    checks = [c for c in dict.fromkeys(untrusted.checks) if c not in config.checks]
    commands = {h.command for h in config.stop_hooks}
    hooks = []
    for hook in untrusted.stop_hooks:
        if hook.command not in commands:
            commands.add(hook.command)
            hooks.append(hook)
    providers = {}
    for name, endpoint in untrusted.providers.items():
        mine = config.providers.get(name, Endpoint() if name in BUILT_IN_PROVIDERS else None)
        changes = {
            key: value
            for key, value in endpoint.model_dump(exclude_unset=True).items()
            if mine is None or getattr(mine, key) != value
        }
        if changes:
            providers[name] = Endpoint.model_validate(changes)
    servers = {
        name: server
        for name, server in untrusted.mcp_servers.items()
        if config.mcp_servers.get(name) != server
    }
    return untrusted.model_copy(
        update={
            "checks": tuple(checks),
            "stop_hooks": tuple(hooks),
            "hooks": HooksConfig().then(untrusted.hooks, unless=config.hooks),
            "providers": providers,
            "mcp_servers": servers,
        }
    )


MCP_JSON = "mcp.json"
"""Beside the user's config file: MCP servers in Claude Desktop's shape."""
PROJECT_MCP_JSON = ".mcp.json"
"""In the project's folder: its MCP servers, as Claude Code reads them."""


SKILLS = "skills"
"""Beside the user's config file: the user's skills, offered in every project."""
TRUSTED_FILE = "trusted_projects.json"
"""Beside the user's config file: the folders the user trusted at a prompt ("always")."""


def project_skills(folder: Path) -> list[Path]:
    """The project's skill folders (each holds a SKILL.md), resolved."""
    from ..skills._skill import SKILL_FILE, project_folders

    return [
        skill.resolve()
        for root in project_folders(folder)
        if root.is_dir()
        for skill in sorted(root.iterdir())
        if (skill / SKILL_FILE).is_file()
    ]


def _recorded_trust(user: Path) -> list[Path]:
    path = user.parent / TRUSTED_FILE
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except FileNotFoundError:
        return []
    except OSError as exc:  # a FIFO, a folder: said so, never waited on
        raise UsageError(f"cannot read {path}: {exc.strerror}; fix or delete it") from None
    except ValueError as exc:
        raise UsageError(f"cannot read {path}: {exc}; fix or delete it") from None
    folders = data.get("trusted_projects") if isinstance(data, dict) else None
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise UsageError(f'config {path}: expected {{"trusted_projects": ["/a/folder", ...]}}')
    return [Path(f) for f in folders]


def record_trust(folder: Path) -> Path:
    """Remember that the user trusts the project in `folder` (a prompt's "always"): in
    `trusted_projects.json` beside their config file, which is left as they wrote it."""
    path = user_config_path().parent / TRUSTED_FILE
    folders = [str(f) for f in _recorded_trust(user_config_path())]
    if str(folder) not in folders:
        folders.append(str(folder))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"trusted_projects": folders}, indent=2) + "\n")
    temporary.replace(path)
    return path


def _user_mcp_json(user: Path) -> dict[str, MCPServerConfig]:
    path = user.parent / MCP_JSON
    return servers_from_json(path) if path.exists() else {}  # not a file: an error says so


def project_mcp_json(start: Path | None, project: Path | None) -> Path | None:
    """The project's `.mcp.json`: beside its `reins.toml`, else in the working directory."""
    folder = project.parent if project is not None else (start or Path.cwd()).resolve()
    path = folder / PROJECT_MCP_JSON
    if not path.is_file() or path.parent == user_config_path().parent:
        return None
    return path


def _launch(server: MCPServerConfig) -> str:
    """How a server is reached, as the person trusting it should see it."""
    if server.command is None:
        return f"{server.url}"
    return shlex.join([server.command, *server.args])


def _read(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(read_regular(path).decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config {path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"config {path}: not UTF-8 text (byte {exc.start}); TOML files are UTF-8"
        ) from None
    except NotAFile as exc:
        raise UsageError(
            f"config {path}: {exc.strerror}; remove it, or put a TOML file in its place"
        ) from None
    except OSError as exc:
        raise UsageError(f"config {path}: cannot read it: {exc.strerror}") from None
    except RecursionError:
        raise UsageError(f"config {path}: nested too deep to read") from None


def _rules(path: Path, table: object) -> PermissionRules:
    if not isinstance(table, dict):
        raise UsageError(f"config {path}: permissions must be a table ([permissions])")
    try:
        return PermissionRules.from_table(table)
    except ValidationError as exc:
        where = _first_error(exc, "permissions").replace("permissions.tools.", "permissions.")
        raise UsageError(f'config {path}: {where} (a rule is "allow", "ask" or "deny")') from None


def _refuse_profile_models(path: Path, profiles: object) -> None:
    """A project's profiles may not choose where your work is sent."""
    if not isinstance(profiles, dict):
        return
    for name, table in profiles.items():
        if not isinstance(table, dict):
            continue
        context = table.get("context")
        if "model" in table or (isinstance(context, dict) and "compaction_model" in context):
            key = "model" if "model" in table else "context.compaction_model"
            raise UsageError(
                f"config {path}: profiles.{name}.{key}: a project's file may not choose a "
                "profile's model; set it in your own config"
            )


_RENAMED = {"approval": {"never-ask": "allow"}}
"""Old spellings of a key's values, read as the new one (with a notice) for one release."""


def _old_spellings(path: Path, data: dict[str, object]) -> tuple[str, ...]:
    """`data` in today's words, and a notice for each old one it held."""
    notices = []
    for key, renamed in _RENAMED.items():
        value = data.get(key)
        if isinstance(value, str) and value in renamed:
            data[key] = renamed[value]
            notices.append(
                f'config {path}: {key} = "{value}" is now spelled "{renamed[value]}"; '
                "the old word works until reins 0.3"
            )
    return tuple(notices)


def _refuse_looser_approval(path: Path, data: dict[str, object]) -> None:
    if data.get("approval") == "allow":
        raise UsageError(
            f'config {path}: approval = "allow": a project file may only make approvals '
            f"stricter; set it in {user_config_path()} or pass --yes"
        )


def _refuse_trust(path: Path, data: dict[str, object]) -> None:
    if "trusted_projects" in data:
        raise UsageError(
            f"config {path}: trusted_projects: a project file cannot trust itself (or any "
            f"project); trust a project in {user_config_path()}, or pass --trust-project"
        )


def _trusted_projects(path: Path, value: object) -> list[Path]:
    """The folders named by the user's `trusted_projects`, resolved."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(
            f'config {path}: trusted_projects must be a list of folders, e.g. ["~/src/app"]'
        )
    folders = []
    for name in value:
        folder = Path(name).expanduser()
        if not folder.is_absolute():
            raise UsageError(
                f"config {path}: trusted_projects: {name!r} is not an absolute path; name the "
                'folder that holds reins.toml from the root or from ~, e.g. "~/src/app"'
            )
        folders.append(folder.resolve())
    return folders


def _refuse_keys(path: Path, data: dict[str, object]) -> None:
    if "server" in data:
        raise UsageError(
            f"config {path}: server: a project's file may not say where `reins serve` listens; "
            f"set [server] in {user_config_path()}"
        )
    providers = data.get("providers")
    for name, endpoint in providers.items() if isinstance(providers, dict) else []:
        if isinstance(endpoint, dict) and "api_key" in endpoint:
            raise UsageError(
                f"config {path}: providers.{name}.api_key: a project file is shared with the "
                "code, so it must not hold a key; set api_key_env to the variable that holds "
                f"it, or put the key in {user_config_path()}"
            )


def _sandbox(path: Path, table: object) -> SandboxConfig:
    try:
        return SandboxConfig.model_validate(table)
    except ValidationError as exc:
        raise UsageError(f"config {path}: {_first_error(exc, 'sandbox')}") from None


def _first_error(exc: ValidationError, *table: str) -> str:
    """`where: what` of a validation's first error, `where` dotted from the file's top; a
    value of the wrong shape in TOML's words (pydantic's name a dictionary, a tuple, a class)."""
    error = exc.errors()[0]
    message = error["msg"]
    if error["type"] in ("model_type", "dict_type"):
        message = f"must be a table, not {_toml_type(error['input'])}"
    elif error["type"] in ("tuple_type", "list_type"):
        message = f"must be an array, not {_toml_type(error['input'])}"
    return f"{'.'.join(str(part) for part in (*table, *error['loc']))}: {message}"


def _toml_type(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    names |= {list: "an array", dict: "a table"}
    return names.get(type(value), "a date or time")  # what else TOML reads


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
            f"config {path}: [sandbox] {'; '.join(loosened)}: a project file may only tighten the "
            f"sandbox; loosen it in your own config ({user_config_path()}) or on the command "
            "line (--sandbox, --network)"
        )
    return SandboxConfig(
        mode=project.mode or user.mode,
        network=user.network if project.network is None else project.network,
        env=project.env if "env" in project.model_fields_set else user.env,
        max_timeout=project.max_timeout or user.max_timeout,
    )
