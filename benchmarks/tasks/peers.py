"""The peers on the task suite: other harnesses driving the same model file as reins.

`llama_server` serves the GGUF that `--model local:NAME` loads with llama.cpp's `llama-server`
(OpenAI-compatible, native tool calls); pydantic-ai, openai-agents and smolagents drive it, each
its normal way, with reins' own built-in tools wrapped (`ReinsTools`: the calls run through
reins' `ToolExecutor` in the task's workspace, `run_command` in reins' default sandbox), reins'
system prompt, temperature 0, reins' local output-token cap and the same step cap. Each peer
answers through its own final-answer mechanism, offered under reins' name `final_answer` since
the prompt asks for that tool: pydantic-ai an output tool (or the final text), openai-agents a
tool it stops at (or the final text), smolagents its built-in `final_answer` tool.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reins.models._local import DEFAULT_MAX_TOKENS

REPO = Path(__file__).resolve().parents[2]
SERVED = "served"
"""The model name sent to llama-server (it serves one model whatever the name)."""
TEMPERATURE = 0.0  # reins' LocalModel samples at 0
NEEDS_TOOL_TEMPLATE = {"smollm2"}
"""Models whose own chat template cannot render tools (llama-server would drop them silently):
they get Qwen2.5's ChatML template with `<tool_call>` tags (same special tokens)."""


@dataclass(kw_only=True)
class Run:
    """What a harness did on one task; filled as it goes, so a crash still shows how far."""

    steps: int = 0
    stop_reason: str = "harness error"
    answer: str | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    error: str | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    first_action_at: float | None = None
    """`time.perf_counter()` at the first tool call seen (`acted`)."""

    def acted(self) -> None:
        """A tool call was made: the first one's time is kept."""
        if self.first_action_at is None:
            self.first_action_at = time.perf_counter()

    def failed(self, exc: BaseException) -> None:
        self.stop_reason = type(exc).__name__
        self.error = f"{type(exc).__name__}: {exc}"[:300]


@contextmanager
def llama_server(model: str) -> Iterator[str]:
    """`llama-server -m GGUF --jinja -c 8192` on 127.0.0.1 and a free port, for the whole run;
    yields its OpenAI base URL (`.../v1`). It gets the threads reins' in-process model takes
    (`$REINS_LOCAL_THREADS`, else one per physical core): the configs run one at a time, and
    nothing else should (two llama.cpp processes spinning on the same cores slow each other
    from seconds to minutes a request)."""
    from reins.models._embedded import DEFAULT_EMBEDDED, embedded_gguf
    from reins.models._local import _default_threads

    sys.path.insert(0, str(REPO))  # tests/llama_server.py finds the cached binary and starts it
    from tests.llama_server import llama_server_binary, llama_server_template, run_llama_server

    kind, _, name = model.partition(":")
    if kind != "local" or name.endswith(".gguf"):
        raise SystemExit(f"peer configs serve an embedded model (local or local:NAME), not {model}")
    name = name or DEFAULT_EMBEDDED
    binary = llama_server_binary()
    if binary is None:
        raise SystemExit("no llama-server binary: `make peers` builds it")
    template = llama_server_template() if name in NEEDS_TOOL_TEMPLATE else None
    gguf = embedded_gguf(name)
    with run_llama_server(
        binary,
        gguf,
        chat_template=template,
        context=8192,
        threads=_default_threads(),
    ) as base_url:
        yield f"{base_url}/v1"


class ReinsTools:
    """reins' built-in tools (but `final_answer`) run by reins' executor in one workspace."""

    def __init__(self, folder: Path, names: list[str] | None, run: Run) -> None:
        from reins.tools import Tool, ToolContext, ToolExecutor, Workspace, builtin_tools

        tools: list[Tool] = [t for t in builtin_tools(names) if t.name != "final_answer"]
        context = ToolContext(workspace=Workspace(folder), session_id="peer", run_id="peer")
        self.executor = ToolExecutor(tools, context=context)
        self.specs = self.executor.specs
        self.run = run

    async def call(self, name: str, arguments: dict[str, Any] | str) -> str:
        """The result's text, an error's as well (as reins shows it to the model)."""
        from reins import ToolCall

        if isinstance(arguments, str):  # the JSON text a model sent
            with suppress(ValueError):
                arguments = json.loads(arguments or "{}")
        raw = None if isinstance(arguments, dict) else str(arguments)
        call = ToolCall(
            id=f"call-{self.run.tool_calls}",
            name=name,
            arguments=arguments if isinstance(arguments, dict) else {},
            raw_arguments=raw,
        )
        self.run.acted()
        result = await self.executor.execute(call)
        self.run.tool_calls += 1
        self.run.tool_errors += result.is_error
        return result.content

    def caller(self, name: str) -> Callable[..., Awaitable[str]]:
        async def call(**arguments: Any) -> str:
            return await self.call(name, arguments)

        return call


class Answer(str):
    """An answer given through the `final_answer` tool, not as text."""


def final_answer(answer: str) -> str:
    """Finish: call it once the goal is reached, with your answer for the user.

    Args:
        answer: The number, name or text the user asked for, or what you changed and where.
    """
    return Answer(answer)


def text_answer(text: str) -> str:
    """A text reply read as reins reads one: what follows a `FINAL_ANSWER:` line, else all."""
    from reins.core._state import _marked_answer

    marked = _marked_answer(text)
    return text.strip() if marked is None else marked


async def pydantic_ai(
    base_url: str, prompt: str, goal: str, tools: ReinsTools, max_steps: int, run: Run
) -> None:
    from pydantic_ai import Agent, Tool, ToolOutput, capture_run_messages
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    provider = OpenAIProvider(base_url=base_url, api_key="none")
    agent = Agent(
        OpenAIChatModel(SERVED, provider=provider),
        system_prompt=prompt,
        tools=[
            Tool.from_schema(
                tools.caller(s.name),
                name=s.name,
                description=s.description,
                json_schema=s.parameters,
            )
            for s in tools.specs
        ],
        output_type=[ToolOutput(final_answer, name="final_answer"), str],
        model_settings={"temperature": TEMPERATURE, "max_tokens": DEFAULT_MAX_TOKENS},
    )
    with capture_run_messages() as messages:
        try:
            result = await agent.run(goal, usage_limits=UsageLimits(request_limit=max_steps))
            out = result.output
            run.answer = str(out) if isinstance(out, Answer) else text_answer(out)
            run.stop_reason = "end_turn"
        except UsageLimitExceeded:
            run.stop_reason = "max_steps"
        except Exception as exc:
            run.failed(exc)
        finally:
            run.steps = sum(isinstance(m, ModelResponse) for m in messages)
            run.transcript = ModelMessagesTypeAdapter.dump_python(messages, mode="json")


async def openai_agents(
    base_url: str, prompt: str, goal: str, tools: ReinsTools, max_steps: int, run: Run
) -> None:
    from agents import (
        Agent,
        FunctionTool,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        StopAtTools,
        set_tracing_disabled,
    )
    from agents.exceptions import AgentsException, MaxTurnsExceeded
    from openai import AsyncOpenAI

    from reins.tools import final_answer as reins_final_answer

    set_tracing_disabled(True)

    answered: list[str] = []

    def invoke(name: str) -> Callable[[Any, str], Awaitable[str]]:
        async def on_invoke(context: Any, arguments: str) -> str:
            tools.run.acted()
            if name != "final_answer":
                return await tools.call(name, arguments)
            try:
                answered.append(str(json.loads(arguments)["answer"]))
            except (ValueError, KeyError, TypeError):
                answered.append(arguments)
            return answered[-1]  # the run stops here

        return on_invoke

    client = AsyncOpenAI(base_url=base_url, api_key="none")
    agent = Agent(
        name="reins-tasks",
        instructions=prompt,
        model=OpenAIChatCompletionsModel(model=SERVED, openai_client=client),
        model_settings=ModelSettings(
            temperature=TEMPERATURE, max_tokens=DEFAULT_MAX_TOKENS, tool_choice="auto"
        ),
        tools=[
            FunctionTool(
                name=s.name,
                description=s.description,
                params_json_schema=s.parameters,
                on_invoke_tool=invoke(s.name),
                strict_json_schema=False,  # optional arguments
            )
            for s in [*tools.specs, reins_final_answer.spec]
        ],
        tool_use_behavior=StopAtTools(stop_at_tool_names=["final_answer"]),
    )
    data: Any = None
    try:
        data = await Runner.run(agent, goal, max_turns=max_steps)
        run.answer = answered[0] if answered else text_answer(str(data.final_output))
        run.stop_reason = "end_turn"
    except AgentsException as exc:
        data = exc.run_data
        if isinstance(exc, MaxTurnsExceeded):
            run.stop_reason = "max_steps"
        else:
            run.failed(exc)
    except Exception as exc:
        run.failed(exc)
    finally:
        await client.close()
        if data is not None:
            run.steps = len(data.raw_responses)
            first = (
                data.input
                if isinstance(data.input, list)
                else [{"role": "user", "content": data.input}]
            )
            items = [*first, *(i.to_input_item() for i in data.new_items)]
            run.transcript = [{"role": "system", "content": prompt}, *_plain(items)]


async def smolagents(
    base_url: str, prompt: str, goal: str, tools: ReinsTools, max_steps: int, run: Run
) -> None:
    from smolagents import OpenAIServerModel, Tool, ToolCallingAgent
    from smolagents.memory import ActionStep
    from smolagents.monitoring import LogLevel

    loop = asyncio.get_running_loop()

    def wrap(spec: Any) -> Tool:
        def forward(self: Tool, **arguments: Any) -> str:  # in smolagents' thread
            arguments = {k: v for k, v in arguments.items() if v is not None}
            return asyncio.run_coroutine_threadsafe(tools.call(spec.name, arguments), loop).result()

        attributes = {
            "name": spec.name,
            "description": spec.description,
            "inputs": _smol_inputs(spec.parameters),
            "output_type": "string",
            "skip_forward_signature_validation": True,
            "forward": forward,
        }
        return type(f"Reins_{spec.name}", (Tool,), attributes)()

    model = OpenAIServerModel(
        model_id=SERVED,
        api_base=base_url,
        api_key="none",
        temperature=TEMPERATURE,
        max_tokens=DEFAULT_MAX_TOKENS,
    )
    agent = ToolCallingAgent(
        tools=[wrap(s) for s in tools.specs],
        model=model,
        max_steps=max_steps,
        verbosity_level=LogLevel.OFF,
    )
    agent.prompt_templates["system_prompt"] = prompt
    try:
        result = await asyncio.to_thread(agent.run, goal, return_full_result=True)
        run.answer = None if result.output is None else str(result.output)
        run.stop_reason = {"success": "end_turn", "max_steps_error": "max_steps"}.get(
            result.state, result.state
        )
    except asyncio.CancelledError:  # the task's time is up: stop after the current step
        agent.interrupt()
        raise
    except Exception as exc:
        run.failed(exc)
    finally:
        steps = agent.memory.steps
        run.steps = sum(
            isinstance(s, ActionStep) and s.model_output_message is not None for s in steps
        ) + (run.stop_reason == "max_steps")
        run.transcript = _plain(agent.write_memory_to_messages())


DRIVERS = {"pydantic-ai": pydantic_ai, "openai-agents": openai_agents, "smolagents": smolagents}
PEERS = tuple(DRIVERS)


async def drive(
    peer: str,
    base_url: str,
    goal: str,
    folder: Path,
    tool_names: list[str] | None,
    max_steps: int,
    run: Run,
) -> None:
    """One task by one peer; `run` gets what happened (an exception is recorded there)."""
    prompt = reins_prompt()
    tools = ReinsTools(folder, tool_names, run)
    try:
        await DRIVERS[peer](base_url, prompt, goal, tools, max_steps, run)
    finally:
        tools.executor.close()


def reins_prompt() -> str:
    """The system prompt reins starts a run with (no instructions, nothing to approve)."""
    from reins.context._prompt import system_prompt

    return system_prompt(instructions="", approvals=False)


def _smol_inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A JSON schema's properties as smolagents `inputs` (an optional one is nullable)."""
    required = set(schema.get("required", []))
    inputs: dict[str, dict[str, Any]] = {}
    for name, prop in schema.get("properties", {}).items():
        types = [p.get("type") for p in prop.get("anyOf", [prop])]
        kind = next((t for t in types if t not in (None, "null")), "any")
        entry = {"type": kind, "description": prop.get("description", name)}
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


def _plain(items: Any) -> list[dict[str, Any]]:
    """Messages as plain JSON dicts."""
    out: list[dict[str, Any]] = []
    for item in items:
        if hasattr(item, "model_dump"):
            item = item.model_dump(mode="json", exclude_none=True)
        elif hasattr(item, "dict") and not isinstance(item, dict):
            item = item.dict()
        out.append(json.loads(json.dumps(item, default=str)))
    return out
