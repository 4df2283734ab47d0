"""`Agent`: the Python API. Starts, continues and resumes runs recorded in an event log."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_origin

from ..context import ContextBuilder, ContextSettings
from ..context._instructions import INSTRUCTION_FILES, FolderHints
from ..context._modes import Mode, ModeSection, resolve_mode
from ..context._sections import (
    BaseSection,
    ProjectInstructions,
    PromptContext,
    PromptSection,
    TextSection,
    ToolNotes,
    build_prompt,
)
from ..core._cancel import Cancel
from ..core._errors import UsageError
from ..core._events import (
    ContextCompacted,
    Event,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    RunConfig,
    RunResumed,
    RunStarted,
)
from ..core._loop import RunLoop, hooks_of
from ..core._messages import Message, SystemMessage, UserMessage
from ..core._model import Model, ModelSettings
from ..core._questions import ASK_USER, Asker, AskMode
from ..core._state import RunState
from ..core._stop import StopReason
from ..core._unicode import escape_text
from ..mcp import server_stop_hook, start_all, stop_all
from ..models._catalog import UNKNOWN, lookup
from ..permissions import Approval, ApprovalHandler, ApprovalMode, Permissions, approver
from ..policies import (
    CAP_REASONS,
    BudgetNotices,
    CapHandler,
    Checks,
    CommandHook,
    EmptyReply,
    Guards,
    MaxSteps,
    MaxTokensRecovery,
    NoVerifier,
    Policy,
    Reflective,
    StopHook,
    StopHooks,
    StrictActions,
    budget_stops,
    guard_policies,
)
from ..policies._budgets import CONTINUING
from ..policies._modes import TestsAfterChanges
from ..sandbox import SandboxPolicy
from ..skills import LOAD_SKILL, Skill, SkillsSection, discover, load_skill_tool
from ..store import EventLog, MemoryLog
from ..store._placement import check_placement
from ..tools import (
    ASK_USER_TOOL,
    BUILTIN_TOOLS,
    Tool,
    ToolContext,
    ToolExecutor,
    Workspace,
    final_answer,
)
from ..tools._builtin import sandboxed
from ..tracing import RunSpans, tracer_for
from ._output import Output, OutputCheck
from ._run import AgentRun, Begin, RunResult

if TYPE_CHECKING:
    from ..mcp import MCPServer, MCPServerConfig


RESERVED = {final_answer.name: final_answer, ASK_USER: ASK_USER_TOOL}
"""The tools the loop itself acts on: a tool of the user's may not take their names."""

AGENT_MADE = frozenset({"load_skill", "ask_user", "spawn_agent", "plan", "todo"})
"""Tools an agent adds as it is set up (skills, a way to ask, subagents): one resuming a run
without them is fine; a call of one is then an unknown tool to the model."""


@dataclass(kw_only=True)
class Agent:
    """A model, tools and policies. Reusable: every run's state lives in `log`."""

    model: Model
    tools: Sequence[Tool] = BUILTIN_TOOLS
    """`final_answer` is always added."""
    instructions: str = ""
    """Yours, added to the system prompt after the base prompt."""
    system_prompt: str | None = None
    """Replaces reins' base prompt (the other sections stay: your instructions, AGENTS.md)."""
    prompt_sections: Sequence[PromptSection] = ()
    """More parts of the system prompt, after reins' own (`reins.context.Section`)."""
    instruction_files: Sequence[str] = INSTRUCTION_FILES
    """The project instruction files read, from the repository root down to the workspace
    (`AGENTS.override.md` first in each folder); () reads none."""
    profile: str | None = None
    """The name of the config profile this agent was made from, for the record (`run_started`
    keeps it); reins does not read profiles itself: `reins run --profile` does."""
    profile_inferred: bool = False
    """`profile` was inferred from the goal (`reins.context.infer_profile`), not chosen."""
    mode: str | None = None
    """One of `explore` and `plan` (read-only: tools that change files or run commands are
    refused, but writes under docs/explore/ or docs/plan/), `write-test` (an answer after a
    change waits for a test run), `write-no-test`; told to the model. An unknown name runs
    in explore mode, with a notice. None: no mode."""
    workspace: str | Path = "."
    """The project's folder: the tools' root. Not `/`, the home folder or one holding it
    (a `WorkspaceError` at the first run)."""
    max_steps: int = 30
    token_budget: int | None = None
    """Cap on the tokens (input + output) of the run's model calls; it stops `token_budget`."""
    time_budget: float | None = None
    """Cap on the run's wall-clock seconds (the time it was running, across resumes)."""
    cost_budget: float | None = None
    """Cap on the run's cost in US dollars (of calls whose price the catalog knows)."""
    budget_notices: bool = True
    """Tell the model what is left of its budgets (the step checkpoint, the wrap-up warnings,
    the status each round when a token, time or cost budget is set); False: the caps still
    stop the run, silently."""
    at_cap: Literal["stop", "summarize"] = "stop"
    """At any cap: stop, or make one last call in which no tool may be called, whose reply is
    the answer, marked partial (`RunResult.partial`)."""
    on_cap: CapHandler | None = None
    """Asked at a step, token or time cap whether to go on (`CapOffer.choices`: +20/+60
    steps, +20000/+60000 tokens, +120/+300 s); None (headless): the run stops."""
    max_parallel_tools: int = 4
    policies: Sequence[Policy] = ()
    """Consulted in order after the built-in step cap."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    log: EventLog = field(default_factory=MemoryLog)
    model_id: str | None = None
    """The model string recorded in the log, for resuming from the command line."""
    permissions: Permissions = field(default_factory=Permissions)
    """Which tool calls are allowed, asked about or denied (default: tools that only read and
    tools that write inside the workspace are allowed; `run_command` and tools marked
    `needs_approval` ask; a write to a place that runs code later, such as `.git`, asks each
    time, whatever the rules)."""
    approval: ApprovalHandler | ApprovalMode = "deny"
    """Who answers an ask: a function (sync or async) given an `ApprovalRequest`, returning
    True/False or an `Approval`; `"pause"` (the run ends `waiting`, to be resumed with the
    answers); `"allow"` (approve everything but writes to places that run code later, which
    only a function or a resume's answer allows); `"deny"` (nobody to ask)."""
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """What the commands tools start may do; the log's folder and `.git` stay read-only."""
    guards: Guards = field(default_factory=Guards)
    """The guards against a model's usual failures (an unwritten file, repeated calls, loops,
    leaked markup, a lost goal, repeated text), each on or off and tuned; `Guards(loop=False)`,
    say. A run's log records them: a resume keeps the run's own (`resume(guards=...)` changes
    them)."""
    checks: Sequence[str] = ()
    """Commands (`pytest -q`, ...) that must pass, in the sandbox and the workspace, before a
    final answer ends the run; a failing one rejects it with its output tail."""
    stop_hooks: Sequence[StopHook | str] = ()
    """Functions (sync or async) given the run's state and the final answer, returning None to
    accept it or a reason to reject it; or `CommandHook`s (a string is a command): the event
    as JSON on stdin, exit 2 rejects with its message, another failure stops the run."""
    stop_max_rejections: int = 3
    """Final answers rejected (by checks and stop hooks together) before the next rejection
    ends the run with `missing_evidence`."""
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
    output_type: Any = None
    """The type of the final answer — a pydantic model, a dataclass, a TypedDict or a scalar
    type: `final_answer` takes a value of it (its schema the tool's), an answer that is not one
    goes back to the model to repair, and `result.output` is the validated value."""
    deps_type: type | None = None
    """The type of the `deps` each run is given (`agent.run(goal, deps=...)`) and its tools
    read as `ctx.deps` (`ToolContext[YourDeps]`); set, a run without them (or with another
    type) is refused."""
    ask: Asker | AskMode | None = None
    """Who answers the model's `ask_user` (one question a run, about a material choice): a
    function (sync or async) given a `QuestionRequest`, returning the answer or None
    (dismissed); `"pause"` (the run ends `waiting`, `result.questions` has it, and
    `resume(run_id, answers={call_id: text})` answers); None (headless): no `ask_user`."""
    ask_timeout: float | None = 600.0
    """Seconds to wait for an answer before the model goes on with its default."""
    subagents: bool | Mapping[str, Agent] = False
    """Offer `spawn_agent`: the model hands a self-contained subtask to a child run — a copy
    of this agent (without spawn_agent), or one of these named agents (profiles) — and gets
    back its answer and whether it completed (`reins.subagents`, `Agent.as_tool`)."""
    subagent_steps: int = 10
    """The step cap of a spawned copy of this agent (a named one has its own `max_steps`)."""
    subagent_timeout: float = 300.0
    """A spawned child's time budget, in seconds."""
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
    _resolved: tuple[tuple[object, ...], Workspace] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _running: dict[str, AgentRun] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _spills: tuple[Path, Path] | None = field(default=None, init=False, repr=False, compare=False)
    _servers: list[MCPServer] | None = field(default=None, init=False, repr=False, compare=False)
    _found_skills: tuple[list[Skill], list[str]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _load_skill: Tool | None = field(default=None, init=False, repr=False, compare=False)
    _spawn: Tool | None = field(default=None, init=False, repr=False, compare=False)
    _plan: list[Tool] | None = field(default=None, init=False, repr=False, compare=False)
    _output: Output | None = field(default=None, init=False, repr=False, compare=False)
    _held: int = field(default=0, init=False, repr=False, compare=False)
    """How many `async with agent:` are open: the servers stay up until the last ends."""

    def __post_init__(self) -> None:
        """A setting that cannot work is said here, not at the first run."""
        model: object = self.model
        if isinstance(model, str):
            raise UsageError(
                f"model={model!r} is a string: pass a model, "
                f"as in Agent(model=resolve_model({model!r}))"
            )
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
        _one_of("approval", self.approval, ("deny", "allow", "pause"))
        _one_of("ask", self.ask, ("pause", None))
        if self.at_cap not in ("stop", "summarize"):
            raise UsageError(f"at_cap={self.at_cap!r}: say 'stop' or 'summarize'")
        for name in ("max_steps", "max_parallel_tools", "subagent_steps", "reflect_max_retries"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name}={getattr(self, name)!r}: it must be 1 or more")
        for name in ("token_budget", "time_budget", "cost_budget"):
            if (value := getattr(self, name)) is not None and value <= 0:
                raise UsageError(f"{name}={value!r}: a budget is more than 0 (None: no budget)")
        if any(not check.strip() for check in self.checks):
            raise UsageError(
                "a check is an empty command: give the command that must pass before an answer "
                "stands (--check 'pytest -q', checks = [...] in the config)"
            )
        for hook in self.stop_hooks:
            if isinstance(hook, str):  # made a CommandHook when a run starts: refused now
                CommandHook(command=hook)
        for index, policy in enumerate(self.policies):
            if not isinstance(policy, Policy):
                raise UsageError(f"policies[{index}] is a {type(policy).__name__}, not a Policy")
            for hook in hooks_of(type(policy)):
                if not inspect.iscoroutinefunction(getattr(policy, hook)):
                    raise UsageError(
                        f"policy {policy.name}: its {hook} is not async; the loop awaits it: "
                        f"write it `async def {hook}(...)`"
                    )

    async def __aenter__(self) -> Agent:
        """Start the MCP servers, for every run until the `async with` ends."""
        await start_all(self.servers)
        self._held += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._held -= 1
        if not self._held:
            await stop_all(self.servers)

    @property
    def servers(self) -> list[MCPServer]:
        """The MCP servers (`mcp_servers`, each config made a server once)."""
        if self._servers is None:
            self._servers = []
            if self.mcp_servers:
                from ..mcp import MCPServer

                self._servers = [
                    s if isinstance(s, MCPServer) else MCPServer(s) for s in self.mcp_servers
                ]
        return self._servers

    async def _servers_for_run(self) -> list[MCPServer]:
        """Start the servers not running (outside `async with agent`); those it started,
        which the run stops when it ends."""
        if not self.servers or self._held:
            return []
        return await start_all(self.servers)

    def steer(self, session_id: str, text: str) -> None:
        """Steer the run of `session_id` this agent is running (`AgentRun.steer`), from any
        thread or task: for a server that holds session ids, not run objects."""
        running = self._running.get(session_id)
        if running is None:
            raise UsageError(f"no run of session {session_id} is running in this agent")
        running.steer(text)

    async def run(
        self,
        goal: str,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Run `goal` to the end (a new turn of `session_id`, or a new session); the tools
        get `deps` as `ctx.deps`."""
        return await self.iter(goal, session_id=session_id, cancel=cancel, deps=deps).result()

    def run_sync(self, goal: str, *, session_id: str | None = None, deps: Any = None) -> RunResult:
        """`run` for code that is not async. Inside a running event loop (a notebook, an async
        server), `await agent.run(...)` instead."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(goal, session_id=session_id, deps=deps))
        raise UsageError(
            "run_sync was called inside a running event loop (a notebook, an async server): "
            "there, use `await agent.run(goal)`"
        )

    async def resume(
        self,
        run_id: str,
        *,
        max_steps: int | None = None,
        token_budget: int | None = None,
        time_budget: float | None = None,
        cost_budget: float | None = None,
        approvals: Mapping[str, Approval | bool] | None = None,
        cancel: Cancel | None = None,
        guards: Guards | None = None,
        answers: Mapping[str, str | None] | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Continue a run from its log: after a crash, a cap, a cancel, an error, or a pause
        for approval (`approvals` answers its requests by call id). The caps are new totals
        for the run; unset, each stays as it was, but the one that stopped the run grows by as
        much again (steps, tokens, seconds or dollars). The guards stay the run's own (a log
        too old to hold them: this agent's), unless `guards` says others, from here on.
        `answers` answers its questions (`ask_user`) by call id (None: dismissed). `deps`
        are not in the log: give them again."""
        stream = self.resume_iter(
            run_id,
            max_steps=max_steps,
            token_budget=token_budget,
            time_budget=time_budget,
            cost_budget=cost_budget,
            approvals=approvals,
            cancel=cancel,
            guards=guards,
            answers=answers,
            deps=deps,
        )
        return await stream.result()

    def iter(
        self,
        goal: str,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: Any = None,
    ) -> AgentRun:
        """Like `run`, as an async iterable of the run's events."""
        self._check_deps(deps)
        return AgentRun(
            lambda: self._start(goal, session_id, cancel, deps=deps),
            self._next_turns(cancel, deps),
            self._running,
            self._output_spec(),
        )

    def _check_deps(self, deps: Any) -> None:
        wanted = self.deps_type
        if wanted is None:
            return
        if deps is None:
            raise UsageError(
                f"this agent's tools take deps of type {wanted.__name__}: pass them, as in "
                "agent.run(goal, deps=...)"
            )
        if not isinstance(deps, get_origin(wanted) or wanted):  # dict[str, int]: a dict
            raise UsageError(
                f"deps of type {type(deps).__name__} given where {wanted.__name__} is wanted"
            )

    def child_iter(
        self,
        goal: str,
        *,
        parent: tuple[str, str],
        preface: Sequence[Message] = (),
        cancel: Cancel | None = None,
        deps: Any = None,
    ) -> AgentRun:
        """A subagent's run (`reins.subagents`): a new session, linked to the parent's run
        and tool call (`parent`) in its log, `preface` before the goal."""
        return AgentRun(
            lambda: self._start(goal, None, cancel, parent=parent, preface=preface, deps=deps),
            output=self._output_spec(),
        )

    def as_tool(
        self,
        name: str,
        description: str,
        *,
        max_steps: int = 10,
        timeout: float = 300.0,
        briefing: str = "",
        system_prompt: str | None = None,
        exclude_tools: Sequence[str] = (),
        context: bool = False,
    ) -> Tool:
        """This agent as a tool another agent calls with a task: each call is a child run of
        the caller's (same store, linked to the call; same workspace; its events on the
        caller's stream; its spending in the caller's budgets; cancelled with it) that returns
        `{"result", "completed"}`. `briefing` adds to its instructions, `system_prompt`
        replaces its base prompt, `exclude_tools` are not given to it, `context` hands it a
        digest of the caller's conversation first; at most `max_steps` steps and `timeout`
        seconds (its time budget)."""
        from ..subagents import Brief, agent_tool

        brief = Brief(
            max_steps=max_steps,
            timeout=timeout,
            briefing=briefing,
            system_prompt=system_prompt,
            exclude_tools=tuple(exclude_tools),
            context=context,
        )
        return agent_tool(self, name=name, description=description, brief=brief)

    def _next_turns(self, cancel: Cancel | None, deps: Any = None) -> Callable[[str, str], Begin]:
        def turn(goal: str, session_id: str) -> Begin:
            return lambda: self._start(goal, session_id, cancel, deps=deps)

        return turn

    def resume_iter(
        self,
        run_id: str,
        *,
        max_steps: int | None = None,
        token_budget: int | None = None,
        time_budget: float | None = None,
        cost_budget: float | None = None,
        approvals: Mapping[str, Approval | bool] | None = None,
        cancel: Cancel | None = None,
        guards: Guards | None = None,
        answers: Mapping[str, str | None] | None = None,
        deps: Any = None,
    ) -> AgentRun:
        """Like `resume`, as an async iterable of events."""
        self._check_deps(deps)
        caps = _Caps(max_steps, token_budget, time_budget, cost_budget)
        return AgentRun(
            lambda: self._resume(
                run_id, caps, approvals or {}, cancel, guards, answers or {}, deps
            ),
            self._next_turns(cancel, deps),
            self._running,
            self._output_spec(),
        )

    async def _start(
        self,
        goal: str,
        session_id: str | None,
        cancel: Cancel | None,
        *,
        parent: tuple[str, str] | None = None,
        preface: Sequence[Message] = (),
        deps: Any = None,
    ) -> tuple[list[Event], RunLoop]:
        if not isinstance(goal, str):
            raise UsageError(f"the goal is a {type(goal).__name__}: give it as text")
        if not goal.strip():
            raise UsageError("the goal is empty; say what the agent should do")
        tracer = tracer_for(self.instrument, parent)  # settled before anything is recorded
        goal = escape_text(goal)  # an argument that was not UTF-8 holds lone surrogates
        workspace = self._workspace()
        mode, unknown = resolve_mode(self.mode)
        notes = [unknown] if unknown else []
        if session_id is None:
            session_id = new_id()
            prompt = PromptContext(workspace=workspace.root, goal=goal, approvals=self._may_ask())
            system = build_prompt(self._sections(mode, workspace), prompt)
            history: list[Message] = [SystemMessage(content=system), *preface]
            notes += prompt.notes
            notes += self._skills()[1]
            started = self._run_started(
                session_id, goal, workspace, history, mode=mode, parent=parent
            )
            await self.log.append(started)
        else:
            # The session is ours before its history is read: a turn never forks it.
            self.log.claim(session_id)
            try:
                history, grants = await self._session_history(session_id)
                started = self._run_started(session_id, goal, workspace, history, grants, mode=mode)
                await self.log.append(started)
            except BaseException:
                self.log.release(session_id)
                raise
        state = RunState.fold([started])
        loop = await self._started_loop(state, cancel, workspace, deps, tracer)
        first: list[Event] = [started]
        told = [("prompt", text) for text in notes]
        if not getattr(self.model, "offline", False) and not lookup(started.config.model).known:
            told.append(
                (
                    "catalog",
                    f"model {started.config.model!r} is not in the catalog: assuming a "
                    f"{UNKNOWN.context_window}-token context, no price (cost not counted)",
                )
            )
        for source, text in told:
            notice = Notice(
                session_id=session_id,
                run_id=started.run_id,
                seq=state.next_seq,
                source=source,
                level="warning",
                text=text,
            )
            await self.log.append(notice)
            state.apply(notice)
            first.append(notice)
        return first, loop

    def _run_started(
        self,
        session_id: str,
        goal: str,
        workspace: Workspace,
        history: list[Message],
        grants: tuple[str, ...] = (),
        *,
        mode: Mode | None = None,
        parent: tuple[str, str] | None = None,
    ) -> RunStarted:
        tools = self._tools()
        config = RunConfig(
            model=self.model_id or self.model.name,
            workspace=str(workspace.root),
            max_steps=self.max_steps,
            tools=tuple(t.name for t in tools),
            read_only_tools=tuple(t.name for t in tools if t.read_only),
            max_parallel_tools=self.max_parallel_tools,
            token_budget=self.token_budget,
            time_budget=self.time_budget,
            cost_budget=self.cost_budget,
            budget_notices=self.budget_notices,
            at_cap=self.at_cap,
            sandbox=self.sandbox.mode,
            network=self.sandbox.network,
            guards=self.guards,
            checks=tuple(self.checks),
            reflect=self.reflect,
            reflect_max_retries=self.reflect_max_retries,
            context=self.context,
            mode=mode.name if mode is not None else None,
            profile=self.profile,
            profile_inferred=self.profile_inferred,
            mcp_servers=tuple(s.name for s in self.servers),
            defer_tools_above=self.defer_tools_above,
            parent_run_id=parent[0] if parent else None,
            parent_call_id=parent[1] if parent else None,
        )
        return RunStarted(
            session_id=session_id,
            run_id=new_id(),
            seq=1,
            goal=goal,
            config=config,
            messages=(*history, UserMessage(content=goal)),
            grants=grants,
        )

    async def _resume(
        self,
        run_id: str,
        caps: _Caps,
        approvals: Mapping[str, Approval | bool],
        cancel: Cancel | None,
        guards: Guards | None = None,
        answers: Mapping[str, str | None] | None = None,
        deps: Any = None,
    ) -> tuple[list[Event], RunLoop]:
        tracer = tracer_for(self.instrument)  # settled before anything is recorded
        state = RunState.fold(await self.log.events(run_id))
        self.log.claim(state.session_id, run_id)
        try:
            state = RunState.fold(await self.log.events(run_id))  # as it stands, claimed
            await self._check_latest(state)
            return await self._resumed(
                state, caps, approvals, cancel, guards, answers or {}, deps, tracer
            )
        except BaseException:
            self.log.release(state.session_id, run_id)
            raise

    async def _check_latest(self, state: RunState) -> None:
        """Only a session's latest run may go on: a later turn has closed its open calls
        ("not run") in the history the model sees, and runs after it would not see its work."""
        runs = await self.log.runs(state.session_id)
        ids = [r.run_id for r in runs]
        if state.run_id in ids and ids[-1] != state.run_id:
            raise UsageError(
                f"run {state.run_id} cannot go on: its session went on with a later turn "
                f"(run {ids[-1]}); continue the session with a new goal instead"
            )

    async def _resumed(
        self,
        state: RunState,
        caps: _Caps,
        approvals: Mapping[str, Approval | bool],
        cancel: Cancel | None,
        guards: Guards | None = None,
        answers: Mapping[str, str | None] | None = None,
        deps: Any = None,
        tracer: Any = None,
    ) -> tuple[list[Event], RunLoop]:
        run_id = state.run_id
        awaiting = {r.call.id: r for r in state.awaiting()}
        unknown = sorted(set(approvals) - set(awaiting))
        if unknown:
            raise UsageError(
                f"run {run_id} has no approval request for call(s) {', '.join(unknown)}; "
                f"it awaits: {', '.join(awaiting) or 'none'}"
            )
        asked = {q.call_id for q in state.unanswered()}
        unknown = sorted(set(answers or {}) - asked)
        if unknown:
            raise UsageError(
                f"run {run_id} has no open question for call(s) {', '.join(unknown)}; "
                f"it asks: {', '.join(sorted(asked)) or 'none'}"
            )
        if state.finished is not None and state.finished.stop_reason is StopReason.END_TURN:
            raise UsageError(
                f"run {run_id} already ended its turn; continue its session with a new goal instead"
            )
        finished = state.finished
        capped = finished.stop_reason if finished is not None else None
        resumed = RunResumed(
            session_id=state.session_id,
            run_id=state.run_id,
            seq=state.next_seq,
            **caps.in_force(state, capped),
            guards=_guards_from_here(state.config.guards, guards, self.guards),
        )
        await self.log.append(resumed)
        state.apply(resumed)
        first: list[Event] = [resumed]
        if finished is not None and capped in CAP_REASONS:
            note = Notice(
                session_id=state.session_id,
                run_id=state.run_id,
                seq=state.next_seq,
                source="budgets",
                to_model=True,
                text=CONTINUING.format(detail=finished.detail, caps=_describe(state.config)),
            )
            await self.log.append(note)
            state.apply(note)
            first.append(note)
        for call_id, given in approvals.items():
            answer = given if isinstance(given, Approval) else Approval(bool(given))
            request = awaiting[call_id]
            always = answer.allowed and answer.always and bool(request.grant)  # none: each time
            decided = PermissionDecided(
                session_id=state.session_id,
                run_id=state.run_id,
                seq=state.next_seq,
                step=request.step,
                call_id=call_id,
                tool=request.call.name,
                allowed=answer.allowed,
                rule=request.rule,
                by=answer.by,
                always=always,
                grant=request.grant if always else "",
            )
            await self.log.append(decided)
            state.apply(decided)
            first.append(decided)
        for call_id, reply in (answers or {}).items():
            text = reply.strip() if reply is not None else None
            replied = QuestionAnswered(
                session_id=state.session_id,
                run_id=state.run_id,
                seq=state.next_seq,
                call_id=call_id,
                answer=text or None,
                by="user" if text else "dismissed",
            )
            await self.log.append(replied)
            state.apply(replied)
            first.append(replied)
        return first, await self._started_loop(state, cancel, deps=deps, tracer=tracer)

    async def state(self, run_id: str) -> RunState:
        """The run's state, folded from its log."""
        return RunState.fold(await self.log.events(run_id))

    async def _started_loop(
        self,
        state: RunState,
        cancel: Cancel | None,
        workspace: Workspace | None = None,
        deps: Any = None,
        tracer: Any = None,
    ) -> RunLoop:
        """The run's loop, with its MCP servers running (and its spans, if `tracer`)."""
        owned = await self._servers_for_run()
        try:
            return self._loop(state, cancel, workspace, owned, deps, tracer)
        except BaseException:
            await stop_all(owned)
            raise

    def _loop(
        self,
        state: RunState,
        cancel: Cancel | None,
        workspace: Workspace | None = None,
        owned: Sequence[MCPServer] = (),
        deps: Any = None,
        tracer: Any = None,
    ) -> RunLoop:
        """The loop that drives `state` on; it stops the servers in `owned` when it ends."""
        tools = self._tools()
        missing = set(state.config.tools) - {t.name for t in tools} - AGENT_MADE
        if missing:
            raise UsageError(
                f"run {state.run_id} used tools {sorted(missing)} that this agent lacks"
            )
        if workspace is None:
            workspace = Workspace(
                state.config.workspace,
                protected=self._protected(),
                readable=[*self._readable(), *self._skill_folders()],
            )
        context = ToolContext(
            workspace=workspace,
            session_id=state.session_id,
            run_id=state.run_id,
            sandbox=self._tool_sandbox(),
            deps=deps,
            spill=self._spill_folder(state.run_id),
        )
        mode, _ = resolve_mode(state.config.mode)
        hints = FolderHints(workspace=workspace.root, names=self.instruction_files)
        hints.seed(state.messages)
        executor = ToolExecutor(
            [t for t in tools if t.name in state.config.tools],
            context=context,
            max_parallel=state.config.max_parallel_tools,
            permissions=self.permissions.tiered(read_only=self.sandbox.mode == "read-only"),
            notes_for=hints.notes_for if self.instruction_files else None,
            scope=mode.scope if mode is not None else None,
            sources=self.servers,
            defer_above=state.config.defer_tools_above,
            loaded=state.loaded_tools,
        )
        cancel = cancel or Cancel()
        config = state.config
        reflection = (
            [Reflective(self.model, self.settings, cancel, config.reflect_max_retries)]
            if config.reflect
            else []
        )
        return RunLoop(
            state=state,
            log=self.log,
            model=self.model,
            executor=executor,
            context=ContextBuilder.for_run(
                self.model, config.model, config.context or self.context, executor.specs
            ),
            policies=[
                MaxSteps(),
                *budget_stops(state),
                *reflection,  # after the caps (a reflection is a model call), before notices
                *([BudgetNotices()] if config.budget_notices else []),
                MaxTokensRecovery(),
                *self._protocol_policies(executor),
                EmptyReply(),
                *self._guard_policies(executor, state.config.guards or self.guards),
                *self.policies,
                *self._final_policies(workspace, state.config.checks),
                *self._mode_policies(mode, tools),
            ],
            settings=self.settings,
            cancel=cancel,
            approver=approver(self.approval),
            on_cap=self.on_cap,
            on_end=partial(stop_all, owned) if owned else None,
            asker=self.ask,
            ask_timeout=self.ask_timeout,
            spans=RunSpans(tracer, state, self.profile or "reins") if tracer else None,
        )

    def _final_policies(self, workspace: Workspace, checks: Sequence[str]) -> list[Policy]:
        """The output type's check, the verification gate (the checks the run was started
        with: a resume keeps them), then the stop hooks: only at a final answer."""
        root, protected, cap = workspace.root, self._protected(), self.stop_max_rejections
        output = self._output_spec()
        policies: list[Policy] = [OutputCheck(output)] if output is not None else []
        if checks:
            policies.append(
                Checks(
                    checks,
                    workspace=root,
                    sandbox=self.sandbox,
                    protected=protected,
                    max_rejections=cap,
                )
            )
        elif not any(t.name == "verify" for t in self.tools):
            policies.append(NoVerifier())  # acts only on a call of a `verify` it lacks
        hooks = [*self.stop_hooks, *([server_stop_hook(self.servers)] if self.servers else [])]
        if hooks:
            policies.append(
                StopHooks(
                    hooks,
                    workspace=root,
                    sandbox=self.sandbox,
                    protected=protected,
                    max_rejections=cap,
                )
            )
        return policies

    def _protocol_policies(self, executor: ToolExecutor) -> list[Policy]:
        """The strict JSON action protocol brings its repair policy."""
        if getattr(self.model, "actions", "native") == "json":
            return [StrictActions(executor.specs)]
        return []

    def _guard_policies(self, executor: ToolExecutor, guards: Guards) -> list[Policy]:
        tools = executor.tools.values()
        return guard_policies(
            guards,
            read_only=[t.name for t in tools if t.read_only],
            path_args={t.name: t.path_args for t in tools},
            command_args={t.name: t.command_arg for t in tools if t.command_arg},
            tool_names=list(executor.tools),
            strict_actions=getattr(self.model, "actions", "native") == "json",
            specs=executor.specs,
            uncached=[t.name for t in tools if not t.cached],
        )

    def _may_ask(self) -> bool:
        """Whether a call of this agent may be put to a person, or denied for want of one."""
        if self.approval == "allow":
            return False
        if self.servers:
            return True  # their tools ask unless the server marks them read-only
        rules = self.permissions.user, self.permissions.project
        return any(
            t.needs_approval or t.command_arg or any(r.tools.get(t.name) == "ask" for r in rules)
            for t in self._tools()
        )

    def _tools(self) -> list[Tool]:
        tools = list(self.tools)
        if (output := self._output_spec()) is not None:
            tools = [t for t in tools if t.name != final_answer.name] + [output.tool]
        elif not any(t.name == final_answer.name for t in tools):
            tools.append(final_answer)
        skills, _ = self._skills()
        if skills and not any(t.name == LOAD_SKILL for t in tools):
            tools.append(self._skill_tool(skills))
        if self.subagents and not any(t.name == "spawn_agent" for t in tools):
            tools.append(self._spawn_tool())
        if self.ask is not None and not any(t.name == ASK_USER for t in tools):
            tools.append(ASK_USER_TOOL)
        if self.planning and not any(t.name == "plan" for t in tools):
            tools += self._planning_tools()
        return sandboxed(tools, self.sandbox)

    def _output_spec(self) -> Output | None:
        if self.output_type is None:
            return None
        if self._output is None or self._output.type is not self.output_type:
            self._output = Output(self.output_type)
        return self._output

    def _planning_tools(self) -> list[Tool]:
        if self._plan is None:
            from ..planning import plan_tool, todo_tool

            profiles = list(self.subagents) if isinstance(self.subagents, Mapping) else []
            self._plan = [plan_tool(self.planner or self.model, profiles=profiles), todo_tool()]
        return self._plan

    def _spawn_tool(self) -> Tool:
        if self._spawn is None:
            from ..subagents import Brief, spawn_agent_tool

            profiles = self.subagents if isinstance(self.subagents, Mapping) else {}
            brief = Brief(max_steps=self.subagent_steps, timeout=self.subagent_timeout)
            self._spawn = spawn_agent_tool(self, profiles, brief)
        return self._spawn

    def _skills(self) -> tuple[list[Skill], list[str]]:
        """The skills found in `skills` (once per agent), and notes on those left out."""
        if self._found_skills is None:
            self._found_skills = discover(self.skills) if self.skills else ([], [])
        return self._found_skills

    def _skill_tool(self, skills: list[Skill]) -> Tool:
        if self._load_skill is None:
            self._load_skill = load_skill_tool(skills)
        return self._load_skill

    def _tool_sandbox(self) -> SandboxPolicy:
        """The sandbox of the tools' commands: the skills' folders readable (their scripts
        run through run_command, wherever the skill lies)."""
        folders = tuple(str(f) for f in self._skill_folders())
        if not folders:
            return self.sandbox
        return dataclasses.replace(self.sandbox, readable=(*self.sandbox.readable, *folders))

    def _skill_folders(self) -> list[Path]:
        """Skills' folders, which the file tools may read (wherever they are)."""
        return [s.folder for s in self._skills()[0]]

    def _workspace(self) -> Workspace:
        """`workspace`, resolved; again only if the directory it names is another one (a
        resolve costs more than a fast round)."""
        try:
            found = os.stat(self.workspace)
        except (OSError, ValueError):
            return Workspace(self.workspace, protected=self._protected())  # its error says why
        key = (str(self.workspace), found.st_dev, found.st_ino, tuple(self._protected()))
        if self._resolved is None or self._resolved[0] != key:
            made = Workspace(  # first: a workspace refused for itself (`~`) says so
                self.workspace,
                protected=self._protected(),
                readable=[*self._readable(), *self._skill_folders()],
            )
            for store in self._protected():
                check_placement(store, self.workspace)
            self._resolved = (key, made)
        return self._resolved[1]

    def _mode_policies(self, mode: Mode | None, tools: Sequence[Tool]) -> list[Policy]:
        if mode is None or not mode.tests_after_changes:
            return []
        changing = frozenset(t.name for t in tools if t.path_args and not t.read_only)
        return [TestsAfterChanges(changing)]

    def _sections(self, mode: Mode | None, workspace: Workspace) -> list[PromptSection]:
        readers = {"read_file"} & {t.name for t in self._tools()}
        spill = self._readable()[0] if self._readable() and readers else None
        return [
            BaseSection(self.system_prompt),
            ModeSection(mode),
            TextSection(self.instructions),
            ProjectInstructions(tuple(self.instruction_files)),
            SkillsSection(self._skills()[0]),
            ToolNotes(spill, workspace.root),
            *self.prompt_sections,
        ]

    def _spill_folder(self, run_id: str) -> Path | None:
        """The run's folder for over-long results, in a log on disk; None: they are cut."""
        spills = self._readable()
        return spills[0] / run_id if spills else None

    def _readable(self) -> list[Path]:
        """The folders outside the workspace the file tools may read: the log's saved long
        outputs (read-only to the tools: the log's folder is protected)."""
        directory = getattr(self.log, "directory", None)
        if not isinstance(directory, Path):
            return []
        if self._spills is None or self._spills[0] is not directory:  # realpath: a stat a part
            self._spills = (directory, Path(os.path.realpath(directory)) / "spill")
        return [self._spills[1]]

    def _protected(self) -> list[Path]:
        directory = getattr(self.log, "directory", None)
        return [directory] if isinstance(directory, Path) else []

    async def compact(self, session_id: str) -> ContextCompacted:
        """Compact a session's context now: the middle of its last run's view is summarized,
        and the session's next turn starts from the summary. `UsageError` if the session's
        last run is unfinished, or its view has nothing to compact."""
        self.log.claim(session_id)  # no turn of it may start meanwhile
        try:
            runs = await self.log.runs(session_id)
            if not runs:
                raise UsageError(
                    f"no session {session_id!r} in this log; `reins sessions` lists them"
                )
            state = RunState.fold(await self.log.events(runs[-1].run_id))
            if state.finished is None:
                raise UsageError(
                    f"run {state.run_id} of session {session_id} has not finished; "
                    "resume it (or let it finish) before compacting"
                )
            tools = [t for t in self._tools() if t.name in state.config.tools]
            settings = state.config.context or self.context
            specs = [t.spec for t in tools]
            builder = ContextBuilder.for_run(self.model, state.config.model, settings, specs)
            fields = await builder.compact(state, forced=True)
            if fields is None:
                raise UsageError(
                    f"nothing to compact in session {session_id}: its view is "
                    f"{state.view_size()} messages, and the last "
                    f"{builder.settings.keep_recent} stay as they are"
                )
            event = ContextCompacted(
                session_id=session_id, run_id=state.run_id, seq=state.next_seq, **fields
            )
            await self.log.append(event)
            return event
        finally:
            self.log.release(session_id)

    async def _session_history(self, session_id: str) -> tuple[list[Message], tuple[str, ...]]:
        """The session's conversation so far, and what was allowed "always" in it."""
        runs = await self.log.runs(session_id)
        if not runs:
            raise UsageError(f"no session {session_id!r} in this log; `reins sessions` lists them")
        last = RunState.fold(await self.log.events(runs[-1].run_id))
        return last.transcript(), tuple(sorted(last.grants))


@dataclass(kw_only=True)
class ReflectiveAgent(Agent):
    """An `Agent` that reflects on each step (`reflect=True`): the same loop, one more policy."""

    reflect: bool = True


@dataclass(frozen=True)
class _Caps:
    """The caps a resume asks for; None: as they were."""

    max_steps: int | None
    token_budget: int | None
    time_budget: float | None
    cost_budget: float | None

    def in_force(self, state: RunState, capped: StopReason | None) -> dict[str, Any]:
        """The caps from here on: those asked for; the others as they were, except that the
        one that stopped the run (`capped`) grows by as much again."""
        config = state.config
        used: dict[str, tuple[StopReason, float]] = {
            "max_steps": (StopReason.MAX_STEPS, state.step),
            "token_budget": (StopReason.TOKEN_BUDGET, state.usage.total_tokens),
            "time_budget": (StopReason.TIME_BUDGET, state.elapsed),
            "cost_budget": (StopReason.COST_BUDGET, state.cost),
        }
        caps: dict[str, Any] = {}
        for name, (reason, spent) in used.items():
            asked = getattr(self, name)
            cap = getattr(config, name)
            if asked is not None:
                caps[name] = asked
            elif cap is not None and capped is reason:
                caps[name] = type(cap)(spent + cap)
            else:
                caps[name] = cap
        return caps


def _guards_from_here(
    recorded: Guards | None, asked: Guards | None, agents: Guards
) -> Guards | None:
    """The guards a resume records (None: the run's own, unchanged): those asked for, if
    other than the run's; for a log too old to hold any, the resuming agent's."""
    if asked is not None:
        return None if asked == recorded else asked
    return agents if recorded is None else None


def _describe(config: RunConfig) -> str:
    parts = [f"{config.max_steps} steps"]
    if config.token_budget is not None:
        parts.append(f"{config.token_budget} tokens")
    if config.time_budget is not None:
        parts.append(f"{config.time_budget:g} seconds")
    if config.cost_budget is not None:
        parts.append(f"${config.cost_budget:g}")
    return ", ".join(parts) + " in all"


def new_id() -> str:
    """A time-ordered id: 11 hex digits of milliseconds, then 10 random ones (a busy process
    makes hundreds of ids a millisecond; 6 random digits let two of them collide)."""
    # `random`, not `secrets`: ids need not be secret, and it is reseeded in a forked child.
    return f"{int(time.time() * 1000):011x}{random.getrandbits(40):010x}"


def _one_of(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """A setting that takes a function or one of a few names."""
    if not callable(value) and value not in allowed:
        names = ", ".join(repr(a) for a in allowed)
        raise UsageError(f"{name}={value!r}: give a function or one of {names}")


_LISTS = ("tools", "policies", "checks", "stop_hooks", "skills", "mcp_servers")
_COUNTS = ("max_steps", "max_parallel_tools", "subagent_steps", "reflect_max_retries")
_BUDGETS = ("token_budget", "time_budget", "cost_budget")
_KINDS: tuple[tuple[str, type], ...] = (
    ("settings", ModelSettings),
    ("sandbox", SandboxPolicy),
    ("guards", Guards),
    ("permissions", Permissions),
    ("context", ContextSettings),
)


def _check_kinds(agent: Agent) -> None:
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
    for name in _BUDGETS:
        value = getattr(agent, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise UsageError(f"{name}={value!r}: give a number (None: no budget)")
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
