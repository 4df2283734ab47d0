"""BFCL cases as the harnesses see them, and their scoring by BFCL's own AST checker.

A BFCL function doc is JSON-schema-like ("dict", "float", "tuple", "any"); `to_json_schema`
turns it into JSON schema. Tool names may hold "." (`math.factorial`), which no tool-calling API
accepts: a tool is named with "_" instead, and calls are mapped back before scoring.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import types
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

CATEGORIES = ("simple_python", "multiple")

SYSTEM_PROMPT = (
    "You are an expert in composing function calls. You are given a question and a set of "
    "possible functions. Based on the question, call the function that achieves the purpose, "
    "with the argument values that the question gives."
)

CHECKER_MODEL = "gpt-4o-2024-11-20"
"""A non-FC key of bfcl's MODEL_CONFIG_MAPPING: the checker then leaves function names alone
(the harnesses' names are mapped back to BFCL's here)."""

TYPES = {"dict": "object", "float": "number", "tuple": "array"}


@dataclass(frozen=True, kw_only=True)
class Tool:
    name: str
    """Valid tool name ("." replaced by "_")."""
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""


@dataclass(frozen=True, kw_only=True)
class Case:
    id: str
    category: str
    question: str
    functions: list[dict[str, Any]]
    """BFCL's function docs, as the checker wants them."""
    answer: list[dict[str, Any]]
    """BFCL's possible answers."""
    tools: list[Tool]
    names: dict[str, str]
    """Tool name -> BFCL function name."""


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] | None
    """None: the model's arguments were not a JSON object."""


def load(category: str, limit: int) -> list[Case]:
    """The first `limit` cases of a category (all when limit is 0)."""
    data = files("bfcl_eval") / "data"
    questions = _read(data / f"BFCL_v4_{category}.json")
    truth = _read(data / "possible_answer" / f"BFCL_v4_{category}.json")
    answers = {row["id"]: row["ground_truth"] for row in truth}
    if limit:
        questions = questions[:limit]
    return [_case(row, category, answers[row["id"]]) for row in questions]


def _read(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _case(row: dict[str, Any], category: str, answer: list[dict[str, Any]]) -> Case:
    (turn,) = row["question"]  # single-turn categories: one user message
    tools = [
        Tool(
            name=tool_name(f["name"]),
            description=f.get("description", ""),
            parameters=to_json_schema(f["parameters"]),
        )
        for f in row["function"]
    ]
    return Case(
        id=row["id"],
        category=category,
        question="\n".join(m["content"] for m in turn),
        functions=row["function"],
        answer=answer,
        tools=tools,
        names={tool_name(f["name"]): f["name"] for f in row["function"]},
    )


def tool_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """BFCL's dialect to JSON schema: "dict" -> object, "float" -> number, "tuple" -> array,
    "any" -> no type constraint; nested properties and items converted alike."""
    out = {key: value for key, value in schema.items() if key not in ("type", "optional")}
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "any":
        out["type"] = TYPES.get(kind, kind)
    if isinstance(props := schema.get("properties"), dict):
        out["properties"] = {name: to_json_schema(sub) for name, sub in props.items()}
    if isinstance(items := schema.get("items"), dict):
        out["items"] = to_json_schema(items)
    if isinstance(extra := schema.get("additionalProperties"), dict):
        out["additionalProperties"] = to_json_schema(extra)
    return out


def score(case: Case, calls: list[Call]) -> bool:
    """BFCL's AST check of the calls (names mapped back to BFCL's)."""
    if any(c.arguments is None for c in calls):
        return False
    without_java_and_js_parsers()
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    output = [{case.names.get(c.name, c.name): c.arguments} for c in calls]
    result = ast_checker(
        copy.deepcopy(case.functions),
        output,
        copy.deepcopy(case.answer),
        Language.PYTHON,
        case.category,
        CHECKER_MODEL,
    )
    return bool(result["valid"])


def without_java_and_js_parsers() -> None:
    """bfcl-eval builds Java and JavaScript parsers when imported, with tree-sitter 0.21's API;
    reins needs tree-sitter >= 0.24 (its command parser). The Python categories scored here
    never parse Java or JS, so those two modules are stood in for, and both share one venv."""
    parser = "bfcl_eval.model_handler.parser"
    for module, function in (("java", "parse_java"), ("js", "parse_javascript")):
        name = f"{parser}.{module}_parser"
        if name not in sys.modules:
            stand_in = types.ModuleType(name)
            setattr(stand_in, f"{function}_function_call", _not_scored)
            sys.modules[name] = stand_in


def _not_scored(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("Java and JavaScript categories are not scored by this benchmark")
