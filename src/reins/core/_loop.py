"""The loop: THINK -> ACT -> OBSERVE as an async generator of events.

Which stage runs next is read off the folded state, never from local variables, so a run resumed
from its log after a crash at any event boundary goes on exactly where it stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, assert_never

from ._approval import ApprovalRequest, Approver, Ruling, denial
from ._cancel import Cancel
from ._caps import (
    CAP_REASONS,
    SUMMARY_REQUEST,
    CapHandler,
    CapOffer,
    ask_cap,
    cap_choices,
    extended,
)
from ._catalog import lookup, price, served_at
from ._errors import ContextTooLarge, ReinsError, StoreError, ToolError
from ._events import (
    AnswerRejected,
    ApprovalRequested,
    BudgetExtended,
    Checkpoint,
    ContextCompacted,
    Event,
    MemoryUpdated,
    ModelRequested,
    ModelResponded,
    Notice,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    Reflected,
    ResponseRejected,
    RunFinished,
    Steered,
    StreamEvent,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from ._log import EventLog
from ._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, unseen
from ._model import (
    Model,
    ModelResponse,
    ModelSettings,
    Retrying,
    TextChunk,
    ThinkingChunk,
    ensure_requests_allowed,
    takes_media,
)
from ._policy import (
    CONTINUE,
    Continue,
    Inject,
    Policy,
    Reflect,
    Reject,
    Replace,
    Rewrite,
    Stop,
    Verified,
)
from ._ports import ContextKeeper, Remembers, Snapshots, ToolRunner, Trace
from ._questions import ASK_USER, Asker, AskMode, QuestionRequest, answered, ask
from ._scope import CallScope
from ._state import STEERING, RunState, interrupted
from ._stop import StopReason
from ._unicode import NOTE, escape_text, escaped_reply, escaped_result

_now = datetime.now
Level = Literal["info", "warning"]


class RunLoop:
    """Drives one run from its current state until it finishes."""

    def __init__(
        self,
        *,
        state: RunState,
        log: EventLog,
        model: Model,
        executor: ToolRunner,
        context: ContextKeeper,
        policies: Sequence[Policy],
        settings: ModelSettings,
        cancel: Cancel,
        approver: Approver,
        on_cap: CapHandler | None = None,
        on_end: Callable[[], Awaitable[object]] | None = None,
        asker: Asker | AskMode | None = None,
        ask_timeout: float | None = None,
        spans: Trace | None = None,
        snapshots: Snapshots | None = None,
        memory: Remembers | None = None,
    ) -> None:
        self.state = state
        self.log = log
        self.model = model
        self.executor = executor
        self.context = context
        # With no cap of its own, a call is capped at what the catalog says the model can write
        # (conservatively, for a model it does not know).
        self.settings = (
            settings
            if settings.max_tokens is not None
            else _capped(settings, lookup(model.name).max_output)
        )
        self._blind = not takes_media(model)
        """A tool's images and documents are recorded as notes saying they were not sent (the
        context builder sends the goal's as such)."""
        self._served_at = served_at(model)
        self.cancel = cancel
        self.approver = approver
        self.on_cap = on_cap
        self.on_end = on_end
        """Called once the loop ends, however it ends (the MCP servers a run started)."""
        self.asker = asker
        """Who answers `ask_user`: a handler, "pause" (the run waits), or None (no one)."""
        self.ask_timeout = ask_timeout
        self.spans = spans
        """The run's OpenTelemetry spans, when traced: every event recorded goes to them."""
        self.snapshots = snapshots
        """Where the workspace is checkpointed before each step's first change (None: not)."""
        self.memory = memory
        """What reads the run's messages for facts to keep across sessions (None: nothing)."""
        self._finishing: list[Callable[[], Awaitable[Event | None]]] = []
        """What a finish records after the event `_finish` returned, in order, each once the
        one before is yielded (see `_finish`)."""
        self._uncommitted = False
        self._envelope = {"session_id": state.session_id, "run_id": state.run_id}
        """What every event of the run carries."""
        self.steering: deque[str] = deque()
        """Instructions sent while the run runs (from any thread): told before the next round."""
        # Each hook is called only on the policies that implement it: the loop's hot path.
        hooks: dict[str, list[Policy]] = {hook: [] for hook in HOOKS}
        for policy in policies:
            for hook in hooks_of(type(policy)):
                hooks[hook].append(policy)
        self._before_round = hooks["before_round"]
        self._after_response = hooks["after_response"]
        self._on_final = hooks["on_final"]
        self._before_tool = hooks["before_tool"]
        self._after_tools = hooks["after_tools"]

    async def events(self) -> AsyncGenerator[StreamEvent]:
        state = self.state
        try:
            while state.finished is None:
                if state.review_pending and (recorded := await self._review()) is not None:
                    yield recorded  # the response was rejected, or stopped the run
                    if self._finishing:
                        async for then in self._finished():
                            yield then
                    continue
                if state.pending:
                    stage = self._act()
                elif (answer := state.turn_answer()) is not None:
                    stage = self._conclude(answer)
                else:
                    stage = self._think()
                async for item in stage:
                    yield item
                    if self._finishing:  # a check per item: this is the hot path
                        async for then in self._finished():
                            yield then
        finally:
            self.executor.close()
            if self.spans is not None:
                self.spans.close()
            if self.on_end is not None:
                await self.on_end()

    # 1-3: before the round, build the request, call the model
    async def _think(self) -> AsyncIterator[Event]:
        state = self.state
        if self.executor.refresh_due:
            async for event in self._tools_refreshed():
                yield event
        for policy in self._before_round:
            verdict = await policy.before_round(state)
            if verdict is CONTINUE:  # the usual answer, told apart without a match
                continue
            match verdict:
                case Continue(note):
                    if note:
                        yield await self._note(policy.name, note, commit=False)
                case Inject(text, mark):
                    # Committed with the model request that follows (or the finish).
                    yield await self._emit(
                        Notice,
                        commit=False,
                        text=text,
                        source=policy.name,
                        to_model=True,
                        mark=mark,
                    )
                case Reflect() as judged:
                    reflection, reply = judged.reflection, judged.response
                    yield await self._emit(
                        Reflected,
                        step=judged.step,
                        assessment=reflection.assessment,
                        reasoning=reflection.reasoning,
                        next_action=reflection.next_action,
                        revised_approach=reflection.revised_approach,
                        to_model=judged.to_model,
                        usage=reply.usage,
                        cost=self._price(reply),
                        model=reply.model_name,
                        source=policy.name,
                    )
                    return  # the next pass reads it: the caps again, then an answer or a round
                case Stop(reason, detail):
                    if reason in CAP_REASONS:
                        async for event in self._at_cap(policy.name, reason, detail):
                            yield event
                        return
                    yield await self._finish(reason, detail=detail)
                    return
        if self.cancel.is_set:
            yield await self._finish(StopReason.CANCELLED, detail="cancelled before a model call")
            return
        if self.steering:  # no generator in the usual round
            async for event in self._steered():
                yield event
        ensure_requests_allowed(self.model)
        if self.context.due(self.context.tokens(state), self.settings.max_tokens):
            async for event in self._compacted():
                yield event
        try:
            messages, settings = self._request()
        except ContextTooLarge as exc:
            yield await self._finish(StopReason.ERROR, detail=str(exc))
            return
        step = state.step + 1
        # Whatever came before (read-only results, the last response) is made durable before
        # the model call, the slowest and costliest wait of a run.
        yield await self._emit(
            ModelRequested,
            commit=self._uncommitted,
            step=step,
            estimated_tokens=self.context.estimated(state),
        )
        response: ModelResponse | None = None
        if state.temperature is not None:  # a repair that must not repeat the rejected reply
            settings = replace(
                settings, temperature=max(state.temperature, settings.temperature or 0)
            )
        if state.excluded_tools:
            settings = replace(settings, excluded_tools=frozenset(state.excluded_tools))
        if state.argument_schemas:
            settings = replace(settings, argument_schemas=state.argument_schemas)
        stream = self.model.stream(messages, self.executor.specs, settings)
        streamed = False  # deltas of the attempt under way: a retry discards them
        try:
            while response is None:
                item = await self.cancel.race(anext(stream))
                match item:
                    case ModelResponse():
                        response = item
                    case None:
                        yield await self._finish(
                            StopReason.CANCELLED, detail="cancelled while the model answered"
                        )
                        return
                    case TextChunk(text):
                        text = escape_text(text)  # a lone surrogate cannot be recorded
                        streamed = True
                        yield self._live(TextDelta, step=step, text=text)
                    case ThinkingChunk(text):
                        streamed = True
                        yield self._live(ThinkingDelta, step=step, text=escape_text(text))
                    case Retrying(attempt, delay, error):
                        dropped = "; the text streamed before this is discarded" if streamed else ""
                        streamed = False
                        yield await self._emit(
                            Notice,
                            commit=False,
                            source="model",
                            level="warning",
                            text=f"retry {attempt} in {delay:.1f} s after: {error}{dropped}",
                        )
        except StopAsyncIteration:
            yield await self._finish(
                StopReason.ERROR, detail="the model stream ended without a response"
            )
            return
        except StoreError:
            raise
        except Exception as exc:  # any provider failure stops the run, resumably
            detail = str(exc) if isinstance(exc, ReinsError) else f"{type(exc).__name__}: {exc}"
            yield await self._finish(StopReason.ERROR, detail=f"model call failed: {detail}")
            return
        finally:
            await _close(stream)
        message = _unique_call_ids(response.message, step)
        if (escaped := escaped_reply(message)) is not None:
            message = escaped
            yield await self._emit(
                Notice, commit=False, source="unicode", level="warning", text=f"the reply: {NOTE}"
            )
        for note in response.notes:
            yield await self._emit(Notice, commit=False, source="model", text=note)
        # Committed with what the review records next (calls started, a rejection, the
        # finish), and in any case before a side effect or the next model call.
        yield await self._emit(
            ModelResponded,
            commit=False,
            step=step,
            message=message,
            usage=response.usage,
            finish=response.finish,
            model=response.model_name,
            cost=self._price(response),
        )

    async def _tools_refreshed(self) -> AsyncIterator[Event]:
        """The tools of the sources (MCP servers) as they are now, and those the model
        loaded, before the round."""
        change = await self.executor.refresh()
        if change is None:
            return
        for text in change.notes:
            yield await self._emit(Notice, commit=False, source="tools", level="warning", text=text)
        if change.added or change.removed or change.changed or change.loaded:
            yield await self._emit(
                ToolsChanged,
                commit=False,
                added=change.added,
                removed=change.removed,
                changed=change.changed,
                loaded=change.loaded,
            )

    async def _compacted(self) -> AsyncIterator[Event]:
        """A compaction: the next request would pass the window's threshold. What it takes
        out of the window is read for facts to keep first."""
        if self.memory is not None and (remembered := await self._remember("compaction")):
            yield remembered
        fields = await self.cancel.race(self.context.compact(self.state))
        if fields is not None:
            yield await self._emit(ContextCompacted, **fields)

    def _request(
        self, settings: ModelSettings | None = None
    ) -> tuple[list[Message], ModelSettings]:
        """The next request's messages, and its settings with an output cap that fits the
        window; `ContextTooLarge` if it cannot fit."""
        settings = settings or self.settings
        messages, tokens = self.context.measure(self.state)
        self.context.check(tokens, settings.max_tokens)
        cap = self.context.output_cap(tokens, settings.max_tokens)
        if cap is None or cap == settings.max_tokens:
            return messages, settings
        return messages, _capped(settings, cap)

    async def _steered(self) -> AsyncIterator[Event]:
        while self.steering:  # appended to from any thread; popped only here
            yield await self._emit(Steered, text=self.steering.popleft())

    async def _at_cap(self, source: str, reason: StopReason, detail: str) -> AsyncIterator[Event]:
        """A cap: with someone to ask (`on_cap`), offer to go on; else stop, or summarize."""
        state = self.state
        choices = cap_choices(reason)
        if self.on_cap is not None and choices:
            offered = f"{detail}; offered to continue: {' or '.join(choices)}"
            yield await self._emit(Notice, text=offered, source=source, level="warning")
            offer = CapOffer(
                session_id=state.session_id,
                run_id=state.run_id,
                reason=reason,
                detail=detail,
                choices=choices,
            )
            try:
                choice = await self.cancel.race(ask_cap(self.on_cap, offer))
            except Exception as exc:  # a handler's bug: nobody chose to go on
                detail = f"{detail}; the offer to continue failed: {type(exc).__name__}: {exc}"
                choice = None
            if choice is not None:
                caps = extended(state.config, reason, choice)
                yield await self._emit(BudgetExtended, source=source, choice=choice, **caps)
                return  # the next round asks the policies again
        if state.config.at_cap == "summarize":
            async for event in self._summarize(source, reason, detail):
                yield event
            return
        yield await self._finish(reason, detail=detail)

    async def _summarize(
        self, source: str, reason: StopReason, detail: str
    ) -> AsyncIterator[Event]:
        """At a cap, with `at_cap = "summarize"`: one last model call, in which no tool may be
        called, whose reply ends the run as its partial answer (the stop reason stays the cap's)."""
        state = self.state
        request = SUMMARY_REQUEST.format(detail=detail)
        yield await self._emit(Notice, text=request, source=source, level="warning", to_model=True)
        ensure_requests_allowed(self.model)
        step = state.step + 1
        yield await self._emit(ModelRequested, step=step)
        # The tools go along, none to be called: Anthropic refuses a history with tool calls
        # and results in it without them, and they keep the cached prompt prefix.
        tools = self.executor.specs
        try:
            messages, settings = self._request(replace(self.settings, tool_choice="none"))
            response = await self.cancel.race(self.model.request(messages, tools, settings))
        except StoreError:
            raise
        except Exception as exc:  # no summary: the run still stops at its cap
            detail = f"{detail}; the summary call failed: {type(exc).__name__}: {exc}"
            response = None
        if response is None:
            yield await self._finish(reason, detail=detail)
            return
        message = response.message.model_copy(update={"tool_calls": ()})  # offered none
        message = escaped_reply(message) or message
        yield await self._emit(
            ModelResponded,
            step=step,
            message=message,
            usage=response.usage,
            finish=response.finish,
            model=response.model_name,
            cost=self._price(response),
        )
        yield await self._emit(
            RunFinished,
            stop_reason=reason,
            final_answer=state.turn_answer(),  # as the history has it (repetition collapsed)
            detail=f"{detail}; the answer summarizes the partial work",
            partial=True,
        )

    # 4: after the response; an accepted one goes on to its tools or its final answer
    def _price(self, response: ModelResponse) -> float | None:
        return price(response.model_name, response.usage, at=self._served_at)

    async def _review(self) -> Event | None:
        state = self.state
        response = state.messages[-1]
        assert isinstance(response, AssistantMessage)
        for policy in self._after_response:
            verdict = await policy.after_response(state, response)
            if verdict is CONTINUE:
                continue
            match verdict:
                case Continue():
                    pass
                case Reject(observation, temperature, excluded, schemas):
                    return await self._emit(
                        ResponseRejected,
                        step=state.step,
                        observation=observation,
                        source=policy.name,
                        temperature=temperature,
                        excluded_tools=excluded,
                        argument_schemas={tool: dict(args) for tool, args in schemas.items()},
                    )
                case Stop(reason, detail):
                    return await self._finish(reason, detail=detail)
        return None

    async def _conclude(self, answer: str) -> AsyncIterator[Event]:
        for policy in self._on_final:
            verdict = await policy.on_final(self.state, answer)
            match verdict:
                case Continue():
                    pass
                case Verified(evidence):
                    for text in evidence:
                        yield await self._emit(Notice, text=text, source=policy.name)
                case Reject(observation):
                    yield await self._emit(
                        AnswerRejected,
                        step=self.state.step,
                        observation=observation,
                        source=policy.name,
                    )
                    return
                case Replace(text):
                    answer = text
                case Stop(reason, detail):
                    yield await self._finish(reason, detail=detail)
                    return
                case _:
                    assert_never(verdict)
        yield await self._finish(StopReason.END_TURN, final_answer=answer)

    # 5-7: before each tool call, run them, after the tools
    async def _act(self) -> AsyncIterator[StreamEvent]:
        state = self.state
        step = state.step
        if self.steering and not (state.started or state.asked or state.decisions or state.results):
            # The user spoke after the model chose these calls: they are not run, and the next
            # round is its turn to reconsider them. The rejection closes the step with their
            # results first (a user message may not come between calls and their results), and
            # is committed with the steer, which it refers to.
            yield await self._emit(
                ResponseRejected, commit=False, step=step, observation=RECONSIDER, source=STEERING
            )
            async for event in self._steered():
                yield event
            return
        runnable: list[ToolCall] = []
        waiting: list[ToolCall] = []
        changed: dict[str, str] = {}
        """The calls whose arguments a policy changed, and by which."""
        done = state.results
        for call in [c for c in state.pending if c.id not in done] if done else state.pending:
            if call.id in state.started and not self.executor.is_read_only(call.name):
                # The process died while this call ran: its effect is unknown, so it is not
                # repeated behind the model's back. Read-only calls are simply run again.
                yield await self._emit(ToolCallFinished, step=step, result=interrupted(call))
                continue
            if call.name == ASK_USER and call.name in self.executor.tools:
                async for event in self._question(call):
                    yield event
                if state.finished is not None:
                    return  # cancelled, or the handler failed
                if call.id in state.questions and call.id not in state.answers:
                    waiting.append(call)  # until someone answers
                continue
            verdict: Continue | Reject | Replace | Stop = CONTINUE
            if self._before_tool:
                verdict, judged, by, notes = await self._judged(call)
                for source, note, level in notes:
                    yield await self._note(source, note, level=level, commit=False)
                if by:  # arguments a policy changed: these run
                    call = judged
                    changed[call.id] = by
            match verdict:
                case Continue():
                    ruling = self.executor.judge(call, state.grants)
                    if ruling is None:  # a default allows it
                        runnable.append(call)
                        continue
                    async for event in self._permit(call, ruling):
                        yield event
                    if state.finished is not None:
                        return  # cancelled, or the approval handler failed
                    decided = state.decisions.get(call.id)
                    if decided is None:
                        waiting.append(call)  # until someone answers
                    elif decided.allowed:
                        runnable.append(call)
                    else:
                        yield await self._emit(
                            ToolCallFinished, step=step, result=_denied(call, decided)
                        )
                case Replace(text) | Reject(text):
                    result = ToolResultMessage(
                        call_id=call.id,
                        name=call.name,
                        content=text,
                        is_error=isinstance(verdict, Reject),
                    )
                    yield await self._emit(ToolCallFinished, step=step, result=result)
                case Stop(reason, detail):
                    yield await self._finish(reason, detail=detail)
                    return
                case _:
                    assert_never(verdict)
        if (
            self.snapshots is not None
            and step not in state.checkpoints
            and any(self.executor.changes_workspace(call.name) for call in runnable)
        ):
            # Before the calls are on record as started: a crash after it re-runs them.
            yield await self._checkpoint()
        changes = False
        for call in runnable:
            if call.id not in state.started:
                by = changed.get(call.id, "") if changed else ""
                yield await self._emit(
                    ToolCallStarted, commit=False, step=step, call=call, changed_by=by
                )
            changes = changes or not self.executor.is_read_only(call.name)
        if changes:
            await self.log.commit()  # on record before any side effect
            self._uncommitted = False

        if len(runnable) == 1 and not self.executor.needs_scope(runnable[0].name):
            yield await self._run_tool(runnable[0])
        elif runnable:
            async for item in self._run_concurrently(runnable):
                yield item

        for policy in self._after_tools:
            match await policy.after_tools(state, state.step_results()):
                case Continue(note):
                    if note:
                        yield await self._note(policy.name, note)
                case Inject(text, mark):
                    yield await self._emit(
                        Notice, text=text, source=policy.name, to_model=True, mark=mark
                    )
                case Stop(reason, detail):
                    yield await self._finish(reason, detail=detail)
                    return
        if waiting:
            names = ", ".join(f"{c.name} ({c.id})" for c in waiting)
            what = "an answer" if all(c.name == ASK_USER for c in waiting) else "approval"
            yield await self._finish(StopReason.WAITING, detail=f"awaiting {what}: {names}")
        elif self.cancel.is_set:
            yield await self._finish(StopReason.CANCELLED, detail="cancelled after tool calls")

    async def _question(self, call: ToolCall) -> AsyncIterator[Event]:
        """`ask_user`: record the question, get the answer (a handler, or none yet: the run
        pauses), record it and the call's result. One question a run."""
        state = self.state
        step = state.step

        def result(text: str, is_error: bool) -> ToolResultMessage:
            return ToolResultMessage(
                call_id=call.id, name=call.name, content=text, is_error=is_error
            )

        if call.id not in state.questions:
            try:
                args = self.executor.tools[ASK_USER].validate(call.arguments)
            except ToolError as exc:
                yield await self._emit(ToolCallFinished, step=step, result=result(str(exc), True))
                return
            if state.questions:
                told = "You have asked your one question of this run: go on with your default."
                yield await self._emit(ToolCallFinished, step=step, result=result(told, True))
                return
            yield await self._emit(
                QuestionAsked,
                step=step,
                call_id=call.id,
                question=args.question,  # type: ignore[attr-defined]
                choices=tuple(args.choices),  # type: ignore[attr-defined]
                default=args.default,  # type: ignore[attr-defined]
            )
        asked = state.questions[call.id]
        if call.id not in state.answers:
            if self.asker is None or self.asker == "pause":
                return  # the run pauses; `resume(answers=...)` answers
            request = QuestionRequest(
                session_id=state.session_id,
                run_id=state.run_id,
                call_id=call.id,
                question=asked.question,
                choices=asked.choices,
                default=asked.default,
            )
            by = "user"
            try:
                answer = await self.cancel.race(
                    asyncio.wait_for(ask(self.asker, request), self.ask_timeout)
                )
            except TimeoutError:
                answer, by = None, "timeout"
            except Exception as exc:  # a handler's bug stops the run, resumably
                detail = f"the question handler failed: {type(exc).__name__}: {exc}"
                yield await self._finish(StopReason.ERROR, detail=detail)
                return
            if self.cancel.is_set:
                yield await self._finish(
                    StopReason.CANCELLED, detail="cancelled while waiting for an answer"
                )
                return
            if answer is None and by == "user":
                by = "dismissed"
            yield await self._emit(QuestionAnswered, call_id=call.id, answer=answer, by=by)
        reply = state.answers[call.id]
        text, is_error = answered(reply.answer, reply.by, asked.default)
        yield await self._emit(ToolCallFinished, step=step, result=result(text, is_error))

    async def _permit(self, call: ToolCall, ruling: Ruling) -> AsyncIterator[Event]:
        """Record how a call the rules did not simply allow was decided, asking a person if
        they say ask. No decision recorded afterwards: the run pauses for an answer."""
        state = self.state
        if call.id in state.decisions:
            return  # decided before a crash, or answered on resume
        decided: dict[str, Any] = {
            "step": state.step,
            "call_id": call.id,
            "tool": call.name,
            "rule": ruling.rule,
        }
        if ruling.decision != "ask":
            allowed = ruling.decision == "allow"
            yield await self._emit(PermissionDecided, allowed=allowed, by=ruling.by, **decided)
            return
        if call.id not in state.asked:
            yield await self._emit(
                ApprovalRequested, step=state.step, call=call, rule=ruling.rule, grant=ruling.grant
            )
        request = ApprovalRequest(
            session_id=state.session_id,
            run_id=state.run_id,
            call=call,
            rule=ruling.rule,
            grant=ruling.grant,
            command_arg=self.executor.tools[call.name].command_arg,
            each_time=ruling.each_time,
        )
        try:
            answer = await self.cancel.race(self.approver(request))
        except Exception as exc:  # a handler's bug stops the run, resumably
            detail = f"the approval handler failed: {type(exc).__name__}: {exc}"
            yield await self._finish(StopReason.ERROR, detail=detail)
            return
        if answer is None:
            if self.cancel.is_set:
                detail = "cancelled while waiting for an approval"
                yield await self._finish(StopReason.CANCELLED, detail=detail)
            return
        always = answer.allowed and answer.always and not ruling.each_time
        yield await self._emit(
            PermissionDecided,
            allowed=answer.allowed,
            by=answer.by,
            always=always,
            grant=ruling.grant if always else "",
            **decided,
        )

    async def _judged(
        self, call: ToolCall
    ) -> tuple[Continue | Reject | Replace | Stop, ToolCall, str, list[tuple[str, str, Level]]]:
        """The first verdict of the `before_tool` policies that is not to go on; the call as
        they leave it (a `Rewrite` changes its arguments for the policies after it) and the
        last policy that changed it; the notes to record (source, text, level)."""
        state = self.state
        by = ""
        notes: list[tuple[str, str, Level]] = []
        for policy in self._before_tool:
            verdict = await policy.before_tool(state, call)
            if verdict is CONTINUE:
                continue
            match verdict:
                case Continue(note):
                    if note:
                        notes.append((policy.name, note, "warning"))
                case Rewrite(changed, note):
                    if changed.id == call.id and changed.name == call.name:
                        call, by = changed, policy.name
                        notes.append((policy.name, note, "info"))
                    else:  # a policy's bug: the call stays as it was
                        notes.append(
                            (policy.name, "changed a call's id or tool: ignored", "warning")
                        )
                case Reject() | Replace() | Stop():
                    return verdict, call, by, notes
                case _:
                    assert_never(verdict)
        return CONTINUE, call, by, notes

    async def _run_concurrently(self, calls: list[ToolCall]) -> AsyncIterator[StreamEvent]:
        """Each result is recorded the moment its call returns, not when the consumer of these
        events gets to it, so a crash never loses a finished call's result. A subagent's
        events are passed on as they come."""
        finished: asyncio.Queue[StreamEvent] = asyncio.Queue()
        slots = asyncio.Semaphore(self.executor.max_parallel)

        async def run(call: ToolCall) -> None:
            async with slots:
                finished.put_nowait(await self._run_tool(call, finished.put_nowait))

        tasks = [asyncio.ensure_future(run(call)) for call in calls]
        try:
            left = len(tasks)
            while left:
                event = await finished.get()
                if not isinstance(event, SubagentEvent):
                    left -= 1
                yield event
        finally:
            for task in tasks:
                task.cancel()

    async def _run_tool(
        self, call: ToolCall, forward: Callable[[StreamEvent], None] | None = None
    ) -> Event:
        start = time.perf_counter()
        scope = None
        if forward is not None and self.executor.needs_scope(call.name):
            scope = CallScope(
                call_id=call.id,
                state=self.state,
                log=self.log,
                cancel=self.cancel,
                forward=forward,
            )
        result = await self.cancel.race(self.executor.execute(call, scope))
        if result is None:
            result = ToolResultMessage(
                call_id=call.id,
                name=call.name,
                content="Cancelled by the user before it finished.",
                is_error=True,
            )
        duration_ms = (time.perf_counter() - start) * 1000
        result = escaped_result(result)  # a lone surrogate cannot be recorded
        if self._blind and result.media:  # recorded as the model gets it, so the user sees
            result = unseen(result)
        spent = scope if scope is not None and scope.usage.requests > 0 else None
        todo = scope.todo if scope is not None and result is not None else None
        return await self._emit(
            ToolCallFinished,
            # A lost read-only result is simply computed again on resume; a side effect's
            # result must be durable at once, or a resume would call it interrupted.
            commit=not self.executor.is_read_only(call.name),
            step=self.state.step,
            result=result,
            duration_ms=duration_ms,
            usage=spent.usage if spent else None,
            cost=spent.cost if spent else None,
            todo=todo,
            diff=self.executor.take_diff(call.id),  # for people; taken even if cancelled
        )

    async def _note(
        self, source: str, text: str, *, level: Level = "warning", commit: bool = True
    ) -> Event:
        """A policy's note for the user (a `Continue`'s, a `Rewrite`'s): not for the model."""
        return await self._emit(Notice, commit=commit, text=text, source=source, level=level)

    async def _checkpoint(self, *, at_end: bool = False) -> Event:
        """Snapshot the workspace (`Checkpoint`); one that fails is said, and no more are
        taken in this run: the run goes on, its changes from here on without a way back."""
        assert self.snapshots is not None
        state = self.state
        try:
            snapshot = await self.snapshots.snapshot(state.run_id, f"step {state.step}")
        except Exception as exc:  # a checkpoint must never stop the run
            self.snapshots = None
            return await self._note(
                "checkpoints",
                f"{exc}; no more checkpoints in this run: its changes from here on cannot "
                "be undone with `reins undo`",
            )
        return await self._emit(Checkpoint, step=state.step, snapshot=snapshot, at_end=at_end)

    async def _remember(self, trigger: str) -> Event | None:
        """Read the run's new messages for facts to keep (`MemoryUpdated`); a capture that
        fails is said, and its messages are read by the next one."""
        assert self.memory is not None
        state = self.state
        if state.remembered >= len(state.messages):
            return None
        try:
            fields = await self.cancel.race(self.memory.capture(state, trigger=trigger))
        except Exception as exc:  # memory must never stop the run
            return await self._note(
                "memory",
                f"capturing facts to remember failed ({exc}); this turn's messages will be "
                "read again at the next turn's end",
            )
        if fields is None:
            return None
        return await self._emit(MemoryUpdated, trigger=trigger, **fields)

    async def _finish(
        self, reason: StopReason, *, final_answer: str | None = None, detail: str = ""
    ) -> Event:
        """The run's `run_finished`, after what a run ends with: the facts of the turn kept
        (memory), the files as it leaves them (checkpoints). Each is recorded once the one
        before is yielded (`events`): a crash in between leaves a run to resume, as between
        any two events. Returns the first."""
        finished: dict[str, Any] = {
            "stop_reason": reason,
            "final_answer": final_answer,
            "detail": detail,
        }
        steps: list[Callable[[], Awaitable[Event | None]]] = []
        if self.memory is not None and reason not in _UNREAD:
            steps.append(partial(self._remember, "turn_end"))
        # A run that waits for an answer goes on: its files are kept when it stops for good.
        if self.snapshots is not None and self.state.checkpoints and reason != StopReason.WAITING:
            steps.append(partial(self._checkpoint, at_end=True))
        self._finishing = [*steps, partial(self._emit, RunFinished, **finished)]
        while (event := await self._finishing.pop(0)()) is None:
            pass  # the last step, the finish itself, records an event
        return event

    async def _finished(self) -> AsyncIterator[Event]:
        """The rest of a finish (`_finish`), each event recorded once the one before is
        yielded."""
        while self._finishing:
            if (event := await self._finishing.pop(0)()) is not None:
                yield event

    def _live(self, kind: type[Any], **fields: Any) -> Event:
        """A delta of the reply being streamed: on the stream only, not in the log (the reply
        is, whole); it carries the seq of the event it precedes."""
        fields.update(self._envelope, seq=self.state.next_seq)
        event: Event = kind.__pydantic_validator__.validate_python(fields)
        return event

    async def _emit(self, kind: type[Any], *, commit: bool = True, **fields: Any) -> Event:
        """Append the next event and fold it in: the one way state changes."""
        state = self.state
        fields.update(self._envelope, seq=state.next_seq, ts=_now(UTC))
        # What `kind(**fields)` does, minus a Python frame: this runs for every event.
        event: Event = kind.__pydantic_validator__.validate_python(fields)
        # Folded in before the append awaits, so concurrent tool tasks never share a seq;
        # appends are issued in seq order, and a log keeps that order.
        state.apply(event)
        self._uncommitted = not commit
        await self.log.append(event, commit=commit)
        if self.spans is not None:
            self.spans.on(event)
        return event


RECONSIDER = (
    "Your tool calls above were not run: the user sent a new instruction (below) after you "
    "chose them. Reconsider them in its light: make them again if they are still right, or "
    "replace them."
)


_UNREAD = frozenset({StopReason.WAITING, StopReason.CANCELLED, StopReason.ERROR})
"""Ends whose turn memory does not read yet: a run that waits goes on, one cancelled or
failed is not to wait on another model call. The next turn's end reads it."""

HOOKS = ("before_round", "after_response", "on_final", "before_tool", "after_tools")


_OVERRIDDEN: dict[type[Policy], tuple[str, ...]] = {}


def hooks_of(kind: type[Policy]) -> tuple[str, ...]:
    """The hooks a policy class implements (worked out once per class)."""
    hooks = _OVERRIDDEN.get(kind)
    if hooks is None:
        hooks = tuple(h for h in HOOKS if getattr(kind, h) is not getattr(Policy, h))
        _OVERRIDDEN[kind] = hooks
    return hooks


def _capped(settings: ModelSettings, max_tokens: int) -> ModelSettings:
    """`settings` with another output cap: made for most rounds of a run whose window is
    smaller than the model's cap plus the request, so a copy without `replace`'s checks."""
    capped = object.__new__(ModelSettings)
    capped.__dict__.update(settings.__dict__, max_tokens=max_tokens)
    return capped


def _denied(call: ToolCall, decided: PermissionDecided) -> ToolResultMessage:
    text = denial(call.name, by=decided.by, rule=decided.rule)
    return ToolResultMessage(call_id=call.id, name=call.name, content=text, is_error=True)


def _unique_call_ids(message: AssistantMessage, step: int) -> AssistantMessage:
    """Results pair with calls by id, so a missing or repeated id (small models and some
    servers produce them) gets a unique one, derived from the step so a replay agrees."""
    calls = message.tool_calls
    if len(calls) < 2:  # the usual case
        if not calls or calls[0].id:
            return message
    else:
        ids = {call.id for call in calls}
        if len(ids) == len(calls) and "" not in ids:
            return message
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for index, call in enumerate(calls):
        if not call.id or call.id in seen:
            call = call.model_copy(update={"id": f"{call.id or 'call'}_{step}_{index}"})
        seen.add(call.id)
        unique.append(call)
    return message.model_copy(update={"tool_calls": tuple(unique)})


async def _close(stream: AsyncIterator[Any]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
