"""The strict JSON action contract: one object, typed rejections, one repair message."""

from __future__ import annotations

import json
import pickle
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from reins import ToolCall, ToolError, ToolSpec, UsageError, tool
from reins.core._actions import (
    ENVELOPE,
    MAX_DEPTH,
    MAX_REPAIRS,
    Action,
    ActionError,
    ActionErrorKind,
    _validator,
    parse_action,
    repair_message,
)

Kind = ActionErrorKind


class Options(BaseModel):
    mode: Literal["fast", "exact"] = "fast"
    limit: int = 5


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return path


@tool
def search(query: str, options: Options, tags: list[str] | None = None) -> str:
    """Search with nested options: the schema has $defs, $ref, an enum and anyOf."""
    return query


@tool
def save(data: list[Any]) -> str:
    """Store any JSON array."""
    return ""


@tool
def finish() -> str:
    """Takes no arguments."""
    return ""


TOOL_OBJECTS = {t.name: t for t in (write_file, search, save, finish)}
TOOLS = [t.spec for t in TOOL_OBJECTS.values()]
WRITE: dict[str, Any] = {"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}
WRITE_JSON = json.dumps(WRITE)

# No deadline (the machine is shared) and no example database (runs stay independent).
relaxed = settings(deadline=None, database=None)


def outcome(text: str) -> Action | ActionError:
    """Parse `text`; any exception but ActionError fails the test. Check what each side promises."""
    try:
        action = parse_action(text, TOOLS)
    except ActionError as exc:
        error = exc
    else:
        return _checked(action)
    assert isinstance(error.kind, ActionErrorKind)
    assert error.message
    assert str(error) == error.message
    assert len(error.message.splitlines()) == 1
    error.message.encode("utf-8")  # fit for the event log
    return error


def _checked(action: Action) -> Action:
    spec = next(s for s in TOOLS if s.name == action.name)
    Draft202012Validator(spec.parameters).validate(action.arguments)
    TOOL_OBJECTS[action.name].validate(action.arguments)  # the executor accepts it too
    return action


def reject(text: str, tools: list[ToolSpec] = TOOLS) -> ActionError:
    with pytest.raises(ActionError) as info:
        parse_action(text, tools)
    return info.value


# --- valid actions ---------------------------------------------------------------------------


def test_a_valid_action_round_trips_to_a_tool_call() -> None:
    action = parse_action(WRITE_JSON, TOOLS)
    assert action == Action(name="write_file", arguments={"path": "a.txt", "content": "hi"})
    assert action.to_call("call_1") == ToolCall(
        id="call_1", name="write_file", arguments={"path": "a.txt", "content": "hi"}
    )


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{WRITE_JSON}\n```",
        f"```\n{WRITE_JSON}\n```",
        f"```JSON\n{WRITE_JSON}\n```",
        f"```json {WRITE_JSON} ```",
        f"\n\t  ```json\n\n  {WRITE_JSON}  \n\n```  \n",
        f"   \n{WRITE_JSON}\n\n",
        json.dumps(WRITE, indent=4),
    ],
)
def test_one_fence_and_surrounding_whitespace_are_stripped(text: str) -> None:
    assert parse_action(text, TOOLS) == Action(**WRITE)


def test_a_fence_inside_a_string_does_not_end_the_outer_fence() -> None:
    args = {"path": "README.md", "content": "```py\nx = 1\n```\n"}
    text = f"```json\n{json.dumps({'name': 'write_file', 'arguments': args})}\n```"
    assert parse_action(text, TOOLS).arguments == args


def test_raw_control_characters_inside_strings_are_accepted() -> None:
    """llama.cpp's JSON grammar lets a model type a newline or tab into a string unescaped; the
    parser must accept what the grammar allowed, or a constrained run ends in `error`."""
    text = '{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\n\ty = 2\r\n"}}'
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(text)  # what the parser did before
    action = parse_action(text, TOOLS)
    assert action.arguments["content"] == "x = 1\n\ty = 2\r\n"


def test_nested_schema_with_refs_enums_and_optionals_is_validated() -> None:
    arguments = {"query": "q", "options": {"mode": "exact", "limit": 2}, "tags": ["a"]}
    text = json.dumps({"name": "search", "arguments": arguments})
    assert parse_action(text, TOOLS) == Action(name="search", arguments=arguments)
    assert parse_action('{"name": "finish", "arguments": {}}', TOOLS).arguments == {}


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    content = "[{" * 5000 + '\\"' + "]}" * 10
    text = f'{{"name": "write_file", "arguments": {{"path": "p", "content": "{content}"}}}}'
    assert parse_action(text, TOOLS).arguments["content"] == content.replace('\\"', '"')


# --- each kind of error ----------------------------------------------------------------------


CASES = [
    ("", Kind.EMPTY, ["empty"]),
    (" \n\t ", Kind.EMPTY, ["empty"]),
    ("```json\n\n```", Kind.EMPTY, ["empty"]),
    (f"Sure! {WRITE_JSON}", Kind.NOT_JSON, ["Expecting value", "line 1 column 1", "'Sure!"]),
    (f"{WRITE_JSON}\nDone.", Kind.NOT_JSON, ["Extra data", "line 2 column 1", "'Done.'"]),
    (f"{WRITE_JSON} {WRITE_JSON}", Kind.NOT_JSON, ["Extra data", "column 73"]),
    (WRITE_JSON[:-1], Kind.NOT_JSON, ["Expecting ',' delimiter", "end of reply"]),
    ("{'name': 'finish', 'arguments': {}}", Kind.NOT_JSON, ["double quotes"]),
    (f"```python\n{WRITE_JSON}\n```", Kind.NOT_JSON, ["line 1 column 4 (near 'python"]),
    (f"```json\n{WRITE_JSON}", Kind.NOT_JSON, ["line 1 column 1"]),
    (f"```json\n```json\n{WRITE_JSON}\n```\n```", Kind.NOT_JSON, ["line 2 column 1"]),
    ('```json\n{"name": }\n```', Kind.NOT_JSON, ["line 2 column 10", "'}"]),
    ('{"name": "save", "arguments": {"data": [NaN]}}', Kind.NOT_JSON, ["NaN"]),
    ('{"name": "save", "arguments": {"data": [1e999]}}', Kind.NOT_JSON, ['"1e999"', "range"]),
    ('{"name": "save", "arguments": {"data": [%s]}}' % ("9" * 5000), Kind.NOT_JSON, ["5000"]),
    ('{"name": "finish", "name": "x", "arguments": {}}', Kind.NOT_JSON, ['duplicate key "name"']),
    ('{"name": "save", "arguments": {"data": ["\\ud83d"]}}', Kind.NOT_JSON, ["surrogate"]),
    ('["write_file", {}]', Kind.NOT_OBJECT, ["array"]),
    ('"write_file"', Kind.NOT_OBJECT, ["string"]),
    ("42", Kind.NOT_OBJECT, ["number"]),
    ("null", Kind.NOT_OBJECT, ["null"]),
    ("true", Kind.NOT_OBJECT, ["boolean"]),
    ('{"tool": "finish", "arguments": {}}', Kind.MISSING_NAME, ['"tool"', '"arguments"']),
    ("{}", Kind.MISSING_NAME, ["empty"]),
    ('{"name": ["finish"], "arguments": {}}', Kind.NAME_NOT_STRING, ["array"]),
    ('{"name": null, "arguments": {}}', Kind.NAME_NOT_STRING, ["null"]),
    (
        '{"name": "wirte_file", "arguments": {}}',
        Kind.UNKNOWN_TOOL,
        ['"wirte_file"', "write_file, search, save, finish", 'did you mean "write_file"'],
    ),
    ('{"name": " finish", "arguments": {}}', Kind.UNKNOWN_TOOL, ['" finish"']),
    (
        '{"name": "write_file", "path": "a", "content": "b"}',
        Kind.MISSING_ARGUMENTS,
        ['"arguments"', '"path", "content"'],
    ),
    ('{"name": "finish"}', Kind.MISSING_ARGUMENTS, ['"arguments"']),
    ('{"name": "finish", "arguments": "none"}', Kind.ARGUMENTS_NOT_OBJECT, ["string"]),
    ('{"name": "finish", "arguments": null}', Kind.ARGUMENTS_NOT_OBJECT, ["null"]),
    (
        '{"thought": "t", "name": "finish", "arguments": {}, "id": 1, "why": 2}',
        Kind.EXTRA_KEYS,
        ['"id", "why"', 'only "thought", "name" and "arguments"'],
    ),
    ('{"thought": ["a"], "name": "finish", "arguments": {}}', Kind.THOUGHT_NOT_STRING, ["array"]),
    (
        '{"name": "write_file", "arguments": {"path": "a"}}',
        Kind.SCHEMA_INVALID,
        ["write_file", "arguments: 'content' is a required property"],
    ),
    (
        '{"name": "write_file", "arguments": {"path": 1, "content": "", "mode": "w"}}',
        Kind.SCHEMA_INVALID,
        ["arguments.path: 1 is not of type 'string'", "'mode' was unexpected"],
    ),
    (
        '{"name": "search", "arguments": {"query": "q", "options": {"mode": "slow"}}}',
        Kind.SCHEMA_INVALID,
        ["arguments.options.mode: 'slow' is not one of ['fast', 'exact']"],
    ),
    (
        '{"name": "search", "arguments": {"query": "q", "options": {}, "tags": ["a", 2]}}',
        Kind.SCHEMA_INVALID,
        ["arguments.tags[1]: 2 is not of type 'string'"],
    ),
    ('{"name": "finish", "arguments": {"x": 1}}', Kind.SCHEMA_INVALID, ["'x' was unexpected"]),
]


@pytest.mark.parametrize(("text", "kind", "fragments"), CASES)
def test_each_error_has_its_kind_and_says_what_and_where(
    text: str, kind: ActionErrorKind, fragments: list[str]
) -> None:
    error = reject(text)
    assert error.kind is kind
    for fragment in fragments:
        assert fragment in error.message


def test_every_kind_is_exercised_above() -> None:
    assert {kind for _, kind, _ in CASES} == set(ActionErrorKind)


def test_extra_keys_are_rejected_even_when_the_action_is_otherwise_valid() -> None:
    text = json.dumps({**WRITE, "reasoning": "write it"})
    assert reject(text).kind is Kind.EXTRA_KEYS
    assert outcome(WRITE_JSON) == Action(**WRITE)


def test_a_thought_before_the_action_is_kept_beside_it() -> None:
    text = json.dumps({"thought": " a.txt is missing: write it ", **WRITE})
    assert outcome(text) == Action(**WRITE, thought="a.txt is missing: write it")


def test_without_tools_every_name_is_unknown() -> None:
    error = reject('{"name": "finish", "arguments": {}}', tools=[])
    assert (error.kind, error.message) == (
        Kind.UNKNOWN_TOOL,
        'unknown tool "finish"; allowed tools: none',
    )


def test_long_model_text_is_clipped_in_messages() -> None:
    name = "x" * 10_000
    error = reject(json.dumps({"name": name, "arguments": {}}))
    assert error.kind is Kind.UNKNOWN_TOOL
    assert len(error.message) < 200
    many = {f"key{i}": i for i in range(50)}
    error = reject(json.dumps({"name": "finish", "arguments": {}, **many}))
    assert error.kind is Kind.EXTRA_KEYS
    assert error.message.endswith('and 45 more: only "thought", "name" and "arguments" are allowed')
    huge = {"name": "write_file", "arguments": {"path": ["p" * 10_000], "content": 1}}
    error = reject(json.dumps(huge))
    assert error.kind is Kind.SCHEMA_INVALID
    assert "arguments.path" in error.message
    assert "arguments.content: 1 is not of type 'string'" in error.message
    assert len(error.message) < 600


# --- deep nesting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 10_000,
        "[" * 10_000 + "]" * 10_000,
        '{"a": ' * 10_000 + "1" + "}" * 10_000,
        '{"name": "save", "arguments": {"data": ' + "[" * 10_000 + "]" * 10_000 + "}}",
    ],
)
def test_deep_nesting_is_not_json_and_never_overflows(text: str) -> None:
    error = reject(text)
    assert error.kind is Kind.NOT_JSON
    assert f"nested deeper than {MAX_DEPTH} levels" in error.message


def test_nesting_up_to_the_limit_is_accepted() -> None:
    prefix = '{"name": "save", "arguments": {"data": '

    def action(depth: int) -> str:  # the envelope and "arguments" are two levels
        return prefix + "[" * (depth - 2) + "]" * (depth - 2) + "}}"

    assert parse_action(action(MAX_DEPTH), TOOLS).name == "save"
    error = reject(action(MAX_DEPTH + 1))
    assert error.kind is Kind.NOT_JSON
    assert f"line 1 column {len(prefix) + MAX_DEPTH - 1} (near '[]]]" in error.message


# --- repair message --------------------------------------------------------------------------


def test_the_repair_message_restates_the_contract() -> None:
    error = reject('{"name": "wirte_file", "arguments": {}}')
    message = repair_message(error, TOOLS)
    assert message.startswith(f"Your reply was rejected: {error.message}\n")
    assert ENVELOPE == (
        '{"thought": "<what you know, what you do next>", "name": "<tool>", "arguments": {...}}'
    )
    assert f"exactly one JSON object and nothing else: {ENVELOPE}" in message
    assert "No prose" in message
    assert "Allowed tools: write_file, search, save, finish." in message
    assert "split it into several smaller actions" in message
    assert len(message) < 600


def test_each_kind_has_its_own_recovery_line() -> None:
    recoveries = {
        repair_message(ActionError(kind, "x"), TOOLS).splitlines()[1] for kind in ActionErrorKind
    }
    assert len(recoveries) == len(ActionErrorKind)


def test_action_error_is_a_retry_to_model_error() -> None:
    error = ActionError(Kind.NOT_JSON, "first\nsecond")
    assert isinstance(error, ToolError)
    assert error.message == "first second"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.kind, copy.message) == (ActionError, Kind.NOT_JSON, "first second")
    assert MAX_REPAIRS == 3


# --- validators and misuse -------------------------------------------------------------------


def test_validators_are_compiled_once_per_schema() -> None:
    _validator.cache_clear()
    for _ in range(3):
        parse_action(WRITE_JSON, TOOLS)
    same_schema = ToolSpec(name="write_file", description="", parameters=write_file.spec.parameters)
    parse_action(WRITE_JSON, [same_schema])
    info = _validator.cache_info()
    assert (info.misses, info.hits) == (1, 3)


@pytest.mark.parametrize(
    ("tools", "match"),
    [
        ([write_file.spec, write_file.spec], "tool names must be unique"),
        (
            [ToolSpec(name="write_file", description="", parameters={"type": 12})],
            "tool write_file has an unusable JSON schema",
        ),
        (
            [ToolSpec(name="write_file", description="", parameters={"$ref": "#/$defs/Nope"})],
            "tool write_file has an unusable JSON schema",
        ),
    ],
)
def test_unusable_tools_are_developer_misuse(tools: list[ToolSpec], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        parse_action(WRITE_JSON, tools)


# --- properties ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
write_args = st.fixed_dictionaries({"path": st.text(), "content": st.text()})
search_args = st.fixed_dictionaries(
    {
        "query": st.text(max_size=20),
        "options": st.fixed_dictionaries(
            {}, optional={"mode": st.sampled_from(["fast", "exact"]), "limit": st.integers()}
        ),
    },
    optional={"tags": st.none() | st.lists(st.text(max_size=5), max_size=3)},
)
valid_actions = st.one_of(
    st.builds(lambda a: {"name": "write_file", "arguments": a}, write_args),
    st.builds(lambda a: {"name": "search", "arguments": a}, search_args),
    st.builds(lambda a: {"name": "save", "arguments": {"data": a}}, st.lists(json_values)),
    st.just({"name": "finish", "arguments": {}}),
)
near_misses = st.dictionaries(
    st.sampled_from(["name", "arguments", "thought", "Name"]) | st.text(max_size=6),
    st.sampled_from(["write_file", "finish", "search"]) | json_values | write_args | search_args,
    max_size=4,
)
blank = st.text(" \t\n\r", max_size=3)


@st.composite
def dressed(draw: st.DrawFn, value: Any) -> str:
    """`value` as JSON, maybe indented, maybe fenced, with whitespace around."""
    text = json.dumps(value, indent=draw(st.sampled_from([None, 2])))
    fence = draw(st.sampled_from(["", "```json", "```", "```JSON"]))
    if fence:
        text = f"{fence}{draw(blank)}\n{text}{draw(blank)}\n```"
    return draw(blank) + text + draw(blank)


@relaxed
@given(
    st.text() | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters())
)
def test_any_text_gives_a_valid_action_or_an_action_error(text: str) -> None:
    outcome(text)


@relaxed
@given(json_values.flatmap(dressed))
def test_any_json_value_gives_a_valid_action_or_an_action_error(text: str) -> None:
    result = outcome(text)
    # keys are at most 8 characters, so "arguments" never appears and no value is an action
    assert isinstance(result, ActionError)
    assert result.kind in {
        Kind.NOT_OBJECT,
        Kind.MISSING_NAME,
        Kind.NAME_NOT_STRING,
        Kind.UNKNOWN_TOOL,
        Kind.MISSING_ARGUMENTS,
    }


@relaxed
@given(st.data())
def test_near_miss_objects_are_accepted_only_when_exactly_an_action(data: st.DataObject) -> None:
    value = data.draw(near_misses)
    result = outcome(data.draw(dressed(value)))
    if isinstance(result, Action):
        assert value == {"name": result.name, "arguments": result.arguments}
    else:
        assert result.kind is first_problem(value)


def first_problem(value: dict[str, Any]) -> ActionErrorKind:
    """The kind an object that is not a valid action must get: the checks run in this order."""
    name, arguments = value.get("name"), value.get("arguments")
    if "name" not in value:
        return Kind.MISSING_NAME
    if not isinstance(name, str):
        return Kind.NAME_NOT_STRING
    if name not in TOOL_OBJECTS:
        return Kind.UNKNOWN_TOOL
    if "arguments" not in value:
        return Kind.MISSING_ARGUMENTS
    if not isinstance(arguments, dict):
        return Kind.ARGUMENTS_NOT_OBJECT
    if set(value) - {"thought", "name", "arguments"}:
        return Kind.EXTRA_KEYS
    if not isinstance(value.get("thought", ""), str):
        return Kind.THOUGHT_NOT_STRING
    return Kind.SCHEMA_INVALID


@relaxed
@given(st.data())
def test_valid_actions_parse_back_exactly(data: st.DataObject) -> None:
    value = data.draw(valid_actions)
    assert outcome(data.draw(dressed(value))) == Action(**value)


@relaxed
@given(valid_actions, st.text().filter(str.strip), st.booleans())
def test_text_before_or_after_an_action_is_rejected(
    value: dict[str, Any], extra: str, before: bool
) -> None:
    text = extra + json.dumps(value) if before else json.dumps(value) + extra
    result = outcome(text)
    assert isinstance(result, ActionError)
    assert result.kind is Kind.NOT_JSON


@relaxed
@given(st.lists(st.sampled_from('[]{}"\\:,1 '), max_size=300).map("".join))
def test_bracket_soup_never_crashes(text: str) -> None:
    outcome("[" * 100 + text)
    outcome('{"name": "save", "arguments": {"data": ' + text)
