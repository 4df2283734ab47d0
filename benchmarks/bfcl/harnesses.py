"""The harnesses under test, each asked for one model turn on a BFCL case.

reins is used at the model level (`Model.request`/`stream` with `ToolSpec`s). The peers are used
their normal way, with the BFCL functions as tools that record their arguments and return "ok",
and stop after the first model response: pydantic-ai by stepping `agent.iter()` until a second
model request would start, openai-agents with `tool_use_behavior="stop_on_first_tool"`.
Every harness gets the same system prompt, temperature 0 and the same output-token cap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cases import SYSTEM_PROMPT, Call, Case

MAX_TOKENS = 256
SERVED_MODEL = "smollm2"
"""The embedded model the OpenAI-compatible server serves to the served configs."""


@dataclass(frozen=True, kw_only=True)
class Reply:
    calls: list[Call]
    text: str = ""
    output_tokens: int | None = None
    decode_tps: float | None = None
    """Output tokens per second while decoding (first to last token), where measured."""


class Harness(Protocol):
    name: str

    async def reply(self, case: Case) -> Reply: ...

    async def aclose(self) -> None: ...


def _reins_inputs(case: Case) -> tuple[list[Any], list[Any], Any]:
    from reins import ModelSettings, SystemMessage, ToolSpec, UserMessage

    messages = [SystemMessage(content=SYSTEM_PROMPT), UserMessage(content=case.question)]
    specs = [
        ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        for t in case.tools
    ]
    return messages, specs, ModelSettings(temperature=0.0, max_tokens=MAX_TOKENS)


def _reins_calls(message: Any) -> list[Call]:
    return [
        Call(c.name, None if c.raw_arguments is not None else dict(c.arguments))
        for c in message.tool_calls
    ]


class ReinsLocal:
    """reins' embedded llama.cpp model: strict JSON actions, grammar-constrained or not."""

    def __init__(self, *, embedded: str, constrained: bool) -> None:
        from reins.models import LocalModel

        self.name = f"reins local:{embedded}" + ("" if constrained else " (unconstrained)")
        self.model = LocalModel(embedded=embedded, constrained=constrained)

    async def reply(self, case: Case) -> Reply:
        from reins import ModelResponse, TextChunk

        response = None
        stamps: list[float] = []
        async for item in self.model.stream(*_reins_inputs(case)):  # what request() consumes
            if isinstance(item, TextChunk):
                stamps.append(time.perf_counter())
            elif isinstance(item, ModelResponse):
                response = item
        assert response is not None
        span = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
        return Reply(
            calls=_reins_calls(response.message),
            text=response.message.text,
            output_tokens=response.usage.output_tokens,
            decode_tps=(len(stamps) - 1) / span if span > 0 else None,
        )

    async def aclose(self) -> None:
        pass  # the llama.cpp context goes with the process


class ReinsServer:
    """reins' OpenAI-compatible provider: native tool calls."""

    name = "reins openai"

    def __init__(self, base_url: str) -> None:
        from reins.models import OpenAIModel

        self.model = OpenAIModel(model=SERVED_MODEL, base_url=base_url, api_key="none")

    async def reply(self, case: Case) -> Reply:
        response = await self.model.request(*_reins_inputs(case))
        return Reply(
            calls=_reins_calls(response.message),
            text=response.message.text,
            output_tokens=response.usage.output_tokens,
        )

    async def aclose(self) -> None:
        await self.model.aclose()


def _recorder(name: str, calls: list[Call]) -> Callable[..., Awaitable[str]]:
    async def record(**arguments: Any) -> str:
        calls.append(Call(name, arguments))
        return "ok"

    return record


class PydanticAI:
    name = "pydantic-ai"

    def __init__(self, base_url: str) -> None:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=base_url, api_key="none")
        self.model = OpenAIChatModel(SERVED_MODEL, provider=provider)

    async def reply(self, case: Case) -> Reply:
        from pydantic_ai import Agent, Tool

        calls: list[Call] = []
        tools = [
            Tool.from_schema(
                _recorder(t.name, calls),
                name=t.name,
                description=t.description,
                json_schema=t.parameters,
            )
            for t in case.tools
        ]
        agent = Agent(
            self.model,
            instructions=SYSTEM_PROMPT,
            tools=tools,
            model_settings={"temperature": 0.0, "max_tokens": MAX_TOKENS},
        )
        text, requests = "", 0
        async with agent.iter(case.question) as run:
            async for node in run:  # a node is yielded before it runs
                if Agent.is_model_request_node(node):
                    requests += 1
                    if requests > 1:  # the first response's tool calls have run
                        break
                elif Agent.is_call_tools_node(node):
                    parts = node.model_response.parts
                    text = "".join(p.content for p in parts if p.part_kind == "text")
        return Reply(calls=calls, text=text)  # (run.usage: a method before pydantic-ai 2)

    async def aclose(self) -> None:
        pass


class OpenAIAgents:
    name = "openai-agents"

    def __init__(self, base_url: str) -> None:
        from agents import OpenAIChatCompletionsModel, set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        self.client = AsyncOpenAI(base_url=base_url, api_key="none")
        self.model = OpenAIChatCompletionsModel(model=SERVED_MODEL, openai_client=self.client)

    async def reply(self, case: Case) -> Reply:
        from agents import Agent, FunctionTool, ModelSettings, Runner

        calls: list[Call] = []

        def tool(name: str) -> Callable[[Any, str], Awaitable[str]]:
            async def invoke(context: Any, arguments: str) -> str:
                parsed = json.loads(arguments or "{}")
                calls.append(Call(name, parsed if isinstance(parsed, dict) else None))
                return "ok"

            return invoke

        agent = Agent(
            name="bfcl",
            instructions=SYSTEM_PROMPT,
            model=self.model,
            # The OpenAI API defaults to "auto" when there are tools; llama-cpp-python's server
            # ignores the tools when tool_choice is unset, so it is set as the others send it.
            model_settings=ModelSettings(
                temperature=0.0, max_tokens=MAX_TOKENS, tool_choice="auto"
            ),
            tools=[
                FunctionTool(
                    name=t.name,
                    description=t.description,
                    params_json_schema=t.parameters,
                    on_invoke_tool=tool(t.name),
                    strict_json_schema=False,  # BFCL schemas have optional parameters
                )
                for t in case.tools
            ],
            tool_use_behavior="stop_on_first_tool",
        )
        result = await Runner.run(agent, case.question, max_turns=1)
        text = result.final_output if isinstance(result.final_output, str) and not calls else ""
        return Reply(
            calls=calls, text=text, output_tokens=result.context_wrapper.usage.output_tokens
        )

    async def aclose(self) -> None:
        await self.client.close()
