"""How a run begins: its first events recorded (a new run's start and its notices; a resume's
new caps and the answers it brings), then its loop assembled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..context._modes import Mode, resolve_mode
from ..context._sections import PromptContext, build_prompt, prepare_sections
from ..core._cancel import Cancel
from ..core._catalog import UNKNOWN, lookup, priced, served_at
from ..core._errors import UsageError
from ..core._events import (
    Event,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    RunConfig,
    RunResumed,
    RunStarted,
)
from ..core._ids import new_run_id, new_session_id
from ..core._loop import RunLoop
from ..core._messages import Goal, Message, SystemMessage, UserMessage, goal_message
from ..core._model import takes_media
from ..core._state import RunState
from ..core._stop import StopReason
from ..permissions import Approval
from ..policies import CAP_REASONS, Guards
from ..policies._budgets import CONTINUING
from ..tools import Workspace
from ..tracing import tracer_for
from ._assembly import RunAssembly
from ._fields import check_cost_budget


async def start_run(
    agent: RunAssembly[Any, Any],
    goal: Goal,
    session_id: str | None,
    cancel: Cancel | None,
    *,
    parent: tuple[str, str] | None = None,
    preface: Sequence[Message] = (),
    deps: Any = None,
    fresh: bool = False,
) -> tuple[list[Event], RunLoop]:
    """Record the start of a run of `goal` (a new session, or the next turn of `session_id`;
    with `fresh`, a new session whose id is `session_id`) and its notices; the events
    recorded, and the loop that drives the run on."""
    asked = goal_message(goal)  # an argument that was not UTF-8 holds lone surrogates
    goal = _title(asked)
    tracer = tracer_for(agent.instrument, parent)  # settled before anything is recorded
    workspace = agent._workspace()
    mode, unknown = resolve_mode(agent.mode)
    notes = [unknown] if unknown else []
    if fresh and session_id is not None and await agent.log.runs(session_id):
        raise UsageError(f"session {session_id} is in this log already: it cannot begin anew")
    if session_id is None or fresh:
        session_id = session_id or new_session_id()
        prompt = PromptContext(workspace=workspace.root, goal=goal, approvals=agent._may_ask())
        sections = agent._sections(mode, workspace, session_id)
        await prepare_sections(sections, prompt)
        system = build_prompt(sections, prompt)
        history: list[Message] = [SystemMessage(content=system), *preface]
        notes += prompt.notes
        notes += agent._skills()[1]
        started = _run_started(
            agent,
            session_id,
            asked,
            workspace,
            history,
            mode=mode,
            parent=parent,
            # A preface given is not the session's to capture (no memory: nothing to say).
            remembered=len(history) if agent.memory is not None else 0,
        )
        await agent.log.append(started)
    else:
        # The session is ours before its history is read: a turn never forks it.
        agent.log.claim(session_id)
        try:
            history, grants, remembered = await _session_history(agent, session_id)
            started = _run_started(
                agent,
                session_id,
                asked,
                workspace,
                history,
                grants,
                mode=mode,
                remembered=remembered,
            )
            await agent.log.append(started)
        except BaseException:
            agent.log.release(session_id)
            raise
    state = RunState.fold([started])
    loop = await agent._started_loop(state, cancel, workspace, deps, tracer)
    first: list[Event] = [started]
    told = [("prompt", text) for text in notes]
    if asked.media and not takes_media(agent._model):
        told.append(
            (
                "media",
                f"model {started.config.model!r} takes no images or documents: it is told that "
                f"{len(asked.media)} of them were given, and sees none",
            )
        )
    if not getattr(agent.model, "offline", False) and (note := _catalog_note(agent, started)):
        told.append(("catalog", note))
    for source, text in told:
        notice = Notice(
            session_id=session_id,
            run_id=started.run_id,
            seq=state.next_seq,
            source=source,
            level="warning",
            text=text,
        )
        await agent.log.append(notice)
        state.apply(notice)
        first.append(notice)
    return first, loop


def _title(asked: UserMessage) -> str:
    """The goal as the run index shows it: its text, else what it gave."""
    return asked.content or ", ".join(m.describe() for m in asked.media)


def _catalog_note(agent: RunAssembly, started: RunStarted) -> str:
    """What the catalog does not know of the run's model and assumes instead, if anything."""
    name, at = started.config.model, served_at(agent.model)
    window = (started.config.context or agent.context).window
    unpriced = not priced(name, at=at)
    where = f" (served at {at})" if at else ""
    entry = f'[models."{name}"] in your config'
    if not lookup(name).known and window is None:
        cost = ", no price (cost not counted)" if unpriced else ""
        return (
            f"model {name!r} is not in the catalog: assuming a {UNKNOWN.context_window}-token "
            f"context{cost}; give its window with --context-window or {entry} (context_window"
            f"{', input_price, output_price' if unpriced else ''})"
        )
    if unpriced:
        return (
            f"no price is known for model {name!r}{where}: its cost is not counted; give its "
            f"prices in {entry} (input_price, output_price: US dollars per million tokens)"
        )
    return ""


def _run_started(
    agent: RunAssembly[Any, Any],
    session_id: str,
    asked: UserMessage,
    workspace: Workspace,
    history: list[Message],
    grants: tuple[str, ...] = (),
    *,
    mode: Mode | None = None,
    parent: tuple[str, str] | None = None,
    remembered: int = 0,
) -> RunStarted:
    tools = agent._tools(mode)
    config = RunConfig(
        model=agent.model_id or agent._model.name,
        workspace=str(workspace.root),
        max_steps=agent.max_steps,
        tools=tuple(t.name for t in tools),
        read_only_tools=tuple(t.name for t in tools if t.read_only),
        max_parallel_tools=agent.max_parallel_tools,
        token_budget=agent.token_budget,
        time_budget=agent.time_budget,
        cost_budget=agent.cost_budget,
        budget_notices=agent.budgets.notices,
        at_cap=agent.at_cap,
        sandbox=agent.sandbox.mode,
        network=agent.sandbox.network,
        guards=agent.guards,
        checks=tuple(agent._checks.commands),
        reflect=agent.reflect,
        reflect_max_retries=agent.reflect_max_retries,
        context=agent.context,
        mode=mode.name if mode is not None else None,
        profile=agent.profile,
        profile_inferred=agent.profile_inferred,
        mcp_servers=tuple(s.name for s in agent.servers),
        defer_tools_above=agent.defer_tools_above,
        parent_run_id=parent[0] if parent else None,
        parent_call_id=parent[1] if parent else None,
    )
    return RunStarted(
        session_id=session_id,
        run_id=new_run_id(),
        seq=1,
        goal=_title(asked),
        config=config,
        messages=(*history, asked),
        grants=grants,
        remembered=remembered,
    )


async def resume_run(
    agent: RunAssembly[Any, Any],
    run_id: str,
    caps: Caps,
    approvals: Mapping[str, Approval | bool],
    cancel: Cancel | None,
    guards: Guards | None = None,
    answers: Mapping[str, str | None] | None = None,
    deps: Any = None,
) -> tuple[list[Event], RunLoop]:
    """Go on with `run_id` from its log, claimed first: a `run_resumed` with the caps in force,
    the approvals and answers it brings; the events recorded, and the loop."""
    tracer = tracer_for(agent.instrument)  # settled before anything is recorded
    state = RunState.fold(await agent.log.events(run_id))
    agent.log.claim(state.session_id, run_id)
    try:
        state = RunState.fold(await agent.log.events(run_id))  # as it stands, claimed
        await _check_latest(agent, state)
        # The run's own budget, kept on: refused as a new one would be if no longer priced
        # (the model served elsewhere now).
        check_cost_budget(agent.model, caps.cost_budget or state.config.cost_budget)
        return await _resumed(
            agent, state, caps, approvals, cancel, guards, answers or {}, deps, tracer
        )
    except BaseException:
        agent.log.release(state.session_id, run_id)
        raise


async def _check_latest(agent: RunAssembly[Any, Any], state: RunState) -> None:
    """Only a session's latest run may go on: a later turn has closed its open calls
    ("not run") in the history the model sees, and runs after it would not see its work."""
    runs = await agent.log.runs(state.session_id)
    ids = [r.run_id for r in runs]
    if state.run_id in ids and ids[-1] != state.run_id:
        raise UsageError(
            f"run {state.run_id} cannot go on: its session went on with a later turn "
            f"(run {ids[-1]}); continue the session with a new goal instead"
        )


async def _resumed(
    agent: RunAssembly[Any, Any],
    state: RunState,
    caps: Caps,
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
        guards=_guards_from_here(state.config.guards, guards, agent.guards),
    )
    await agent.log.append(resumed)
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
        await agent.log.append(note)
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
        await agent.log.append(decided)
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
        await agent.log.append(replied)
        state.apply(replied)
        first.append(replied)
    return first, await agent._started_loop(state, cancel, deps=deps, tracer=tracer)


async def _session_history(
    agent: RunAssembly[Any, Any], session_id: str
) -> tuple[list[Message], tuple[str, ...], int]:
    """The session's conversation so far, what was allowed "always" in it, and how much of
    it the memory has read."""
    runs = await agent.log.runs(session_id)
    if not runs:
        raise UsageError(f"no session {session_id!r} in this log; `reins sessions` lists them")
    last = RunState.fold(await agent.log.events(runs[-1].run_id))
    return last.transcript(), tuple(sorted(last.grants)), last.remembered_in_transcript()


@dataclass(frozen=True)
class Caps:
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
