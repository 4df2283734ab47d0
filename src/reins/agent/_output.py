"""Structured output (`Agent(output_type=...)`): the final answer is a value of a type — a
pydantic model, a dataclass, a TypedDict or a scalar — given as `final_answer`'s `answer`
(its schema the tool's, so the embedded model's grammar holds to it), checked, and handed back
typed as `RunResult.output`. The log keeps the answer as JSON text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import PydanticSchemaGenerationError, PydanticUserError, TypeAdapter, ValidationError

from ..core._errors import ToolError, UsageError
from ..core._state import RunState
from ..policies import CONTINUE, OnFinal, Policy, Reject
from ..tools import Tool
from ..tools._schema import inline_refs
from ..tools._tool import AnyArguments

FINAL_ANSWER = "final_answer"


@dataclass(frozen=True, eq=False)
class Output:
    """What the answer must be."""

    type: Any
    adapter: TypeAdapter[Any] = field(init=False)

    def __post_init__(self) -> None:
        try:
            adapter = TypeAdapter(self.type)
            adapter.json_schema()
        except (PydanticUserError, PydanticSchemaGenerationError) as exc:
            raise UsageError(f"output_type {self.name}: {str(exc).splitlines()[0]}") from None
        object.__setattr__(self, "adapter", adapter)

    @property
    def name(self) -> str:
        return getattr(self.type, "__name__", str(self.type))

    @cached_property
    def tool(self) -> Tool:
        """`final_answer`, its `answer` of the output type."""
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"answer": inline_refs(self.adapter.json_schema())},
            "required": ["answer"],
            "additionalProperties": False,
        }

        async def final_answer(**arguments: Any) -> str:
            self.parse(arguments["answer"])  # what JSON Schema cannot say, pydantic does
            return "Final answer recorded."

        return Tool(
            name=FINAL_ANSWER,
            description=(
                f"Finish: call it once the goal is reached, with your answer as a {self.name} "
                "(the schema of `answer`)."
            ),
            fn=final_answer,
            args_model=AnyArguments,
            read_only=True,
            schema=parameters,
        )

    def parse(self, answer: Any) -> Any:
        """The answer as the output type; `ToolError` saying what does not fit."""
        try:
            if isinstance(answer, str) and not _is_text(self.adapter):
                return self.adapter.validate_json(answer)
            return self.adapter.validate_python(answer)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
                for e in exc.errors()[:5]
            )
            raise ToolError(f"the answer is not a valid {self.name}: {problems}") from None


def answer_text(answer: Any) -> str:
    """How an answer is kept in the log: text as it is, anything else as JSON."""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


class OutputCheck(Policy):
    """A final answer that is not a value of the output type (a reply in prose, say) is sent
    back: the model is told to call final_answer with one."""

    def __init__(self, output: Output) -> None:
        self.output = output

    async def on_final(self, state: RunState, answer: str) -> OnFinal:
        try:
            self.output.parse(answer)
        except ToolError as exc:
            return Reject(
                f"{exc}. Give your answer by calling {FINAL_ANSWER} with `answer` as a "
                f"{self.output.name}, as its schema says."
            )
        return CONTINUE


def _is_text(adapter: TypeAdapter[Any]) -> bool:
    return adapter.json_schema().get("type") == "string"
