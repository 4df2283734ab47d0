"""What an `Agent` is made of: its fields, each documented, and the checks that refuse a setting
that cannot work when the agent is made, not at its first run."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Self, get_origin

from typing_extensions import TypeVar

from ..context import ContextSettings
from ..context._instructions import INSTRUCTION_FILES
from ..context._modes import MODES, resolve_mode
from ..context._sections import SectionSource
from ..core._catalog import priced, served_at
from ..core._errors import UsageError
from ..core._loop import hooks_of
from ..core._model import Model, ModelSettings
from ..core._questions import ASK_USER, Asker, AskMode
from ..permissions import (
    APPROVAL_MODES,
    ApprovalHandler,
    ApprovalMode,
    Permissions,
    has_terminal,
)
from ..policies import Guards, Hook, Policy
from ..sandbox import SandboxPolicy
from ..skills import Skill
from ..store import EventLog, MemoryLog
from ..tools import ASK_USER_TOOL, BUILTIN_TOOLS, Tool, final_answer
from ._budgets import Budgets
from ._groups import Ask, Checks, Subagents, as_ask, as_checks, as_subagents

if TYPE_CHECKING:
    from ..mcp import MCPServer, MCPServerConfig
    from ..memory import Memory
    from ..subagents import ChildAgent

RESERVED = {final_answer.name: final_answer, ASK_USER: ASK_USER_TOOL}
"""The tools the loop itself acts on: a tool of the user's may not take their names."""


DepsT = TypeVar("DepsT", default=Any)
"""What the runs of an agent hand its tools as `ctx.deps` (`Agent(deps_type=...)`)."""
OutputT = TypeVar("OutputT", default=str)
"""What `result.output` is (`Agent(output_type=...)`; without one, the answer's text)."""


@dataclass(kw_only=True)
class AgentFields(Generic[DepsT, OutputT]):
    """The fields of an `Agent`: a model, tools and policies, the caps and checks of its runs,
    and where they are recorded."""

    model: Model | str
    """A reins model, or a string naming one (`"openai:gpt-4o-mini"`, `"anthropic:..."`,
    `"local"`: `reins.resolve_model`'s forms), resolved when the agent is made and recorded
    as that string."""
    tools: Sequence[Tool] = BUILTIN_TOOLS
    """`final_answer` is always added."""
    instructions: str = ""
    """Yours, added to the system prompt after the base prompt."""
    system_prompt: str | None = None
    """Replaces reins' base prompt (the other sections stay: your instructions, AGENTS.md)."""
    prompt_sections: Sequence[SectionSource] = ()
    """More parts of the system prompt, after reins' own (`reins.context.PromptSection`)."""
    instruction_files: Sequence[str] = INSTRUCTION_FILES
    """The project instruction files read, from the repository root down to the workspace
    (`AGENTS.override.md` first in each folder); () reads none."""
    mode: str | None = None
    """One of `explore` and `plan` (read-only: tools that change files or run commands are
    refused, but writes under docs/explore/ or docs/plan/), `write-test` (an answer after a
    change waits for a test run), `write-no-test`; told to the model. Another name is a
    `UsageError` when the agent is made (a typo must not change what a run may do). None: no
    mode."""
    workspace: str | Path = "."
    """The project's folder: the tools' root. Not `/`, the home folder or one holding it
    (a `WorkspaceError` at the first run)."""
    budgets: Budgets = field(default_factory=Budgets)
    """The caps of its runs (steps, tokens, seconds, dollars) and what happens at one:
    `Budgets(max_steps=20, cost_budget=0.5, at_cap="summarize")`."""
    max_parallel_tools: int = 4
    policies: Sequence[Policy] = ()
    """Consulted in order after the built-in step cap."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    log: EventLog = field(default_factory=MemoryLog)
    permissions: Permissions = field(default_factory=Permissions)
    """Which tool calls are allowed, asked about or denied (default: tools that only read and
    tools that write inside the workspace are allowed; `run_command` and tools marked
    `needs_approval` ask; a write to a place that runs code later, such as `.git`, asks each
    time, whatever the rules)."""
    approval: ApprovalHandler | ApprovalMode = "deny"
    """Who answers an ask, in the words the config and the CLI use too: `"ask"` a person —
    a function of yours (sync or async) given an `ApprovalRequest`, returning True/False or an
    `Approval`, or, given the word itself, a prompt on this process's terminal (none: a
    `UsageError` when the agent is made); `"pause"` (the run ends `waiting`, to be resumed with
    the answers); `"allow"` (approve everything but writes to places that run code later,
    which only a person's yes allows; `--yes`); `"deny"` (nobody to ask: the default)."""
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """What the commands tools start may do; the log's folder and `.git` stay read-only."""
    guards: Guards = field(default_factory=Guards)
    """The guards against a model's usual failures (an unwritten file, repeated calls, loops,
    leaked markup, a lost goal, repeated text), each on or off and tuned; `Guards(loop=False)`,
    say. A run's log records them: a resume keeps the run's own (`resume(guards=...)` changes
    them)."""
    checkpoints: bool = True
    """Before each step's first change to the workspace (a file tool's write, a command), its
    files are snapshotted in a shadow git repository in the log's folder (`checkpoint`
    events), so `agent.diff`, `agent.undo` and `agent.rewind` (`reins diff`, `undo`, `rewind`)
    can show and put back what a run changed. Only with a log on disk (`SQLiteLog`) and git
    installed (without it, a run says so once and goes on)."""
    memory: Memory | None = None
    """Memory across sessions (`reins.memory.Memory`): facts read from each turn's messages
    when it ends (a model call, and one more when kept facts are alike) and kept in the log's
    folder (the user's own in the user's data folder), recalled at a new session's start
    ("What you remember") and by the `memory_search` tool. None: no memory (the default)."""
    checks: Checks | Sequence[str] = ()
    """What a final answer must pass before it ends the run: `Checks(commands=["pytest -q"],
    stop_hooks=[...], max_rejections=3)`; a list is the commands alone."""
    hooks: Sequence[Hook] = ()
    """Commands run before and after tool calls, at the session's start and when a prompt
    arrives (`Hook(event="before_tool", matcher="run_command", command="./guard.sh")`), in the
    shape of Claude Code's hooks: the event as JSON on stdin; exit 2 blocks a call or a prompt
    with a reason; a JSON reply may change a call's arguments or add context for the model."""
    reflect: bool = False
    """After each step whose tools ran, a model call judges the step (`reflected` events):
    a failure tells the model the revised approach, a new plan is told, `complete` ends the
    run (its reasoning the answer, if the final-answer policies agree). A resumed run keeps
    what it was started with."""
    reflect_max_retries: int = 3
    """Reflections in a row judging a step failed that end the run (`stalled`)."""
    context: ContextSettings = field(default_factory=ContextSettings)
    """The model's window, and how the history is compacted to stay inside it. A run's log
    records them: a resume keeps the run's own."""
    skills: Sequence[Skill | str | Path] = ()
    """Skills the model may load: `Skill`s, skill folders (each holds a SKILL.md), or
    folders of them (`reins.skills.PROJECT_FOLDERS`, the user's `~/.config/reins/skills`).
    Their names and descriptions go in the system prompt, and `load_skill` returns one's
    instructions and bundled files (readable by the file tools, wherever they are). One that
    cannot be read is a notice at the run's start."""
    planning: bool = False
    """Offer `plan` (an analysis, then numbered steps with who does each: they become the
    todo list; a complex task's plan is put to the user first, through ask_user) and `todo`
    (the run's todo list, in its log, read by the anti-stall guard)."""
    planner: Model | None = None
    """The model of the planner's two calls (None: the agent's); never extended thinking."""
    output_type: type[OutputT] | None = None
    """The type of the final answer — a pydantic model, a dataclass, a TypedDict or a scalar
    type: `final_answer` takes a value of it (its schema the tool's), an answer that is not one
    goes back to the model to repair, and `result.output` is the validated value."""
    deps_type: type[DepsT] | None = None
    """The type of the `deps` each run is given (`agent.run(goal, deps=...)`) and its tools
    read as `ctx.deps` (`ToolContext[YourDeps]`); set, a run without them (or with another
    type) is refused."""
    ask: Ask | Asker | AskMode | None = None
    """Who answers the model's `ask_user` (one question a run, about a material choice): a
    function (sync or async) given a `QuestionRequest`, returning the answer or None
    (dismissed); `"pause"` (the run ends `waiting`, `result.questions` has it, and
    `resume(run_id, answers={call_id: text})` answers); or `Ask(answer=..., timeout=600)`
    (seconds before the model goes on with its default); None (headless): no `ask_user`."""
    subagents: Subagents | bool | Mapping[str, ChildAgent] = False
    """Offer `spawn_agent`: the model hands a self-contained subtask to a child run — a copy
    of this agent (without spawn_agent), or one of these named agents (profiles) — and gets
    back its answer and whether it completed (`reins.subagents`, `Agent.as_tool`). True (a
    copy), the named agents, or `Subagents(agents=..., max_steps=10, timeout=300)`."""
    defer_tools_above: int | None = 20
    """Past this many tools (MCP servers bring many), the model is offered the built-in tools,
    the ones it loaded, and `tool_search` and `tool_load` in place of every other schema;
    None: every tool, always. A run's log records it: a resume keeps the run's own, and the
    tools it loaded."""
    mcp_servers: Sequence[MCPServer | MCPServerConfig] = ()
    """MCP servers whose tools (`SERVER__TOOL`) are offered. Inside `async with agent:` they
    are started once and kept for every run; else a run starts those not running and stops
    them when it ends. One that fails is a notice, and the run goes on without it. A tool
    the server does not mark read-only asks before each call, as `run_command` does (a
    permission rule such as `"time__*" = "allow"` says otherwise)."""
    instrument: Any = None
    """OpenTelemetry traces of each run (GenAI conventions; `pip install 'reins[otel]'`):
    True (through the global tracer provider), a `TracerProvider`, False (off), or None: on
    when OTEL_EXPORTER_OTLP_ENDPOINT is set (reins then exports over OTLP/HTTP itself if no
    provider is set up), and for a subagent's run (`as_tool`, `spawn_agent`) when the run that
    started it is traced. Off, it costs nothing."""

    # For the record only (`run_started` keeps them), not given to the constructor: what made
    # the agent sets them (`_record`), and its copies (`_copy`) keep them.
    model_id: str | None = field(default=None, init=False)
    """The model string recorded in the log, for resuming from the command line: the string
    `model` was given as (or the name `reins run` resolved)."""
    profile: str | None = field(default=None, init=False)
    """The name of the config profile this agent was made from (`reins run --profile`);
    reins does not read profiles itself."""
    profile_inferred: bool = field(default=False, init=False)
    """`profile` was inferred from the goal (`reins.context.infer_profile`), not chosen."""

    def _record(
        self,
        *,
        profile: str | None = None,
        profile_inferred: bool = False,
        model_id: str | None = None,
    ) -> Self:
        """This agent, recording the profile it was made from and its model's string (the
        CLI's, which resolved them itself)."""
        self.profile, self.profile_inferred = profile, profile_inferred
        self.model_id = model_id or self.model_id
        return self

    def _copy(self, **changes: Any) -> Self:
        """A copy of this agent with `changes`, recorded as it was (a new `model` is recorded
        as its own string, unless `model_id` is among the changes)."""
        recorded = {name: changes.pop(name) for name in _RECORDED if name in changes}
        copy = replace(self, **changes)
        kept = {name: getattr(self, name) for name in _RECORDED}
        if "model" in changes:
            kept.pop("model_id")
        for name, value in (kept | recorded).items():
            setattr(copy, name, value)
        return copy

    # The caps read (and set) where they were before `budgets` held them.
    @property
    def max_steps(self) -> int:
        """`budgets.max_steps`."""
        return self.budgets.max_steps

    @max_steps.setter
    def max_steps(self, value: int) -> None:
        self.budgets = replace(self.budgets, max_steps=value)

    @property
    def token_budget(self) -> int | None:
        """`budgets.token_budget`."""
        return self.budgets.token_budget

    @token_budget.setter
    def token_budget(self, value: int | None) -> None:
        self.budgets = replace(self.budgets, token_budget=value)

    @property
    def time_budget(self) -> float | None:
        """`budgets.time_budget`."""
        return self.budgets.time_budget

    @time_budget.setter
    def time_budget(self, value: float | None) -> None:
        self.budgets = replace(self.budgets, time_budget=value)

    @property
    def cost_budget(self) -> float | None:
        """`budgets.cost_budget`."""
        return self.budgets.cost_budget

    @cost_budget.setter
    def cost_budget(self, value: float | None) -> None:
        self.budgets = replace(self.budgets, cost_budget=value)

    @property
    def at_cap(self) -> Literal["stop", "summarize"]:
        """`budgets.at_cap`."""
        return self.budgets.at_cap

    @at_cap.setter
    def at_cap(self, value: Literal["stop", "summarize"]) -> None:
        self.budgets = replace(self.budgets, at_cap=value)

    # The groups, whole: a setting may be changed to its short form after the agent is made.
    @property
    def _checks(self) -> Checks:
        return as_checks(self.checks)

    @property
    def _ask(self) -> Ask | None:
        return as_ask(self.ask)

    @property
    def _subagents(self) -> Subagents | None:
        return as_subagents(self.subagents)

    @property
    def _model(self) -> Model:
        """`model`, resolved (a string is, when the agent is made)."""
        assert not isinstance(self.model, str)
        return self.model

    def __post_init__(self) -> None:
        """A setting that cannot work is said here, not at the first run."""
        model: object = self.model
        if isinstance(model, str):
            from ._resolve import resolve_model  # reads the config: only for a string

            self.model_id = self.model_id or model  # recorded: a resume resolves it again
            self.model = model = resolve_model(model)
        if not callable(getattr(model, "stream", None)):
            raise UsageError(f"model is a {type(model).__name__}, not a reins model")
        _check_kinds(self)
        for index, tool in enumerate(self.tools):
            if not isinstance(tool, Tool):
                name = getattr(tool, "__name__", type(tool).__name__)
                raise UsageError(f"tools[{index}] ({name}) is not a tool: decorate it with @tool")
            if tool.name in RESERVED and tool is not RESERVED[tool.name]:
                raise UsageError(
                    f"a tool of yours is named {tool.name}, which reins' own tool is: rename it "
                    "(for an answer of a type of yours, give output_type)"
                )
        _one_of("approval", self.approval, APPROVAL_MODES)
        if self.approval == "ask" and not has_terminal():
            raise UsageError(
                'approval="ask": nobody can be asked, as stdin is not a terminal; pass a '
                'function that answers (approval=my_approver), or choose "allow", "deny" or '
                '"pause"'
            )
        # The groups given as their main value alone are kept whole (and checked) from here.
        self.checks = as_checks(self.checks)
        self.ask = as_ask(self.ask)
        self.subagents = as_subagents(self.subagents) or False
        if self.mode is not None and resolve_mode(self.mode)[1] is not None:
            raise UsageError(f"mode={self.mode!r}: no such mode; the modes: {', '.join(MODES)}")
        for name in _COUNTS:
            if getattr(self, name) < 1:
                raise UsageError(f"{name}={getattr(self, name)!r}: it must be 1 or more")
        check_cost_budget(self.model, self.budgets.cost_budget)
        for index, given in enumerate(self.hooks):
            if not isinstance(given, Hook):
                raise UsageError(
                    f"hooks[{index}] is a {type(given).__name__}, not a Hook: give "
                    "Hook(event=..., command=...)"
                )
        for index, policy in enumerate(self.policies):
            if not isinstance(policy, Policy):
                raise UsageError(f"policies[{index}] is a {type(policy).__name__}, not a Policy")
            for hook in hooks_of(type(policy)):
                if not inspect.iscoroutinefunction(getattr(policy, hook)):
                    raise UsageError(
                        f"policy {policy.name}: its {hook} is not async; the loop awaits it: "
                        f"write it `async def {hook}(...)`"
                    )


def _one_of(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """A setting that takes a function or one of a few names."""
    if not callable(value) and value not in allowed:
        names = ", ".join(repr(a) for a in allowed)
        raise UsageError(f"{name}={value!r}: give a function or one of {names}")


_RECORDED = ("model_id", "profile", "profile_inferred")

_LISTS = ("tools", "policies", "hooks", "skills", "mcp_servers")
_COUNTS = ("max_parallel_tools", "reflect_max_retries")
_KINDS: tuple[tuple[str, type], ...] = (
    ("settings", ModelSettings),
    ("sandbox", SandboxPolicy),
    ("guards", Guards),
    ("permissions", Permissions),
    ("context", ContextSettings),
    ("budgets", Budgets),
)


def _check_kinds(agent: AgentFields[Any, Any]) -> None:
    """An argument of the wrong kind is said when the agent is made: a string where a list
    goes would be read letter by letter (checks="pytest": six checks), a settings dict would
    fail at the first run, deep inside it."""
    for name in _LISTS:
        value = getattr(agent, name)
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise UsageError(f"{name}={value!r}: give a list, as in {name}=[...]")
    for name in _COUNTS:
        value = getattr(agent, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{name}={value!r}: give a whole number")
    for name, kind in _KINDS:
        value = getattr(agent, name)
        if not isinstance(value, kind):
            raise UsageError(f"{name} is a {type(value).__name__}: give a {kind.__name__}(...)")
    if not callable(getattr(agent.log, "append", None)):
        raise UsageError(
            f"log is a {type(agent.log).__name__}: give an event log, as SQLiteLog(path)"
        )
    wanted = agent.deps_type
    if wanted is not None and not isinstance(get_origin(wanted) or wanted, type):
        raise UsageError(f"deps_type={wanted!r}: give a type, as deps_type=MyDeps")


def check_cost_budget(model: object, budget: float | None) -> None:
    """A cost budget can be kept only on a model whose price is known: else one error now,
    not a run that spends while its account says nothing."""
    if budget is None or getattr(model, "offline", False):  # a test double costs nothing
        return
    name = str(getattr(model, "name", ""))
    at = served_at(model)
    if priced(name, at=at):
        return
    where = f" (served at {at})" if at else ""
    raise UsageError(
        f"cost budget ${budget:g}: no price is known for {name}{where}, so the budget cannot "
        f'be kept; give its prices in your config ([models."{name}"] input_price and '
        "output_price, US dollars per million tokens; in Python reins.register_model), or run "
        "without a cost budget"
    )
