"""Replay regressions: a recorded run driven again through today's harness, the model's
recorded replies in place of the model (no model call), its approvals and answers as they were
given; where today's events first differ from the recorded ones is the report (seq, before,
after), and the replay stops there (replies past it would be invented)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..agent import Agent, Ask, Budgets
from ..context import ContextSettings
from ..core._approval import Approval, ApprovalHandler, ApprovalMode, ApprovalRequest
from ..core._cancel import Cancel
from ..core._errors import ToolError, UsageError
from ..core._events import (
    EVENT,
    Checkpoint,
    Event,
    FilesRestored,
    MemoryUpdated,
    ModelResponded,
    PermissionDecided,
    QuestionAnswered,
    RunStarted,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from ..core._log import EventLog
from ..core._messages import ToolResultMessage
from ..core._questions import Asker, QuestionRequest
from ..permissions import Permissions
from ..policies import Guards
from ..sandbox import SandboxMode, SandboxPolicy
from ..testing import ScriptedModel
from ..tools import BUILTIN_TOOLS, Tool, ToolContext, calculate

ReplayAgentFactory = Callable[
    [RunStarted, Path, ApprovalHandler | ApprovalMode, Asker | None], Agent
]
"""Builds today's agent for a recorded run (its tools and caps from the run's config, the
guards and policies as configured now), working in the workspace given, with the approval
and question handlers given (the recorded answers)."""

IGNORED = {"ts", "run_id", "session_id", "v", "seq"}
"""What differs between any two runs, and says nothing of the harness (events are compared
in order; a log's checkpoints, not compared, shift the seqs of those after them)."""
IGNORED_BY_KIND: dict[str, set[str]] = {
    # the workspace, today's prompt; where memory's reading starts (a replay keeps none)
    "run_started": {"config", "messages", "grants", "remembered"},
    "model_request": {"estimated_tokens"},
    "model_response": {"usage", "cost", "model", "finish"},  # the recorded model's own
    # a diff is for people (older logs have none); the model, and so the run, never sees it
    "tool_call_finished": {"duration_ms", "usage", "cost", "diff"},
    "permission_decided": {"by", "rule", "grant"},  # who answered: the replay, now
}


@dataclass(frozen=True)
class Divergence:
    seq: int
    """Where they differ: the recorded event's seq (today's, past the recorded run's end)."""
    before: dict[str, Any] | None
    """The recorded event there (none: the replay went on past the recorded run's end)."""
    after: dict[str, Any] | None
    """Today's event there (none: the replay ended before the recorded run did)."""


@dataclass(frozen=True)
class Replayed:
    run_id: str
    """The recorded run."""
    replay_run_id: str
    compared: int
    """Events that matched before the divergence (all of them, if none)."""
    divergence: Divergence | None


async def replay_run(
    log: EventLog,
    run_id: str,
    *,
    workspace: Path | None = None,
    permissions: Permissions | None = None,
) -> Replayed:
    """Replay `run_id` of `log` in a copy of `workspace` (else an empty folder), with the
    permission rules given (the run's own are not recorded): its first divergence from the
    recorded events, if any. The replay is recorded in `log` too, as a run of its own."""
    return await replay_events(
        await log.events(run_id), log, workspace=workspace, permissions=permissions
    )


async def replay_events(
    recorded: Sequence[Event],
    log: EventLog,
    *,
    workspace: Path | None = None,
    permissions: Permissions | None = None,
) -> Replayed:
    """As `replay_run`, for a run's events read from elsewhere (a file of them checked in as a
    regression test, `reins replay RUN --json`); the replay is recorded in `log`."""
    # Checkpoints say where the files were kept, memory what was kept across sessions, not
    # what the harness did in the run: not compared (a replay keeps neither).
    recorded = [
        e
        for e in recorded
        if not isinstance(e, TextDelta | Checkpoint | FilesRestored | MemoryUpdated)
    ]
    first = recorded[0] if recorded else None
    if not isinstance(first, RunStarted):
        raise UsageError("the events hold no run_started to replay from")
    run_id = first.run_id
    if first.config.parent_run_id is not None:
        raise UsageError(f"run {run_id} is a subagent's: replay the run that started it")
    if sum(isinstance(e, RunStarted) for e in recorded) > 1 or any(
        e.kind == "run_resumed" for e in recorded
    ):
        raise UsageError(f"run {run_id} was resumed: only a run recorded in one go replays")
    replies = [e.message for e in recorded if isinstance(e, ModelResponded)]
    decided = {e.call_id: e for e in recorded if isinstance(e, PermissionDecided)}
    answered = {e.call_id: e for e in recorded if isinstance(e, QuestionAnswered)}
    root = Path(first.config.workspace)
    with tempfile.TemporaryDirectory(prefix="reins-replay-") as folder:
        place = Path(folder) / "workspace"
        if workspace is not None:
            shutil.copytree(workspace, place, symlinks=True)
        else:
            place.mkdir()
        # A run with approvals off (`--yes`) recorded no request: so is it replayed.
        auto = any(d.by == "auto" for d in decided.values())
        approval: ApprovalHandler | ApprovalMode = "allow" if auto else _as_decided(decided)
        agent = _as_recorded(
            first,
            place,
            log,
            approval,
            _as_answered(answered) if answered else None,
            permissions,
            _played_back(recorded),
        )
        cancel = Cancel()
        stream = agent.iter(first.goal, cancel=cancel, model=ScriptedModel(replies))
        compared = 0
        divergence: Divergence | None = None
        replay_id = ""
        async for event in stream:
            if isinstance(event, TextDelta | ThinkingDelta | SubagentEvent):
                continue
            replay_id = replay_id or event.run_id
            before = recorded[compared] if compared < len(recorded) else None
            shown_before = _comparable(before, root) if before is not None else None
            shown_after = _comparable(event, place)
            if shown_before != shown_after:
                at = before.seq if before is not None else event.seq  # as `reins show` has it
                divergence = Divergence(at, shown_before, shown_after)
                cancel.cancel()  # it ends, on record, as cancelled: nothing past it is invented
                async for _ in stream:
                    pass
                break
            compared += 1
        if divergence is None and compared < len(recorded):
            divergence = Divergence(
                recorded[compared].seq, _comparable(recorded[compared], root), None
            )
    return Replayed(run_id, replay_id, compared, divergence)


def _as_recorded(
    first: RunStarted,
    workspace: Path,
    log: EventLog,
    approval: ApprovalHandler | ApprovalMode,
    ask: Asker | None,
    permissions: Permissions | None,
    played: Sequence[Tool] = (),
) -> Agent:
    """Today's agent with the recorded run's settings: its tools, caps, guards, checks,
    context, mode and sandbox as the run's config holds them (so only the harness's code,
    not a setting, can make it differ); its model is the replies, given to `iter`."""
    config = first.config
    builtin = {t.name: t for t in (*BUILTIN_TOOLS, calculate, *played)}
    return Agent(
        model=ScriptedModel([]),
        tools=[builtin[name] for name in config.tools if name in builtin],
        workspace=workspace,
        log=log,
        checkpoints=False,  # the replay's workspace is thrown away
        mode=config.mode,
        budgets=Budgets(
            max_steps=config.max_steps,
            token_budget=config.token_budget,
            cost_budget=config.cost_budget,
            notices=config.budget_notices,
            at_cap=config.at_cap,
        ),
        max_parallel_tools=config.max_parallel_tools,
        permissions=permissions or Permissions(),
        approval=approval,
        ask=Ask(answer=ask) if ask is not None else None,
        sandbox=SandboxPolicy(mode=cast(SandboxMode, config.sandbox), network=config.network),
        guards=config.guards or Guards(),
        checks=list(config.checks),
        reflect=config.reflect,
        reflect_max_retries=config.reflect_max_retries,
        context=config.context or ContextSettings(),
        defer_tools_above=config.defer_tools_above,
    )


def _played_back(recorded: Sequence[Event]) -> list[Tool]:
    """`memory_search` answering what it answered the run: it reads what the memory held
    then, which a replay does not keep (and which may have changed since). Calls are matched
    by their arguments, in the order they were made."""
    from ..memory import Memories, Memory, memory_search_tool

    real = memory_search_tool(Memories(Path(os.devnull)), Memory())  # its name and schema

    def key(arguments: dict[str, Any]) -> str:
        with contextlib.suppress(ValueError):  # a call refused as malformed: the same again
            arguments = real.args_model.model_validate(arguments).model_dump()  # with defaults
        return json.dumps(arguments, sort_keys=True, default=str)

    started = {
        e.call.id: e.call
        for e in recorded
        if isinstance(e, ToolCallStarted) and e.call.name == real.name
    }
    results: dict[str, list[ToolResultMessage]] = {}
    for e in recorded:
        if isinstance(e, ToolCallFinished) and (call := started.get(e.result.call_id)):
            results.setdefault(key(call.arguments), []).append(e.result)
    if not started:
        return []

    async def memory_search(ctx: ToolContext, **arguments: Any) -> str:
        kept = results.get(key(arguments))
        if not kept:
            raise ToolError("this call was not in the recorded run")
        result = kept.pop(0)
        if result.is_error:
            raise ToolError(result.content.removeprefix("error: "))
        return result.content

    return [dataclasses.replace(real, fn=memory_search)]


def _comparable(event: Event, workspace: Path) -> dict[str, Any]:
    """The event as the harness decided it: what any two runs differ in left out, and the
    run's workspace path written as `<workspace>`."""
    data: dict[str, Any] = EVENT.dump_python(event, mode="json")
    ignored = IGNORED | IGNORED_BY_KIND.get(event.kind, set())
    kept = {k: v for k, v in data.items() if k not in ignored}
    unplaced: dict[str, Any] = _unplaced(kept, re.compile(re.escape(str(workspace.resolve()))))
    return unplaced


def _unplaced(value: Any, path: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return path.sub("<workspace>", value)
    if isinstance(value, dict):
        return {k: _unplaced(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_unplaced(v, path) for v in value]
    return value


def _as_decided(decided: dict[str, PermissionDecided]) -> Callable[[ApprovalRequest], Approval]:
    def answer(request: ApprovalRequest) -> Approval:
        given = decided.get(request.call.id)
        return Approval(given.allowed, always=given.always) if given else Approval(False)

    return answer


def _as_answered(answered: dict[str, QuestionAnswered]) -> Callable[[QuestionRequest], str | None]:
    def answer(request: QuestionRequest) -> str | None:
        given = answered.get(request.call_id)
        return given.answer if given else None

    return answer
