"""Guards: policies that keep a model honest and moving.

    FileActionGuard   a final answer is refused while a file the goal asks for is not written
    RepeatCache       an exact repeat of a read-only call is answered with its earlier result;
                      a reread of a file read whole, with the lines from that read
    LoopGuard         the same call, an A-B-A-B oscillation, or no progress: warned, then stopped
    LeakedMarkup      tool-call markup written as text: a nudge to re-issue it; stripped from
                      a final answer
    GoalAnchor        the goal restated every few rounds
    DoneCheck         after a change, the model asked whether the goal is reached
    ChangeReview      an answer after a rename left half done is sent back, with the places
    OneCallPerStep    only the first call of a response runs (for small models)
    ReadFirst         a guessed change to a file the run has not read: its text instead
    RepeatBlock       a repeat of one of the last two steps' calls whose result cannot differ:
                      rejected, and its tool not callable next (`_repeat_block`)

Which of them a run has is `Guards` (recorded in its config); `guard_policies` makes them. The
`repetition` guard is no policy: the fold collapses a reply's repeated text (`_repetition.py`).

What they know of the run is `RunFacts`, an incremental fold of the run's messages shared by the
guards of one loop: it reads each message once, and a resumed run rebuilds it from its log. A
guard's own notices are recognized in the messages by their first words, so that what it has
said (a warning, a refusal) is part of the fold too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..core._events import ToolCallStarted
from ..core._guard_settings import Guards
from ..core._messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ..core._policy import (
    CONTINUE,
    AfterResponse,
    BeforeRound,
    BeforeTool,
    Inject,
    OnFinal,
    Policy,
    Reject,
    Replace,
    Stop,
)
from ..core._state import FINAL_ANSWER_TOOL, RunState
from ..core._stop import StopReason
from ..core._threads import in_thread
from ._leftovers import edit_names, edits_shown, goal_folders, goal_names, leftovers, renamed
from ._read_first import READ_NOTE, ReadFirst
from ._reflect import FAILED_NOTE
from ._repeat_block import RepeatBlock
from ._rereads import READ_TOOL, lines_asked, unchanged, whole_read

if TYPE_CHECKING:
    from ..tools import Workspace

CACHED = "Cached: "
DONE = "Already done: "
NOT_RUN = "Not run: "
"""How the result of a call refused before it ran begins (a guard's, a rejected response's)."""
FILE_NOTE = "You have not written the file yet"
LOOP_NOTE = "Warning: you are going in circles"
ANCHOR_NOTE = "Reminder of your goal"
CHANGE_NOTE = "That change"
NOTED_TOOLS = frozenset({"write_file", "edit_file"})
"""Tools whose result ends with a bracketed line only to warn (a file that no longer parses,
a doubled line, a file written empty): the done-check passes the warning on."""
MARKUP_NOTE = "Your reply contains tool-call markup as text"
REVIEW_NOTE = "Before your answer stands"
CACHED_CHARS = 500


def guard_policies(
    guards: Guards,
    *,
    read_only: Sequence[str],
    path_args: Mapping[str, Sequence[str]],
    command_args: Mapping[str, str],
    tool_names: Sequence[str],
    strict_actions: bool = False,
    specs: Sequence[ToolSpec] = (),
    uncached: Sequence[str] = (),
    workspace: Workspace | None = None,
    max_rejections: int = 3,
    refused_by_mode: Callable[[ToolCall], bool] = lambda call: False,
) -> list[Policy]:
    """One run's guard policies, sharing one fold of its messages. (The `repetition` guard is
    no policy: the fold of the run's events applies it, see `RunState.apply`.) `workspace`:
    where a near-repeat of a read checks that the file still holds what was read, and the
    done-check looks for what a rename left; `max_rejections`: the run's cap on rejected
    answers, which the done-check never reaches."""
    # `final_answer` changes nothing, but it is not a read: it is never answered from cache.
    reads = [name for name in read_only if name != FINAL_ANSWER_TOOL]
    facts = RunFacts(
        read_only=reads,
        path_args=path_args,
        command_args=command_args,
        loop_threshold=guards.loop_threshold,
    )
    policies: list[Policy] = []
    if guards.one_call:
        policies.append(OneCallPerStep())
    cached = frozenset(reads) - frozenset(uncached)
    if guards.repeat_block:
        changes = {name for name, args in path_args.items() if args and name not in read_only}
        watched = cached | changes | set(command_args)
        policies.append(RepeatBlock(facts, watched, tool_names, workspace))
    if (guards.repeat_cache or guards.rereads) and reads:
        rereads = workspace if guards.rereads else None
        policies.append(RepeatCache(facts, cached, rereads, exact=guards.repeat_cache))
    if guards.loop:
        policies.append(LoopGuard(facts, guards.loop_threshold, guards.anti_stall_threshold))
    if guards.goal_anchor > 0:
        policies.append(GoalAnchor(facts, guards.goal_anchor))
    if guards.markup:
        policies.append(LeakedMarkup(tool_names, strict_actions=strict_actions))
    if guards.file_action:
        policies.append(FileActionGuard(facts))
    if guards.schema_echo and specs:
        policies.append(SchemaEcho(specs))
    if guards.done_check:
        policies.append(DoneCheck(facts))
    if guards.change_review and workspace is not None:
        policies.append(ChangeReview(facts, workspace, max_rejections))
    if guards.read_first and workspace is not None:
        policies.append(ReadFirst(facts, workspace, refused_by_mode))
    return policies


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls the same: the tool and its arguments (as the model ordered them:
    `repr` is many times cheaper than a sorted JSON dump, and this runs for every call)."""
    return call.name, call.raw_arguments or repr(call.arguments)


_WRITE_COMMAND = re.compile(
    r"(?<![\d&])>>?\s*(?!&|/dev/null)\S"  # a redirect to a file, not 2>&1 or >/dev/null
    r"|\b(?:tee|cp|mv|touch|mkdir|dd|install)\b|\bsed\s+-i"
)


PLANNING = frozenset({"plan", "todo"})


class RunFacts:
    """What the guards know of a run: an incremental fold of its messages (this run's only,
    from its goal on). `update` reads the messages appended since the last call."""

    def __init__(
        self,
        *,
        read_only: Sequence[str],
        path_args: Mapping[str, Sequence[str]],
        command_args: Mapping[str, str],
        loop_threshold: int = 3,
    ) -> None:
        self.read_only = frozenset(read_only)
        self.path_args = {name: tuple(args) for name, args in path_args.items() if args}
        self.command_args = dict(command_args)
        self.loop_threshold = loop_threshold
        self._messages: list[Message] | None = None
        self._reset(0)

    def _reset(self, seen: int) -> None:
        self.seen = seen
        self.cache: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        """Successful read-only results by call key, with the paths the call named."""
        self.whole: dict[str, tuple[str, int]] = {}
        """Files read whole (path: their text and number of lines), until a change."""
        self.done: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        """Successful changes by a file tool, by call key: doing one again changes nothing
        (until another change touches its path)."""
        self.failed: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        """Failed reads and failed changes by a file tool, by call key: one fails again the
        same way (until a change touches its path)."""
        self.ran: dict[tuple[str, str], str] = {}
        """The last command's result by its call key, until anything else changes or runs."""
        self.written = False
        """A write (a file tool's, or a command that writes) succeeded this run."""
        self.edits: list[tuple[ToolCall, tuple[str, ...]]] = []
        """The file tools' changes that succeeded this run, with their paths."""
        self.reviewed = 0
        """How many of `edits` the done-check had seen when it last showed them."""
        self.read: set[str] = set()
        """Files whose text the model was shown or wrote this run (`has_read`)."""
        self.commands: list[str] = []
        """The commands that succeeded this run: one naming a file may have shown it."""
        self.file_refusals = 0
        self.rounds: list[tuple[tuple[str, str], ...]] = []
        """The calls of each round (the last few), for loop detection."""
        self.idle = 0
        """Closed rounds in a row with no successful change and no new result."""
        self.progress = False
        """The open round (the last response) made progress."""
        self.changed = False
        """A change of the open round succeeded."""
        self.warnings: list[str] = []
        """What the results of the open round's changes warn of (`NOTED_TOOLS`)."""
        self.open = False
        self.warned = False
        """A loop warning was given, and the run has not recovered since."""
        self.since_warning = 0
        self.since_anchor = 0
        self._calls: tuple[ToolCall, ...] = ()
        self._changed: dict[str, ToolCallStarted] = {}
        """The run's calls that ran with arguments a hook changed (`RunState.changed`)."""
        self._results: set[int] = set()
        self.todo_done = 0
        """Steps of the todo list done so far."""

    def update(self, state: RunState) -> RunFacts:
        messages = state.messages
        if messages is not self._messages or len(messages) < self.seen:
            self._messages = messages
            self._reset(_goal_index(state) + 1)
        if self.seen == len(messages):
            return self  # the usual case: nothing new
        self._changed = state.changed
        # Dispatch on the exact type (a pydantic class's isinstance check is slow): this runs
        # every round.
        for message in messages[self.seen :]:
            kind = type(message)
            if kind is ToolResultMessage:
                self._result(message)  # type: ignore[arg-type]
            elif kind is AssistantMessage:
                self._round(message)  # type: ignore[arg-type]
            elif kind is UserMessage:
                self._note(message.content)  # type: ignore[union-attr]
        self.seen = len(messages)
        done = sum(1 for item in state.todo if item.status == "done") if state.todo else 0
        if done > self.todo_done:  # a step of the plan got done: progress
            self.progress = self.progress or self.open
            self.todo_done = done
        return self

    def _round(self, message: AssistantMessage) -> None:
        self._close_round()
        self.open = True
        self.changed = False
        self.warnings = []
        calls = self._calls = message.tool_calls
        if len(calls) == 1:
            self.rounds.append((call_key(calls[0]),))
        elif calls:
            self.rounds.append(tuple(sorted(map(call_key, calls))))
        if len(self.rounds) > 24:
            del self.rounds[:-12]
        self.since_anchor += 1
        if self.warned:
            self.since_warning += 1

    def _result(self, result: ToolResultMessage) -> None:
        if result.name in PLANNING:
            return  # the todo list's progress counts, not its bookkeeping (see `update`)
        for call in self._calls:
            if call.id == result.call_id:
                break
        else:
            return
        if self._changed and (started := self._changed.get(call.id)) is not None:
            call = started.call  # what ran: the reads it made stale are those of its paths
        if result.name in self.read_only:
            if result.is_error:  # a read that failed fails again until its paths change
                self.failed[call_key(call)] = (result.content, self._paths(call))
                return
            if result.content.startswith(CACHED):
                return
            paths = self._paths(call)
            self.cache[call_key(call)] = (result.content, paths)
            if result.name == READ_TOOL:
                self.read.update(paths)
                if whole := whole_read(call, result.content):
                    self.whole[paths[0]] = whole
            fingerprint = hash((result.name, result.content))
            if fingerprint not in self._results:
                self._results.add(fingerprint)
                self.progress = True
            return
        if result.content.startswith(DONE):
            return  # not run again: no change, no progress
        if result.content.startswith(READ_NOTE):  # not run: the file's text was shown
            self.read.update(self._paths(call))
            self.progress = True
            return
        if result.content.startswith(NOT_RUN):
            return  # refused before it ran: nothing changed
        # A change (or an attempt at one): the reads it may have made stale are forgotten.
        paths = self._paths(call)
        if paths and self.cache:
            self.cache = {k: v for k, v in self.cache.items() if not _touches(v[1], k[1], paths)}
            self.whole = {k: v for k, v in self.whole.items() if not _touches((k,), "", paths)}
        elif self.cache:
            self.cache, self.whole = {}, {}
        if paths and self.done:
            self.done = {k: v for k, v in self.done.items() if not _touches(v[1], k[1], paths)}
        elif self.done:
            self.done = {}
        if paths and self.failed:
            self.failed = {k: v for k, v in self.failed.items() if not _touches(v[1], k[1], paths)}
        elif self.failed:
            self.failed = {}
        # What a command prints may change with anything else done: it is kept until then.
        command = self._command(call)
        self.ran = {call_key(call): result.content} if command is not None else {}
        if result.is_error:
            if paths:
                self.failed[call_key(call)] = (result.content, paths)
            return
        if paths:
            self.done[call_key(call)] = (result.content, paths)
            self.edits.append((call, paths))
            self.read.update(paths)
        self.progress = True
        if paths or self._writes(call):
            self.written = True
            # a command's failure is a result, not an error: its exit code says
            self.changed |= bool(paths) or _succeeded(result.content)
        if command is not None and _succeeded(result.content):
            self.commands.append(command)
        if result.name in NOTED_TOOLS:
            lines = result.content.split("\n")[1:]
            self.warnings += [t[1:-1] for t in lines if t.startswith("[") and t.endswith("]")]

    def _command(self, call: ToolCall) -> str | None:
        arg = self.command_args.get(call.name)
        command = call.arguments.get(arg) if arg else None
        return command if isinstance(command, str) else None

    def _writes(self, call: ToolCall) -> bool:
        command = self._command(call)
        return command is not None and _WRITE_COMMAND.search(command) is not None

    def repeated(self, call: ToolCall) -> tuple[int, str, str] | None:
        """If `call`, the last response's only call, repeats one of the two rounds before it
        exactly, and nothing has touched what it reads or changes since: how many steps ago,
        how that call ended ("result", "failed", "done") and what it gave; else None."""
        key = call_key(call)
        for ago in (1, 2):
            if len(self.rounds) > ago and self.rounds[-1 - ago] == (key,):
                break
        else:
            return None
        for how, found in (("result", self.cache), ("done", self.done), ("failed", self.failed)):
            if (earlier := found.get(key)) is not None:
                return ago, how, earlier[0]
        if (printed := self.ran.get(key)) is not None:
            return ago, "result" if _succeeded(printed) else "failed", printed
        return None

    def has_read(self, path: str) -> bool:
        """Whether the model has seen the file at `path` this run: read it, changed it, had
        it shown, or ran a command that named it (`cat`, `sed -n`)."""
        path = _norm(path)
        return path in self.read or any(path in command for command in self.commands)

    def _paths(self, call: ToolCall) -> tuple[str, ...]:
        # A path argument left out is taken as the workspace (a listing's default).
        names = self.path_args.get(call.name)
        if not names:
            return ()
        return tuple(_norm(str(call.arguments.get(name, "."))) for name in names)

    def _note(self, text: str) -> None:
        if text.startswith(FILE_NOTE):
            self.file_refusals += 1
        elif text.startswith(LOOP_NOTE):
            self.warned = True
            self.since_warning = 0
        elif text.startswith(ANCHOR_NOTE):
            self.since_anchor = 0
        elif text.startswith(CHANGE_NOTE):  # asked once per round
            self.changed = False
        elif text.startswith(REVIEW_NOTE):
            self.reviewed = len(self.edits)
        elif text.startswith(FAILED_NOTE):  # a reflection judged a step failed: start afresh
            self.rounds.clear()
            self.idle = 0
            self.open = self.warned = False

    def _close_round(self) -> None:
        if self.open:
            self.idle = 0 if self.progress else self.idle + 1
            if self.warned and self.progress and self.loop(self.loop_threshold) is None:
                self.warned = False  # recovered: a later loop is warned about afresh
        self.progress = False

    def idle_rounds(self) -> int:
        """Rounds in a row without progress, counting the last response's (its tools ran)."""
        return self.idle + (1 if self.open and not self.progress else 0)

    def loop(self, times: int) -> str | None:
        """What the run repeats, if it does: one round's calls `times` times in a row, or two
        rounds' alternating `times` times over."""
        rounds = self.rounds
        if len(rounds) < 2 or (rounds[-1] != rounds[-2] and rounds[-1] != rounds[-3:][0]):
            return None  # the usual case: the last round repeats neither of the two before
        if len(rounds) >= times and len(set(rounds[-times:])) == 1:
            count = times
            while count < len(rounds) and rounds[-count - 1] == rounds[-1]:
                count += 1
            names = ", ".join(name for name, _ in rounds[-1])
            return f"the same call ({names}) {count} times in a row"
        span = 2 * times
        if len(rounds) >= span:
            tail = rounds[-span:]
            a, b = tail[0], tail[1]
            if a != b and all(r == (a if i % 2 == 0 else b) for i, r in enumerate(tail)):
                first = ", ".join(n for n, _ in a)
                second = ", ".join(n for n, _ in b)
                return f"the same two calls ({first}; {second}) alternating {times} times"
        return None


def _succeeded(content: str) -> bool:
    """Whether a command's result says it exited 0 (a failure is a result, not an error)."""
    return content.startswith("exit code: 0\n")


def _goal_index(state: RunState) -> int:
    """Where this run's messages begin: its goal (the last user message that is it)."""
    messages = state.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage) and message.content == state.goal:
            return index
    return len(messages) - 1


def _norm(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or "."


def _touches(read_paths: tuple[str, ...], read_args: str, changed: tuple[str, ...]) -> bool:
    """Whether a change to `changed` may make a read stale: the read named the path or a
    folder above it (a listing, a search), or its arguments mention the path."""
    for path in changed:
        for read in read_paths:
            if read in (".", "") or path == read or path.startswith(read + "/"):
                return True
        if not read_paths and path in read_args:
            return True
    return False


class RepeatCache(Policy):
    """An exact repeat (same tool, same arguments) of a read-only call that succeeded is not
    run again: the model gets the earlier result (its first 500 characters) and is told to use
    it. A change invalidates the cached reads that name its path (all of them when it names
    none); failures are never cached, so a failed call may be retried. So is an exact repeat of
    a file tool's change that succeeded (small models write the same file again and again):
    until another change touches its path, the model is told it is done already.

    A near-repeat, read_file of a file the run read whole with another range (or whole again),
    is answered with the lines asked for from what was read, and a nudge to answer, if the file
    still holds exactly that (`_rereads`); else it is read for real."""

    def __init__(
        self,
        facts: RunFacts,
        cached: frozenset[str],
        workspace: Workspace | None = None,
        *,
        exact: bool = True,
    ) -> None:
        self.facts = facts
        self.cached = cached
        """The read-only tools whose repeats are answered from the cache (`Tool.cached`)."""
        self.workspace = workspace
        """Where near-repeats are checked against the file (None: they are read again)."""
        self.exact = exact
        """Exact repeats are answered (the `repeat-cache` guard; else only near-repeats)."""

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        if call.name not in self.facts.read_only:
            if not self.exact or call.name not in self.facts.path_args:
                return CONTINUE  # the usual case, with no fold needed
            done = self.facts.update(state).done.get(call_key(call))
            if done is None:
                return CONTINUE
            return Replace(
                f"{DONE}you made this exact call before and it succeeded ({_clip(done[0])}); "
                "nothing has touched that path since, so it was not run again. If the goal is "
                "reached, give your final answer now."
            )
        if call.name not in self.cached:
            return CONTINUE
        facts = self.facts.update(state)
        if not facts.cache:
            return CONTINUE
        cached = facts.cache.get(call_key(call)) if self.exact else None
        if cached is None:
            return self._reread(call) if facts.whole else CONTINUE
        content = cached[0]
        if len(content) > CACHED_CHARS:
            content = content[:CACHED_CHARS] + f"… [{len(cached[0]) - CACHED_CHARS} more chars]"
        return Replace(
            f"{CACHED}you made this exact call before and nothing has changed since; it was not "
            f"run again. Its earlier result:\n{content}\n\nUse that result, or give your "
            "final answer; do not repeat the call."
        )

    def _reread(self, call: ToolCall) -> BeforeTool:
        """A file read whole, read again with another range: its lines from what was read."""
        if call.name != READ_TOOL or self.workspace is None:
            return CONTINUE
        paths = self.facts._paths(call)
        whole = self.facts.whole.get(paths[0]) if paths else None
        if whole is None:
            return CONTINUE
        text, count = whole
        asked = lines_asked(call, text, count)
        if asked is None or not unchanged(self.workspace, paths[0], text):
            return CONTINUE  # a range read_file reports itself, or a file changed since
        page, first, last = asked
        return Replace(
            f"{CACHED}you read all of {paths[0]} before ({count} lines) and it has not changed "
            "since, so it was not read again: use what you read, and once the goal is reached "
            f"give your final answer. Lines {first}-{last} of it:\n{page}"
        )


class LoopGuard(Policy):
    """The same call `times` rounds in a row, two calls alternating `times` times over, or
    `idle` rounds with no progress (no successful change, no new result): the model is warned
    first; if the next round goes on the same way, the run stops with `stalled`."""

    def __init__(self, facts: RunFacts, times: int = 3, idle: int = 8) -> None:
        self.facts = facts
        self.times = times
        self.idle = idle

    async def before_round(self, state: RunState) -> BeforeRound:
        facts = self.facts.update(state)
        if not facts.open:
            return CONTINUE
        why = facts.loop(self.times)
        idle = facts.idle_rounds()
        if why is None and idle >= self.idle:
            why = f"{idle} rounds with no change and no new result"
        if why is None:
            return CONTINUE
        if facts.warned and facts.since_warning >= 1:
            return Stop(StopReason.STALLED, f"no progress after a warning: {why}")
        if facts.warned:
            return CONTINUE
        return Inject(
            f"{LOOP_NOTE}: {why}. Repeating it will not give a different result. Change "
            "your approach: use what you have learned, try something different, or give your "
            "final answer now. If this goes on, the run will be stopped."
        )


class GoalAnchor(Policy):
    """Every `every` rounds the original goal is restated to the model."""

    def __init__(self, facts: RunFacts, every: int = 5) -> None:
        self.facts = facts
        self.every = every

    async def before_round(self, state: RunState) -> BeforeRound:
        if state.step < self.every:
            return CONTINUE  # cheap: no fold needed in a short run
        if self.facts.update(state).since_anchor < self.every:
            return CONTINUE
        return Inject(
            f"{ANCHOR_NOTE} (keep working toward it; once it is reached, call "
            f"{FINAL_ANSWER_TOOL} with your answer rather than do again what is done):\n"
            f"{state.goal}"
        )


_WANTS_FILE = re.compile(
    r"\b(?:create|write|save|generate|produce|store|dump|export)\b"
    r"(?:(?:\s+\S+){0,3}?\s+files?\b"  # "write a new Python file"
    r"|[^.\n]{0,60}?\b(?:to|into|in|as|at|named|called)\s+[`'\"]?[\w./-]+\.[A-Za-z0-9]{1,8}\b"
    r"|\s+[`'\"]?[\w./-]+\.[A-Za-z0-9]{1,8}\b)",  # "create hello.py"
    re.IGNORECASE,
)


def wants_file(goal: str) -> bool:
    """Whether a goal asks for a file to be created, written or saved."""
    return _WANTS_FILE.search(goal) is not None


class DoneCheck(Policy):
    """After a round whose change succeeded, the model is asked whether the goal is reached,
    the goal beside it: small models that wrote the file went on to "confirm" it and then
    invented more work (a second file, an edit of the first) until the step cap. A change
    whose result warns (a doubled line, a file that no longer parses) is not called a success:
    the warning is repeated, as a 1.5B model answered "fixed" right after one."""

    def __init__(self, facts: RunFacts) -> None:
        self.facts = facts

    async def before_round(self, state: RunState) -> BeforeRound:
        facts = self.facts.update(state)
        if not (facts.open and facts.changed):
            return CONTINUE
        done = (
            f"was made, but its result warns: {'; '.join(facts.warnings)}"
            if facts.warnings
            else "succeeded"
        )
        return Inject(
            f"{CHANGE_NOTE} {done}. Is the goal reached now? The goal: {state.goal}\n"
            f"If it is, call {FINAL_ANSWER_TOOL} with your answer now; if not, take the next "
            "step (do not redo this one)."
        )


class ChangeReview(Policy):
    """A final answer after edits that replaced a name (a rename, a replace: `_leftovers`)
    that still occurs in the files the run touched or in the workspace's others is sent back
    once, with the places and a short diff of each change, so that the model can finish the
    change before its answer stands; again only after more changes, and never once the run's
    cap on rejected answers is reached."""

    def __init__(self, facts: RunFacts, workspace: Workspace, max_rejections: int = 3) -> None:
        self.facts = facts
        self.workspace = workspace
        self.max_rejections = max_rejections

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        facts = self.facts.update(state)
        edits = facts.edits
        if len(edits) == facts.reviewed:
            return CONTINUE  # no edit, or none since the last review: the usual answer
        if state.answer_rejections >= self.max_rejections:
            return CONTINUE
        calls = [call for call, _ in edits]
        names = list(dict.fromkeys([*edit_names(calls), *goal_names(state.goal, calls)]))
        if not names:
            return CONTINUE
        touched = list(dict.fromkeys(path for _, paths in edits for path in paths))
        within = goal_folders(state.goal)
        found = await in_thread(leftovers, self.workspace, names, touched, within, limit=None)
        if not found:
            return CONTINUE
        words = ", ".join(f"`{name}`" for name in names)
        places = "\n".join(found)
        return Reject(
            f"{REVIEW_NOTE}: you replaced {words}, and it still occurs here:\n{places}\n"
            f"What you changed:\n{edits_shown(edits)}\n"
            "If those places should change too (a rename changes every use), change them now"
            f"{_rename_call(edits, names, found)}; "
            "if they should stay as they are, give your final answer again."
        )


def _rename_call(
    edits: Sequence[tuple[ToolCall, tuple[str, ...]]], names: list[str], found: list[str]
) -> str:
    """The call that finishes a rename file by file, when the run renamed one name to one
    other: a small model shown only the places answered "already done" again."""
    pairs = {
        pair
        for call, _ in edits
        if call.name == "edit_file"
        and (pair := renamed(str(call.arguments.get("old")), str(call.arguments.get("new"))))
    }
    if len(names) != 1 or len(pairs) != 1:
        return ""
    old, new = pairs.pop()
    paths = list(dict.fromkeys(place.split(":", 1)[0] for place in found))
    rest = f" (then the same for {', '.join(f'`{p}`' for p in paths[1:])})" if paths[1:] else ""
    return (
        f" (edit_file with path `{paths[0]}`, old `{old}`, new `{new}`, replace_all true, "
        f"replaces it throughout that file{rest})"
    )


class FileActionGuard(Policy):
    """A final answer (by any route) is refused when the goal asks for a file to be written
    and no write succeeded in this run; `refusals` times at most, then it is let through."""

    def __init__(self, facts: RunFacts, refusals: int = 2) -> None:
        self.facts = facts
        self.refusals = refusals
        self._goal: tuple[str, bool] = ("", False)

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        if self._goal[0] != state.goal:
            self._goal = (state.goal, wants_file(state.goal))
        if not self._goal[1]:
            return CONTINUE
        facts = self.facts.update(state)
        if facts.written or facts.file_refusals >= self.refusals:
            return CONTINUE
        return Reject(
            f"{FILE_NOTE}: the goal asks for a file, and no write succeeded in this run. "
            "Printing the content in your reply does not create the file. Gather what you "
            "need first, then call the write tool (write_file) to create it, and only then "
            "give your final answer."
        )


_BLOCKS = re.compile(
    r"<tool_call>.*?(?:</tool_call>|\Z)"
    r"|<function_calls>.*?(?:</function_calls>|\Z)"
    r"|<invoke\b.*?(?:</invoke>|\Z)"
    r"|<｜tool▁calls▁begin｜>.*?(?:<｜tool▁calls▁end｜>|\Z)"
    r"|<｜tool▁call▁begin｜>.*?(?:<｜tool▁call▁end｜>|\Z)"
    r"|<｜DSML｜function_calls>.*?(?:</｜DSML｜function_calls>|\Z)"
    r"|<tools>.*?(?:</tools>|\Z)"
    r"|<\|python_tag\|>.*?(?:<\|eom_id\|>|<\|eot_id\|>|\Z)"
    r"|\[TOOL_CALLS\].*"
    r"|<thought>.*?(?:</thought>|\Z)",
    re.DOTALL,
)
# A tag's attributes stop at a `<` too: `[^>]*` ran on over the next tags to the end of the
# text from each of them, quadratic in a reply of `<parameter ` and no `>`.
_TAGS = re.compile(
    r"</?(?:tool_call|tools|function_calls|invoke|parameter|thought)\b[^<>]*>"
    r"|</?｜[^｜<>]{1,40}｜>?|<\|(?:tool[\w▁]*|python_tag|eom_id|eot_id)\|>|\[TOOL_CALLS\]"
)
_CALL_MARKUP = re.compile(
    r"</?tool_call>|</?tools>|<invoke\b|<function_calls>|<｜(?:tool▁|DSML)|<\|tool[\w▁]*\|>"
    r"|<\|python_tag\|>|\[TOOL_CALLS\]"
)
_JSON_ACTION = re.compile(r'\{\s*"(?:name|tool)"\s*:\s*"([^"]+)"\s*,\s*"(?:arguments|parameters)"')


def strip_markup(text: str) -> str:
    """`text` without tool-call markup and thought tags."""
    stripped = _TAGS.sub("", _BLOCKS.sub("", text))
    return re.sub(r"\n{3,}", "\n\n", stripped).strip()


class LeakedMarkup(Policy):
    """A reply with no tool call that writes one as text (`<tool_call>`, `<tools>`, `<invoke`,
    DeepSeek's `<｜tool▁call▁begin｜>`, Mistral's `[TOOL_CALLS]`, Llama's `<|python_tag|>`, a
    JSON action in prose or a fence) is rejected with a nudge to make a proper call, `nudges`
    times at most; markup and `<thought>` tags are stripped from a final answer. On the strict
    JSON action protocol the reply is `StrictActions`' to judge, so only the stripping is done.

    The OpenAI-compatible provider runs such markup itself when every call in it is a
    well-formed call of an offered tool (`models/_text_calls.py`); what reaches this guard is
    the rest: an unknown tool, broken JSON, or a provider that does not recover calls."""

    def __init__(
        self, tool_names: Sequence[str], *, strict_actions: bool = False, nudges: int = 2
    ) -> None:
        self.tools = frozenset(tool_names)
        self.strict = strict_actions
        self.nudges = nudges

    def leaked(self, text: str) -> bool:
        if ("<" in text or "[TOOL_CALLS]" in text) and _CALL_MARKUP.search(text):
            return True
        if '"' in text:
            for match in _JSON_ACTION.finditer(text):
                if match.group(1) in self.tools:
                    return True
        return False

    async def after_response(self, state: RunState, response: AssistantMessage) -> AfterResponse:
        if self.strict or response.tool_calls or not self.leaked(response.text):
            return CONTINUE
        if _nudges(state) >= self.nudges:
            return CONTINUE
        return Reject(
            f"{MARKUP_NOTE}, not as a tool call, so nothing was run. To use a tool, re-issue "
            "the call through the tool-calling interface (not as text, tags or JSON in your "
            "reply); if you are done, give your final answer as plain text."
        )

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        if "<" not in answer and "[TOOL_CALLS]" not in answer:
            return CONTINUE
        stripped = strip_markup(answer)
        return CONTINUE if stripped == answer else Replace(stripped)


def _nudges(state: RunState) -> int:
    """This policy's nudges in a row: the user messages that are one, back to the last tool
    result (a short walk back, not a scan of the history)."""
    count = 0
    for message in reversed(state.messages):
        if isinstance(message, UserMessage):
            if message.content.startswith(MARKUP_NOTE):
                count += 1
        elif isinstance(message, ToolResultMessage):
            break
    return count


class OneCallPerStep(Policy):
    """Only the first tool call of a response runs; the others are answered "not run"."""

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        pending = state.pending
        if len(pending) < 2 or pending[0].id == call.id:
            return CONTINUE
        return Reject(
            f"Not run: one call per step. Only the first call ({pending[0].name}) ran; make "
            "this call again in your next step if you still need it."
        )


class SchemaEcho(Policy):
    """A call whose string argument is that parameter's name or description (`path=
    "file_path"`, `answer="The final answer."`) copies the schema instead of filling it in: it
    is not run, and the model is told which argument and what belongs there."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self.echoes: dict[str, dict[str, tuple[str, ...]]] = {}
        for spec in specs:
            properties = spec.parameters.get("properties", {})
            echoes = {
                name: _echoes(name, str(schema.get("description", "")))
                for name, schema in properties.items()
                # A choice among fixed values (an enum) is never an echo: it is the value.
                if isinstance(schema, dict)
                and schema.get("type") == "string"
                and "enum" not in schema
            }
            if echoes:
                self.echoes[spec.name] = echoes

    async def before_tool(self, state: RunState, call: ToolCall) -> BeforeTool:
        echoes = self.echoes.get(call.name)
        if echoes is None:
            return CONTINUE
        for name, value in call.arguments.items():
            if (
                name in echoes
                and isinstance(value, str)
                and len(value) < 80
                and _plain(value) in echoes[name]
                and _plain(value) not in _plain(state.goal)  # asked for: `grep "pattern"`
            ):
                return Reject(
                    f"Not run: {value!r} is what the schema says of the argument `{name}`, "
                    f"not a value for it. Put the real {name.replace('_', ' ')} there "
                    "(taken from the goal or from what you found)."
                )
        return CONTINUE


def _plain(text: str) -> str:
    """Lower case, words only: `File_path.` and `file path` read alike."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


@functools.lru_cache(maxsize=1024)  # every run of an agent asks again for the same tools
def _echoes(name: str, description: str) -> tuple[str, ...]:
    """What a copied schema looks like for one parameter: its name, its description (or its
    first sentence), the description's first two or three words ("file path")."""
    first = description.split(". ")[0].split(", ")[0]
    words = _plain(first).split()
    found = {_plain(name), _plain(description), _plain(first)}
    found.update(" ".join(words[:n]) for n in (2, 3) if len(words) >= n)
    return tuple(sorted(f for f in found if f))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
