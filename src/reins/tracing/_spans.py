"""A run's spans, made from its events as the loop records them, and timed by them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core._catalog import split_name
from ..core._events import (
    Event,
    ModelRequested,
    ModelResponded,
    RunFinished,
    ToolCallFinished,
    ToolCallStarted,
)
from ..core._state import RunState
from ..core._stop import StopReason

_open_calls: dict[tuple[str, str], tuple[Any, Any]] = {}
"""The tool-call spans under way and their runs' tracers, by (run id, call id): a subagent's
run, which its config links to the call that started it, is traced under that call's span."""


def tracer_of_call(run_id: str, call_id: str) -> Any:
    """The tracer of the run whose tool call `call_id` is under way, if that run is traced."""
    open_call = _open_calls.get((run_id, call_id))
    return None if open_call is None else open_call[1]


class RunSpans:
    """`invoke_agent` for the run, `chat` for each model call and `execute_tool` for each tool
    call under it, with the GenAI conventions' `gen_ai.*` attributes (and `reins.*` ones for
    what they have no name for)."""

    def __init__(self, tracer: Any, state: RunState, agent_name: str = "reins") -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        self.state = state
        config = state.config
        self.provider, self.model = split_name(config.model)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent_name,
            "gen_ai.conversation.id": state.session_id,
            "gen_ai.provider.name": self.provider or "reins",
            "gen_ai.request.model": self.model,
            "reins.run_id": state.run_id,
        }
        parent = None
        if config.parent_run_id:
            attributes["reins.parent_run_id"] = config.parent_run_id
            call = _open_calls.get((config.parent_run_id, config.parent_call_id or ""))
            parent = trace.set_span_in_context(call[0]) if call is not None else None
        self.run = tracer.start_span(
            f"invoke_agent {agent_name}", context=parent, attributes=attributes
        )
        self.context = trace.set_span_in_context(self.run)
        self.call: Any = None
        self.tools: dict[str, Any] = {}

    def on(self, event: Event) -> None:
        match event:
            case ModelRequested():
                self.call = self._child(
                    f"chat {self.model}",
                    event.ts,
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": self.provider or "reins",
                        "gen_ai.request.model": self.model,
                        "reins.step": event.step,
                    },
                    kind=self._trace.SpanKind.CLIENT,
                )
            case ModelResponded() if self.call is not None:
                usage = event.usage
                self.call.set_attributes(
                    {
                        "gen_ai.response.model": split_name(event.model)[1],
                        "gen_ai.response.finish_reasons": [event.finish],
                        "gen_ai.usage.input_tokens": usage.input_tokens,
                        "gen_ai.usage.output_tokens": usage.output_tokens,
                        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
                        **({"reins.cost_usd": event.cost} if event.cost is not None else {}),
                    }
                )
                self.call.end(_ns(event.ts))
                self.call = None
            case ToolCallStarted():
                call = event.call
                self.tools[call.id] = self._child(
                    f"execute_tool {call.name}",
                    event.ts,
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": call.name,
                        "gen_ai.tool.call.id": call.id,
                        "gen_ai.tool.type": "function",
                        "reins.step": event.step,
                    },
                )
                _open_calls[(event.run_id, call.id)] = (self.tools[call.id], self.tracer)
            case ToolCallFinished():
                span = self.tools.pop(event.result.call_id, None)
                _open_calls.pop((event.run_id, event.result.call_id), None)
                if span is not None:
                    if event.result.is_error:
                        span.set_attribute("error.type", "tool_error")
                        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
                    span.end(_ns(event.ts))
            case RunFinished():
                self._finish(event)

    def close(self) -> None:
        """End what is still open: the loop stopped without finishing the run."""
        if self.run is not None:
            self._end_all("the run stopped before it finished", None)

    def _finish(self, finished: RunFinished) -> None:
        usage = self.state.usage
        self.run.set_attributes(
            {
                "reins.stop_reason": finished.stop_reason.value,
                "reins.steps": self.state.step,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "reins.cost_usd": self.state.cost,
            }
        )
        failed = finished.stop_reason is StopReason.ERROR
        self._end_all(finished.detail if failed else None, finished.ts)

    def _end_all(self, error: str | None, ts: datetime | None) -> None:
        end = None if ts is None else _ns(ts)
        for call_id in self.tools:
            _open_calls.pop((self.state.run_id, call_id), None)
        for span in [*([self.call] if self.call else []), *self.tools.values(), self.run]:
            if error is not None:
                span.set_attribute("error.type", "reins_error")
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error))
            span.end(end)
        self.call, self.tools, self.run = None, {}, None

    def _child(self, name: str, ts: datetime, attributes: dict[str, Any], **kind: Any) -> Any:
        return self.tracer.start_span(
            name, context=self.context, start_time=_ns(ts), attributes=attributes, **kind
        )


def _ns(ts: datetime) -> int:
    return int(ts.timestamp() * 1e9)
