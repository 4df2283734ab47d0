"""Run events: the append-only record every other part of reins reads.

Each event is a frozen model discriminated by `kind`. The envelope (`session_id`, `run_id`,
a gap-free per-run `seq`, a UTC `ts` and the schema version `v`) is the same for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ._context_settings import ContextSettings
from ._guard_settings import Guards
from ._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage
from ._stop import StopReason

SCHEMA_VERSION = 1


FinishReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]
"""Why the model stopped producing one response, mapped from each provider's signal."""


class RunConfig(BaseModel):
    """What a run needs to be resumed from its log alone."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model: str
    """The model string, e.g. `script:demo.json`."""
    workspace: str
    """Absolute path of the directory tools work in."""
    max_steps: int
    """Cap on model responses in this run."""
    tools: tuple[str, ...] = ()
    """Names of the tools offered to the model."""
    read_only_tools: tuple[str, ...] | None = None
    """Those of `tools` that are read-only (None in logs older than this field: then every
    call that started is taken to have had effects)."""
    max_parallel_tools: int = 4
    sandbox: str = "workspace-write"
    """The sandbox tier its commands ran in; `reins resume` keeps it unless told otherwise."""
    network: bool = False
    """Whether its commands could use the network."""
    token_budget: int | None = None
    """Cap on the tokens (input + output) of all its model calls; None: no cap."""
    time_budget: float | None = None
    """Cap on its wall-clock seconds, counted over the spans it was running (see
    `RunState.elapsed`); None: no cap."""
    cost_budget: float | None = None
    """Cap on its cost in US dollars (calls whose price is known); None: no cap."""
    budget_notices: bool = True
    """Whether the model was told what is left of its budgets (`BudgetNotices`)."""
    at_cap: Literal["stop", "summarize"] = "stop"
    """What a cap ends the run with: nothing more, or one last call in which no tool may be
    called, whose reply is the (partial) answer."""
    guards: Guards | None = None
    """Its guards and their settings; a resume keeps them unless told otherwise (None in logs
    older than this field: then a resume records the resuming agent's, and until then no
    reply's text was collapsed)."""
    checks: tuple[str, ...] = ()
    """The commands that had to pass before its final answer stood; `reins resume` keeps them."""
    reflect: bool = False
    """A reflection (a model call judging the step) followed each step whose tools ran."""
    reflect_max_retries: int = 3
    """Reflections judging a step failed, in a row, that end the run (`stalled`)."""
    context: ContextSettings | None = None
    """How its context was kept inside the model's window (None in logs older than this
    field: the defaults)."""
    mode: str | None = None
    """Its mode (`explore`, `plan`, `write-test`, `write-no-test`); None: none."""
    profile: str | None = None
    """The config profile it was made from; None: none."""
    profile_inferred: bool = False
    """The profile was inferred from the goal, not chosen."""
    defer_tools_above: int | None = None
    """Past this many tools, the model was offered the built-ins, `tool_search` and
    `tool_load` in place of the others' schemas; None: every tool, always."""
    parent_run_id: str | None = None
    """A subagent's run: the run whose tool call started it."""
    parent_call_id: str | None = None
    """That tool call's id."""
    mcp_servers: tuple[str, ...] = ()
    """The MCP servers whose tools it was offered (they are not in `tools`: they come and
    go with the servers, and a resume offers what they have then)."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    v: int = SCHEMA_VERSION
    session_id: str
    run_id: str
    seq: int
    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))


class RunStarted(_Event):
    """A run began: its goal, its configuration and the whole context it starts from."""

    kind: Literal["run_started"] = "run_started"
    goal: str
    config: RunConfig
    messages: tuple[Message, ...]
    """The whole context the run starts from: system prompt, earlier turns, the goal."""
    grants: tuple[str, ...] = ()
    """What a person allowed "always" in the session's earlier runs."""
    remembered: int = Field(default=0, exclude_if=lambda v: v == 0)
    """How many of `messages` the session's memory has captured already (`reins.memory`):
    what a capture goes on from."""


class RunResumed(_Event):
    """A stopped run goes on (`Agent.resume`, `reins resume`), with the caps in force from here."""

    kind: Literal["run_resumed"] = "run_resumed"
    max_steps: int
    """The step cap in force from here on."""
    token_budget: int | None = None
    """The budgets in force from here on (None: no cap)."""
    time_budget: float | None = None
    cost_budget: float | None = None
    guards: Guards | None = None
    """The guards from here on, when they change (None: as they were)."""


class BudgetExtended(_Event):
    """At a cap, whoever was offered to continue chose more: the caps in force from here on."""

    kind: Literal["budget_extended"] = "budget_extended"
    source: str
    """The policy whose cap was reached."""
    choice: str
    """What was chosen, e.g. `+20 steps`."""
    max_steps: int
    token_budget: int | None = None
    time_budget: float | None = None
    cost_budget: float | None = None


class ModelRequested(_Event):
    """A model call of step `step` began."""

    kind: Literal["model_request"] = "model_request"
    step: int
    estimated_tokens: int | None = None
    """reins' estimate of the request's input tokens (characters over a ratio), for the
    provider's count of it to calibrate (`RunState.token_ratio`); None: nothing to calibrate."""


class TextDelta(_Event):
    """A chunk of the reply's text as it streamed: given to the stream's readers, never
    journaled (the `model_response` holds the whole text)."""

    kind: Literal["text_delta"] = "text_delta"
    step: int
    text: str


class ThinkingDelta(_Event):
    """A chunk of the model's reasoning as it streamed; as `TextDelta`, not journaled."""

    kind: Literal["thinking_delta"] = "thinking_delta"
    step: int
    text: str


class ModelResponded(_Event):
    """The model's whole reply of step `step`, what it used and, where known, what it cost."""

    kind: Literal["model_response"] = "model_response"
    step: int
    message: AssistantMessage
    usage: Usage
    finish: FinishReason
    model: str
    cost: float | None = None
    """US dollars, from the model catalog's prices; None where the price is unknown."""


class ToolCallStarted(_Event):
    """A tool call the policies and permissions let through began to run."""

    kind: Literal["tool_call_started"] = "tool_call_started"
    step: int
    call: ToolCall
    changed_by: str = ""
    """The policy (a `before_tool` command hook) that changed the model's arguments into
    these, the ones that ran; empty: the call as the model made it."""


class TodoItem(BaseModel):
    """One step of the run's todo list (`todo`, fed from `plan`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    text: str
    status: Literal["pending", "in_progress", "done", "cancelled"] = "pending"
    executor: str = "SELF"
    """Who does it: `SELF`, `TOOL: name` or `AGENT: profile`."""
    validation: str | None = None
    """How to tell it is done; marking it done then takes the evidence."""
    evidence: str | None = None


class ToolCallFinished(_Event):
    """A tool call's result (its observation), and how long it took."""

    kind: Literal["tool_call_finished"] = "tool_call_finished"
    step: int
    result: ToolResultMessage
    duration_ms: float = 0.0
    usage: Usage | None = None
    """What the call spent on model calls (a subagent's run): counted in this run's budgets."""
    cost: float | None = None
    todo: tuple[TodoItem, ...] | None = None
    """The run's todo list after the call, if it changed it (`plan`, `todo`)."""
    diff: str | None = Field(default=None, exclude_if=lambda diff: diff is None)
    """The change the call made to a file, as a short unified diff, for people: the model
    never sees it. Left out of the log when None (most calls change no file)."""


class ApprovalRequested(_Event):
    """A tool call waits for a person's yes or no."""

    kind: Literal["approval_requested"] = "approval_requested"
    step: int
    call: ToolCall
    rule: str
    """The rule that asked, e.g. `default: run_command asks`."""
    grant: str
    """What an answer of "always" allows for the rest of the session."""


class PermissionDecided(_Event):
    """A tool call allowed or denied before it ran: by a rule someone wrote, by an earlier
    "always", or by whoever answered its approval request."""

    kind: Literal["permission_decided"] = "permission_decided"
    step: int
    call_id: str
    tool: str
    allowed: bool
    rule: str
    by: Literal["rule", "session", "user", "auto", "headless"]
    """`auto`: approvals were turned off (`--yes`); `headless`: nobody could be asked."""
    always: bool = False
    """The person allowed `grant` for the rest of the session."""
    grant: str = ""


class ResponseRejected(_Event):
    """A policy refused the last response; its calls are not run and the model is told why."""

    kind: Literal["response_rejected"] = "response_rejected"
    step: int
    observation: str
    source: str
    temperature: float | None = None
    """The next request samples at this temperature at least (a repair that must differ)."""
    excluded_tools: tuple[str, ...] = ()
    """Tools the next reply may not call (`ModelSettings.excluded_tools`)."""
    argument_schemas: dict[str, dict[str, Any]] = {}
    """Schemas of some arguments for the next reply (`ModelSettings.argument_schemas`)."""


class AnswerRejected(_Event):
    """A policy refused a final answer (a stop hook, a failing check); the model is told why."""

    kind: Literal["answer_rejected"] = "answer_rejected"
    step: int
    observation: str
    source: str


class Reflected(_Event):
    """A reflection on a step whose tools ran (the Reflective agent): a model call judged it
    and chose what comes next."""

    kind: Literal["reflected"] = "reflected"
    step: int
    assessment: Literal["success", "failure", "partial", "unknown"]
    reasoning: str
    next_action: Literal["continue", "change_plan", "complete", "retry"]
    revised_approach: str = ""
    to_model: str = ""
    """What the model is told of it ("": nothing)."""
    usage: Usage
    cost: float | None = None
    model: str
    source: str


class Steered(_Event):
    """An instruction from the user, sent while the run ran; told to the model before the next
    round as `[STEER FROM USER — act on this now] text`."""

    kind: Literal["steered"] = "steered"
    text: str


class ContextCompacted(_Event):
    """The history sent to the model was compacted: from here on the model sees `prefix`
    (the system messages, what was pinned, the summary), then the run's messages from `cut`
    on. The log keeps every message; the view is a fold of these events."""

    kind: Literal["context_compacted"] = "context_compacted"
    prefix: tuple[Message, ...]
    cut: int
    """The index, in the run's whole history, of the first message kept verbatim."""
    method: Literal["summary", "digest"]
    """A model's summary, or the deterministic digest (no summarizer, or it failed)."""
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    forced: bool = False
    """Asked for (`Agent.compact`, `reins compact`), not triggered by the window."""
    usage: Usage = Usage()
    """The summarizer's call."""
    cost: float | None = None
    model: str = ""
    """The summarizer ("": none)."""
    detail: str = ""
    """Why the digest took the summary's place."""


class Notice(_Event):
    """Something worth telling; with `to_model` it is also said to the model."""

    kind: Literal["notice"] = "notice"
    text: str
    source: str
    level: Literal["info", "warning"] = "info"
    to_model: bool = False
    mark: str = ""
    """A budget mark this notice passed (e.g. `steps 50% of 20`): each is said once."""


class QuestionAsked(_Event):
    """The model asked the user a question (`ask_user`): it waits for the answer."""

    kind: Literal["question_asked"] = "question_asked"
    step: int
    call_id: str
    question: str
    choices: tuple[str, ...] = ()
    default: str


class ForkedFrom(_Event):
    """The run is a fork (`reins fork`, `Agent.fork`): its events before this one, and those
    after it up to the next that is not a copy, are another run's up to `from_seq`, in a new
    session; the original is untouched. Second in a fork's log, after its `run_started`."""

    kind: Literal["forked_from"] = "forked_from"
    from_run_id: str
    from_session_id: str
    from_seq: int
    """The original's last event the fork holds."""


class Checkpoint(_Event):
    """The workspace's files, kept in a shadow git repository in the store
    (`reins.checkpoints`): as they were before step `step` first changed them, or, `at_end`,
    as the run left them when it stopped. What `reins diff`, `undo` and `rewind` read."""

    kind: Literal["checkpoint"] = "checkpoint"
    step: int
    snapshot: str
    """The shadow repository's commit that holds them."""
    at_end: bool = False


class FilesRestored(_Event):
    """Files of the workspace were put back as they were at a checkpoint of this run (`reins
    undo`), or of the run a fork was made from (`reins rewind`)."""

    kind: Literal["files_restored"] = "files_restored"
    snapshot: str
    """The checkpoint's commit they were put back to."""
    to_step: int
    """The files as step `to_step` left them; 0: as they were before the run changed any."""
    paths: tuple[str, ...]
    """The files written back or removed, relative to the workspace."""
    forced: tuple[str, ...] = ()
    """Those changed since by someone else, overwritten all the same (`--force`)."""


class MemoryChange(BaseModel):
    """One change a capture made to the facts the agent keeps across sessions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["add", "update", "invalidate"]
    """A new fact; a fact replaced by a new one (the old closed); a fact closed."""
    fact: str
    """The id of the fact added, or of the fact closed (`invalidate`)."""
    text: str
    scope: Literal["user", "project", "session"]
    replaced: str | None = None
    """The fact an `update` closed."""
    evidence: str = ""
    """Why: the words of the conversation the change rests on."""


class MemoryUpdated(_Event):
    """The session's new messages were read for facts worth keeping across sessions, and the
    facts kept were changed (`reins.memory`): at a turn's end, or before a compaction takes
    messages out of the window. What the store holds is the fold of these across the log."""

    kind: Literal["memory_updated"] = "memory_updated"
    trigger: Literal["turn_end", "compaction"]
    through: int
    """The run's messages read so far: the next capture begins after them."""
    changes: tuple[MemoryChange, ...] = ()
    """What changed (nothing: no new fact, or each already known)."""
    left_out: tuple[str, ...] = ()
    """Why candidate facts were not kept (a secret's kind, evidence not in the conversation),
    without their text."""
    usage: Usage = Usage()
    """The extractor's call."""
    cost: float | None = None
    model: str = ""


class QuestionAnswered(_Event):
    """The answer to a question; None: it was dismissed or timed out (`by` says which)."""

    kind: Literal["question_answered"] = "question_answered"
    call_id: str
    answer: str | None
    by: Literal["user", "dismissed", "timeout"] = "user"


class ToolsChanged(_Event):
    """The tools offered changed while the run ran (an MCP server's list changed, or it
    stopped; the model loaded deferred ones): from the next model call on, these are offered
    or no longer."""

    kind: Literal["tools_changed"] = "tools_changed"
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    """Offered before and now, described anew."""
    loaded: tuple[str, ...] = ()
    """Deferred tools the model loaded (`tool_load`): offered for the rest of the run, and
    again after a resume."""


class RunFinished(_Event):
    """The run ended: why (`stop_reason`), its answer and what more there is to say."""

    kind: Literal["run_finished"] = "run_finished"
    stop_reason: StopReason
    final_answer: str | None = None
    detail: str = ""
    partial: bool = False
    """The answer is the partial work summarized at a cap, not the end of the task."""


Event = Annotated[
    RunStarted
    | RunResumed
    | BudgetExtended
    | ModelRequested
    | TextDelta
    | ThinkingDelta
    | ModelResponded
    | ToolCallStarted
    | ToolCallFinished
    | ApprovalRequested
    | PermissionDecided
    | ResponseRejected
    | AnswerRejected
    | Reflected
    | Steered
    | ContextCompacted
    | Notice
    | QuestionAsked
    | QuestionAnswered
    | ToolsChanged
    | ForkedFrom
    | Checkpoint
    | FilesRestored
    | MemoryUpdated
    | RunFinished,
    Field(discriminator="kind"),
]
"""Any run event."""

EVENT: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
"""The one adapter that (de)serializes every event."""


@dataclass(frozen=True, slots=True)
class SubagentEvent:
    """An event of a subagent's run, forwarded to the stream of the run whose tool call
    started it (`path`: the call ids, outermost first; nested subagents add theirs). Not in
    that run's log: the subagent's own run has it."""

    path: tuple[str, ...]
    event: Event

    @property
    def depth(self) -> int:
        return len(self.path)


StreamEvent = Event | SubagentEvent
"""What a run's stream yields: its own events, and its subagents' forwarded."""
