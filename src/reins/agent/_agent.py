"""`Agent`: the Python API. Starts, continues and resumes runs recorded in an event log.

What an agent is made of is in `_fields`; how a run of it is put together, in `_assembly` (its
pieces) and `_begin` (its first events)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeAlias, get_origin, overload

from typing_extensions import TypeVar

from ..core._cancel import Cancel
from ..core._errors import UsageError
from ..core._events import ContextCompacted, FilesRestored
from ..core._messages import (
    AssistantMessage,
    Goal,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from ..core._model import Model
from ..core._state import RunState
from ..mcp import start_all, stop_all
from ..permissions import Approval
from ..policies import Guards
from ..tools import Tool
from ._assembly import RunAssembly
from ._begin import Caps, resume_run, start_run
from ._fields import DepsT, OutputT, check_cost_budget
from ._fork import fork_run
from ._run import AgentRun, Begin, RunResult
from ._spellings import old_spellings
from ._undo import rewind_run, run_diff, undo_run

if TYPE_CHECKING:
    from ..subagents import Handoff


History: TypeAlias = "Sequence[Message] | RunResult[Any]"
"""What a run may start from: messages, or a run's result (its `messages`)."""

RunOutputT = TypeVar("RunOutputT")


@old_spellings
@dataclass(kw_only=True)
class Agent(RunAssembly[DepsT, OutputT]):
    """A model, tools and policies (its fields: `AgentFields`). Reusable: every run's state
    lives in `log`. Generic in what its tools get as deps and what `result.output` is:
    `Agent[Db, Person]`, inferred from `deps_type` and `output_type`."""

    _running: dict[str, AgentRun[Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    async def __aenter__(self) -> Self:
        """Start the MCP servers, for every run until the `async with` ends."""
        await start_all(self.servers)
        self._held += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._held -= 1
        if not self._held:
            await stop_all(self.servers)

    def steer(self, session_id: str, text: str) -> None:
        """Steer the run of `session_id` this agent is running (`AgentRun.steer`), from any
        thread or task: for a server that holds session ids, not run objects."""
        running = self._running.get(session_id)
        if running is None:
            raise UsageError(f"no run of session {session_id} is running in this agent")
        running.steer(text)

    @overload
    async def run(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: None = None,
        message_history: History | None = None,
    ) -> RunResult[OutputT]: ...

    @overload
    async def run(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[RunOutputT],
        message_history: History | None = None,
    ) -> RunResult[RunOutputT]: ...

    async def run(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[Any] | None = None,
        message_history: History | None = None,
    ) -> RunResult[Any]:
        """Run `goal` (text, or a list of texts, `Image`s and `Document`s) to the end (a new
        turn of `session_id`, or a new session); the tools get `deps` as `ctx.deps`. For this
        run only: `model` (a model or its name) and `output_type` in place of the agent's;
        `message_history` (messages, or a previous `RunResult`) a new session starts from,
        after its own system prompt."""
        stream = self._stream(
            goal,
            session_id=session_id,
            cancel=cancel,
            deps=deps,
            model=model,
            output_type=output_type,
            message_history=message_history,
        )
        return await stream.result()

    @overload
    def run_sync(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: None = None,
        message_history: History | None = None,
    ) -> RunResult[OutputT]: ...

    @overload
    def run_sync(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[RunOutputT],
        message_history: History | None = None,
    ) -> RunResult[RunOutputT]: ...

    def run_sync(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[Any] | None = None,
        message_history: History | None = None,
    ) -> RunResult[Any]:
        """`run` for code that is not async (`cancel.cancel()` from another thread stops it).
        Inside a running event loop (a notebook, an async server), `await agent.run(...)`
        instead."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            stream = self._stream(
                goal,
                session_id=session_id,
                cancel=cancel,
                deps=deps,
                model=model,
                output_type=output_type,
                message_history=message_history,
            )
            return asyncio.run(stream.result())
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
    ) -> RunResult[OutputT]:
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

    @overload
    def iter(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: None = None,
        message_history: History | None = None,
        new_session: bool = False,
    ) -> AgentRun[OutputT]: ...

    @overload
    def iter(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[RunOutputT],
        message_history: History | None = None,
        new_session: bool = False,
    ) -> AgentRun[RunOutputT]: ...

    def iter(
        self,
        goal: Goal,
        *,
        session_id: str | None = None,
        cancel: Cancel | None = None,
        deps: DepsT | None = None,
        model: Model | str | None = None,
        output_type: type[Any] | None = None,
        message_history: History | None = None,
        new_session: bool = False,
    ) -> AgentRun[Any]:
        """Like `run`, as an async iterable of the run's events. With `new_session`, the
        run begins a new session whose id is `session_id` (a front end that named the session
        before its first turn: an editor's ACP `session/new`); no run of the log may have it."""
        return self._stream(
            goal,
            session_id=session_id,
            cancel=cancel,
            deps=deps,
            model=model,
            output_type=output_type,
            message_history=message_history,
            new_session=new_session,
        )

    def _stream(
        self,
        goal: Goal,
        *,
        session_id: str | None,
        cancel: Cancel | None,
        deps: DepsT | None,
        model: Model | str | None,
        output_type: type[Any] | None,
        message_history: History | None,
        new_session: bool = False,
    ) -> AgentRun[Any]:
        agent = self._for_run(model, output_type)
        agent._check_deps(deps)
        if new_session and session_id is None:
            raise UsageError("new_session names the new session: give its session_id")
        preface = _preface(message_history, None if new_session else session_id)
        return AgentRun(
            lambda: start_run(
                agent, goal, session_id, cancel, deps=deps, preface=preface, fresh=new_session
            ),
            agent._next_turns(cancel, deps),
            self._running,
            agent._output_spec(),
        )

    def _for_run(self, model: Model | str | None, output_type: type[Any] | None) -> Agent[Any, Any]:
        """This agent, or a copy with this run's model or output type (its MCP servers the
        same, not new processes)."""
        if model is None and output_type is None:
            return self
        changes: dict[str, Any] = {"mcp_servers": self.servers}
        if model is not None:
            changes["model"] = model  # recorded as this model's string or name
        if output_type is not None:
            changes["output_type"] = output_type
        copy = self._copy(**changes)
        copy._running = self._running  # agent.steer(session_id, ...) finds its runs
        return copy

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
    ) -> AgentRun[Any]:
        """A subagent's run (`reins.subagents`): a new session, linked to the parent's run
        and tool call (`parent`) in its log, `preface` before the goal."""
        return AgentRun(
            lambda: start_run(self, goal, None, cancel, parent=parent, preface=preface, deps=deps),
            output=self._output_spec(),
        )

    def child_run(self, task: str, handoff: Handoff) -> AgentRun[Any]:
        """`task` as a child run (`reins.subagents`): a copy of this agent recorded in the
        parent's store, in its workspace, with the brief's tools, instructions and caps, and
        budgets no larger than what the parent's have left; at a cap it sums up what it did."""
        brief, left = handoff.brief, handoff.left
        tokens = _least(self.token_budget, left["token_budget"])
        child = self._copy(
            log=handoff.log,
            workspace=handoff.workspace,
            tools=[t for t in self.tools if t.name not in set(brief.exclude_tools)],
            instructions="\n\n".join(p for p in (self.instructions, brief.briefing) if p),
            system_prompt=brief.system_prompt or self.system_prompt,
            budgets=dataclasses.replace(
                self.budgets,
                max_steps=brief.max_steps,
                token_budget=None if tokens is None else int(tokens),
                cost_budget=_least(self.cost_budget, left["cost_budget"]),
                time_budget=_least(_least(self.time_budget, brief.timeout), left["time_budget"]),
                at_cap="summarize",  # at a cap the parent still gets what was done
                on_cap=None,
            ),
            mcp_servers=self.servers,  # the same servers, not new processes
            memory=None,  # the parent's run recalls and captures
        )
        return child.child_iter(
            task,
            parent=handoff.parent,
            preface=handoff.preface,
            cancel=handoff.cancel,
            deps=handoff.deps,  # the parent's, passed on
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
            return lambda: start_run(self, goal, session_id, cancel, deps=deps)

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
    ) -> AgentRun[OutputT]:
        """Like `resume`, as an async iterable of events."""
        self._check_deps(deps)
        check_cost_budget(self.model, cost_budget)
        caps = Caps(max_steps, token_budget, time_budget, cost_budget)
        return AgentRun(
            lambda: resume_run(
                self, run_id, caps, approvals or {}, cancel, guards, answers or {}, deps
            ),
            self._next_turns(cancel, deps),
            self._running,
            self._output_spec(),
        )

    async def fork(
        self, run_id: str, *, at_seq: int | None = None, step: int | None = None
    ) -> tuple[str, str]:
        """Fork a run of this agent's log after its event `at_seq`, or after step `step`, or
        at its end: a new session whose run holds the run's events up to there (the original
        untouched), then `forked_from`. `resume` goes on with the fork's run; `run(goal,
        session_id=...)` starts a new turn of its session. The fork's session and run ids."""
        return await fork_run(self.log, run_id, at_seq=at_seq, step=step)

    async def diff(self, run_id: str, *, step: int | None = None) -> str:
        """What a run of this agent's log changed in its workspace (or its step `step`), as a
        unified diff, from its checkpoints ("": nothing)."""
        return await run_diff(self.log, run_id, step=step)

    async def undo(self, run_id: str, *, to_step: int = 0, force: bool = False) -> FilesRestored:
        """Put back the files a stopped run changed after step `to_step` (0: all it changed)
        as they were, recorded in its log (`files_restored`). A file someone else changed
        since the run stopped is refused, with the list (`UsageError`), unless `force`."""
        return await undo_run(self.log, run_id, to_step=to_step, force=force)

    async def rewind(
        self, run_id: str, *, step: int, force: bool = False
    ) -> tuple[str, str, FilesRestored | None]:
        """`fork` a run after step `step` and put its workspace's files back as that step
        left them: the fork's session and run ids, and what was put back (None: nothing
        changed after that step). `resume` the fork, or start a new turn of its session."""
        return await rewind_run(self.log, run_id, step=step, force=force)

    async def state(self, run_id: str) -> RunState:
        """The run's state, folded from its log."""
        return RunState.fold(await self.log.events(run_id))

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
            builder = self._context_builder(state.config.model, settings, specs)
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


@old_spellings
@dataclass(kw_only=True)
class ReflectiveAgent(Agent[DepsT, OutputT]):
    """An `Agent` that reflects on each step (`reflect=True`): the same loop, one more policy."""

    reflect: bool = True


_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)


def _preface(history: History | None, session_id: str | None) -> list[Message]:
    """The messages a new session starts from, after its own system prompt (theirs left out:
    the run has its own); recorded in its `run_started`, so a resume or a replay has them."""
    if history is None:
        return []
    if session_id is not None:
        raise UsageError(
            "message_history starts a new session; session_id goes on with one: give one of them"
        )
    messages = history.messages if isinstance(history, RunResult) else history
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise UsageError(
            f"message_history is a {type(history).__name__}: give a list of messages "
            "(reins.UserMessage, ...) or a RunResult"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, _MESSAGE_TYPES):
            raise UsageError(
                f"message_history[{index}] is a {type(message).__name__}, not a reins message "
                "(UserMessage, AssistantMessage, ToolResultMessage)"
            )
    return [m for m in messages if not isinstance(m, SystemMessage)]


def _least(a: float | int | None, b: float | int | None) -> float | int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
