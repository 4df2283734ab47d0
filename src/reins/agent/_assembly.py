"""The assembly of a run: from an agent's fields, the pieces its loop is made of (the tools,
the workspace, the prompt's sections, the executor, the context builder, the policies) and the
loop itself, its MCP servers started."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context import ContextBuilder, ContextSettings
from ..context._compaction import summarizer_for
from ..context._instructions import FolderHints, project_root
from ..context._modes import Mode, ModeSection, resolve_mode
from ..context._sections import (
    BaseSection,
    ProjectInstructions,
    SectionSource,
    TextSection,
    ToolNotes,
)
from ..core._cancel import Cancel
from ..core._errors import UsageError
from ..core._loop import RunLoop
from ..core._messages import ToolSpec
from ..core._model import Model
from ..core._questions import ASK_USER
from ..core._state import RunState
from ..mcp import server_stop_hook, start_all, stop_all
from ..permissions import approver, ask_on_terminal
from ..policies import (
    BudgetNotices,
    CheckCommands,
    EmptyReply,
    Guards,
    MaxSteps,
    MaxTokensRecovery,
    NoVerifier,
    Policy,
    Reflective,
    StopHooks,
    StrictActions,
    budget_stops,
    guard_policies,
    hook_policies,
)
from ..policies._modes import TestsAfterChanges
from ..sandbox import SandboxPolicy
from ..skills import LOAD_SKILL, Skill, SkillsSection, discover, load_skill_tool
from ..store._placement import check_placement
from ..tools import (
    ASK_USER_TOOL,
    Tool,
    ToolContext,
    ToolExecutor,
    Workspace,
    calculate,
    final_answer,
)
from ..tools._builtin import sandboxed
from ..tracing import RunSpans
from ._fields import AgentFields, DepsT, OutputT
from ._groups import Subagents
from ._output import Output, OutputCheck

if TYPE_CHECKING:
    from ..checkpoints import Shadow
    from ..mcp import MCPServer
    from ..memory import Capture, Embeddings, Memories
    from ..subagents import ChildAgent, ChildRun, Handoff

AGENT_MADE = frozenset(
    {"load_skill", "ask_user", "spawn_agent", "plan", "todo", "calculate", "memory_search"}
)
"""Tools an agent adds as it is set up (skills, a way to ask, subagents, arithmetic): one
resuming a run without them is fine; a call of one is then an unknown tool to the model."""


@dataclass(kw_only=True)
class RunAssembly(AgentFields[DepsT, OutputT]):
    """An agent's fields, and how a run of them is put together; what it makes once (the
    workspace resolved, the skills found, the MCP servers, the tools it adds) it keeps."""

    _resolved: tuple[tuple[object, ...], Workspace] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _spills: tuple[Path, Path] | None = field(default=None, init=False, repr=False, compare=False)
    _shadows: tuple[Path, Path, Shadow] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _memories: tuple[tuple[object, ...], Memories, Tool, Embeddings | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _extractor: tuple[object, Model] | None = field(
        default=None, init=False, repr=False, compare=False
    )
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

    def child_run(self, task: str, handoff: Handoff) -> ChildRun:
        """`task` as a child run (`reins.subagents`): `Agent.child_run`, which starts runs.
        Declared here for `spawn_agent`, made here, which hands a copy of this agent down."""
        raise NotImplementedError

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
        guards = state.config.guards or self.guards
        mode, _ = resolve_mode(state.config.mode)
        tools = self._tools(mode, guards)
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
            syntax_check=guards.syntax_check,
        )
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
            read_back_escapes=guards.escapes,
        )
        cancel = cancel or Cancel()
        config = state.config
        reflection = (
            [Reflective(self._model, self.settings, cancel, config.reflect_max_retries)]
            if config.reflect
            else []
        )
        ask = self._ask
        return RunLoop(
            state=state,
            log=self.log,
            model=self._model,
            executor=executor,
            context=self._context_builder(
                config.model, config.context or self.context, executor.specs
            ),
            policies=[
                MaxSteps(),
                *budget_stops(state),
                *reflection,  # after the caps (a reflection is a model call), before notices
                *([BudgetNotices()] if config.budget_notices else []),
                MaxTokensRecovery(),
                *self._protocol_policies(executor),
                EmptyReply(),
                *self._hook_policies(workspace, executor),
                *self._guard_policies(executor, guards),
                *self.policies,
                *self._final_policies(workspace, state.config.checks),
                *self._mode_policies(mode, tools),
            ],
            settings=self.settings,
            cancel=cancel,
            approver=approver(self.approval, ask_on_terminal),
            on_cap=self.budgets.on_cap,
            on_end=partial(stop_all, owned) if owned else None,
            asker=ask.answer if ask is not None else None,
            ask_timeout=ask.timeout if ask is not None else None,
            spans=RunSpans(tracer, state, self.profile or "reins") if tracer else None,
            snapshots=self._shadow(workspace),
            memory=self._capture(state, workspace),
        )

    def _kept_facts(self) -> Memories | None:
        """The facts `memory` keeps (made once per log and files); None: no memory."""
        memory = self.memory
        if memory is None:
            return None
        directory = getattr(self.log, "directory", None)
        local = memory.path
        if local is None:
            if not isinstance(directory, Path):
                raise UsageError(
                    "Agent(memory=...) keeps its facts beside the event log, and this log has "
                    "no folder: give the agent a log on disk (SQLiteLog), or Memory(path=...)"
                )
            local = directory / "memory.db"
        key = (local, memory)
        if self._memories is None or self._memories[0] != key:
            from ..memory import Memories, memory_search_tool

            made = Memories(local, memory.user_path, timeout=memory.timeout)
            meaning = _embeddings(memory.embeddings)
            self._memories = (key, made, memory_search_tool(made, memory, meaning), meaning)
        return self._memories[1]

    def _capture(self, state: RunState, workspace: Workspace) -> Capture | None:
        """What reads the run's turns for facts to keep; None: memory, or its capture, is
        off (and always for a subagent's run: the run that started it captures)."""
        memory = self.memory
        if memory is None or state.config.parent_run_id is not None:
            return None
        written = memory.written(str(project_root(workspace.root)))
        memories = self._kept_facts()
        if written is None or memories is None:
            return None
        from ..memory import Capture

        return Capture(
            memories=memories,
            model=self._memory_model,
            scope=written[0],
            owner=written[1],
            redact=memory.redact,
            embeddings=self._memories[3] if self._memories else None,
        )

    def _memory_model(self) -> Model:
        """The extractor: `memory.model`, else the run's model (a hosted one's cheapest
        sibling, as for summaries); resolved once."""
        assert self.memory is not None
        chosen = self.memory.model
        if chosen is None:
            chosen = summarizer_for(self.model_id or self._model.name) or self._model
        if not isinstance(chosen, str):
            return chosen
        if self._extractor is None or self._extractor[0] != chosen:
            self._extractor = (chosen, _resolve(chosen))
        return self._extractor[1]

    def _shadow(self, workspace: Workspace) -> Shadow | None:
        """Where the run's checkpoints go: the log's folder, if it has one and they are on."""
        directory = getattr(self.log, "directory", None)
        if not self.checkpoints or not isinstance(directory, Path):
            return None
        held = self._shadows  # made once per log and workspace: it costs a few stats
        if held is None or held[0] is not directory or held[1] != workspace.root:
            from ..checkpoints import Shadow  # loaded by the first run that may take one

            held = self._shadows = (directory, workspace.root, Shadow(directory, workspace.root))
        return held[2]

    def _context_builder(
        self, model_id: str, settings: ContextSettings, specs: Sequence[ToolSpec]
    ) -> ContextBuilder:
        """The context builder of a run of this agent's model, recorded as `model_id`; a
        summarizer named in `settings` is resolved here, when a compaction first needs it."""
        return ContextBuilder.for_run(self._model, model_id, settings, specs, resolve=_resolve)

    def _final_policies(self, workspace: Workspace, checks: Sequence[str]) -> list[Policy]:
        """The output type's check, the verification gate (the checks the run was started
        with: a resume keeps them), then the stop hooks: only at a final answer."""
        settings = self._checks
        root, protected, cap = workspace.root, self._protected(), settings.max_rejections
        output = self._output_spec()
        policies: list[Policy] = [OutputCheck(output)] if output is not None else []
        if checks:
            policies.append(
                CheckCommands(
                    checks,
                    workspace=root,
                    sandbox=self.sandbox,
                    protected=protected,
                    max_rejections=cap,
                )
            )
        elif not any(t.name == "verify" for t in self.tools):
            policies.append(NoVerifier())  # acts only on a call of a `verify` it lacks
        hooks = [*settings.stop_hooks, *([server_stop_hook(self.servers)] if self.servers else [])]
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

    def _hook_policies(self, workspace: Workspace, executor: ToolExecutor) -> list[Policy]:
        """The command hooks, before the guards: they judge a call as a hook leaves it."""
        if not self.hooks:
            return []

        def validate(name: str, arguments: dict[str, Any]) -> object:
            tool = executor.tools.get(name)  # an unknown tool: the executor says so
            return tool.validate(arguments) if tool is not None else None

        return hook_policies(
            self.hooks,
            workspace=workspace.root,
            sandbox=self.sandbox,
            protected=self._protected(),
            validate=validate,
        )

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
            workspace=executor.context.workspace,
            max_rejections=self._checks.max_rejections,
            refused_by_mode=executor.refused_by_mode,
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

    def _tools(self, mode: Mode | None = None, guards: Guards | None = None) -> list[Tool]:
        """The run's tools: the agent's, and those it adds as it is set up (`mode` and `guards`:
        the run's, if not the agent's own)."""
        tools = list(self.tools)
        if (output := self._output_spec()) is not None:
            tools = [t for t in tools if t.name != final_answer.name] + [output.tool]
        elif not any(t.name == final_answer.name for t in tools):
            tools.append(final_answer)
        skills, _ = self._skills()
        if skills and not any(t.name == LOAD_SKILL for t in tools):
            tools.append(self._skill_tool(skills))
        if self._subagents and not any(t.name == "spawn_agent" for t in tools):
            tools.append(self._spawn_tool())
        if self._ask is not None and not any(t.name == ASK_USER for t in tools):
            tools.append(ASK_USER_TOOL)
        if self.planning and not any(t.name == "plan" for t in tools):
            tools += self._planning_tools()
        if (search := self._memory_search()) is not None:
            tools.append(search)
        names = {t.name for t in tools}
        commands = "run_command" in names and _runs_commands(mode or resolve_mode(self.mode)[0])
        compute = (guards or self.guards).compute
        if compute and "read_file" in names and not commands and calculate.name not in names:
            tools.append(calculate)  # nothing else to compute with: small models add wrong
        return sandboxed(tools, self.sandbox)

    def _memory_search(self) -> Tool | None:
        """`memory_search`, when the run may read memory and there is (or may come to be)
        something in it: offered with no facts only if captures are on."""
        memory = self.memory
        if memory is None or memory.recall == "off":
            return None
        memories = self._kept_facts()
        assert memories is not None
        assert self._memories is not None
        if memory.capture == "off" and not memories.exist():
            return None
        return self._memories[2]

    def _output_spec(self) -> Output | None:
        if self.output_type is None:
            return None
        if self._output is None or self._output.type is not self.output_type:
            self._output = Output(self.output_type)
        return self._output

    def _planning_tools(self) -> list[Tool]:
        if self._plan is None:
            from ..planning import plan_tool, todo_tool

            profiles = list(self._subagents.agents) if self._subagents else []
            self._plan = [plan_tool(self.planner or self._model, profiles=profiles), todo_tool()]
        return self._plan

    def _spawn_tool(self) -> Tool:
        if self._spawn is None:
            from ..subagents import Brief, spawn_agent_tool

            settings = self._subagents or Subagents()
            brief = Brief(max_steps=settings.max_steps, timeout=settings.timeout)

            def copy() -> ChildAgent:  # one level deep: the copy offers no spawn_agent
                return self._copy(subagents=False, memory=None)

            self._spawn = spawn_agent_tool(copy, settings.agents, brief)
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

    def _sections(
        self, mode: Mode | None, workspace: Workspace, session_id: str | None = None
    ) -> list[SectionSource]:
        names = frozenset(t.name for t in self._tools(mode))
        spill = self._readable()[0] if self._readable() and "read_file" in names else None
        return [
            BaseSection(self.system_prompt),
            ModeSection(mode),
            TextSection(self.instructions),
            ProjectInstructions(tuple(self.instruction_files)),
            SkillsSection(self._skills()[0]),
            ToolNotes(
                spill,
                workspace.root,
                tools=names,
                commands=_runs_commands(mode),
                compute=self.guards.compute,
            ),
            *self._recall(workspace, session_id),
            *self.prompt_sections,
        ]

    def _recall(self, workspace: Workspace, session_id: str | None) -> list[SectionSource]:
        """ "What you remember", when the run may read memory."""
        memory, memories = self.memory, self._kept_facts()
        if memory is None or memories is None or memory.recall == "off":
            return []
        from ..memory import RecallSection

        assert self._memories is not None
        scopes = memory.readable(str(project_root(workspace.root)), session_id)
        return [RecallSection(memories, scopes, memory.budget, self._memories[3])]

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


def _resolve(name: str) -> Model:
    """The model a name says (a summarizer's): the config files are read only if one is."""
    from ._resolve import resolve_model

    return resolve_model(name)


def _embeddings(chosen: str | Embeddings | None) -> Embeddings | None:
    """Memory's embedding model: a string is resolved as a model's is (its server and key)."""
    if not isinstance(chosen, str):
        return chosen
    from ._resolve import resolve_embeddings

    return resolve_embeddings(chosen)


def _runs_commands(mode: Mode | None) -> bool:
    """Whether run_command may run in this mode: a read-only mode refuses commands."""
    return mode is None or mode.folder is None
