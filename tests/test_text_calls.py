"""Tool calls a model wrote as text over an OpenAI-compatible server: recovered as calls when
they are well-formed calls of offered tools, left as text (for the `LeakedMarkup` guard) when not.

The provider and the agent are tested against a scripted HTTP server (`test_model_faults`'s),
for every form, and against a real one: llama.cpp's `llama-server` on SmolLM2, whose own chat
template has no tools (the server drops them and parses no calls out of the reply). Left to
itself the model answers in prose or Python; the server's default grammar (`--grammar`) makes
it write Hermes `<tool_call>` markup, as a small model trained on that format does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    ModelResponse,
    ModelSettings,
    StopReason,
    ToolCall,
    ToolSpec,
    UserMessage,
)
from reins.events import ModelResponded, Notice, ResponseRejected, RunFinished, ToolCallFinished
from reins.models import OpenAIModel
from reins.models._embedded import embedded_gguf
from reins.models._text_calls import recover
from reins.policies import LeakedMarkup
from reins.policies._guards import strip_markup
from reins.tools import write_file

from .llama_server import built_llama_server, run_llama_server
from .test_model_faults import Peer, answer, completion, streamed

POKE = ToolSpec(
    name="poke",
    description="Poke.",
    parameters={
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "additionalProperties": False,
    },
)
TOOLS = [write_file.spec, POKE]
HELLO = [UserMessage(content="Create hello.txt containing hi")]


def calls_of(text: str) -> list[tuple[str, dict[str, object]]] | None:
    found = recover(text, TOOLS)
    return None if found is None else [(c.name, c.arguments) for c in found.calls]


# --- each markup --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        pytest.param(
            '<tool_call>\n{"name": "poke", "arguments": {"n": 1}}\n</tool_call>',
            [("poke", {"n": 1})],
            id="hermes",
        ),
        pytest.param(
            '<tool_call>{"name": "poke", "arguments": {}}</tool_call>\n'
            '<tool_call>{"name": "poke", "arguments": {"n": 2}}</tool_call>',
            [("poke", {}), ("poke", {"n": 2})],
            id="hermes-two-blocks",
        ),
        pytest.param(
            '<tool_call>[{"name": "poke", "arguments": {"n": 1}}, '
            '{"name": "poke", "arguments": {"n": 2}}]</tool_call>',
            [("poke", {"n": 1}), ("poke", {"n": 2})],
            id="smollm2-list",
        ),
        pytest.param(
            '<tool_call>{"name": "poke", "arguments": {"n": 1}}',
            [("poke", {"n": 1})],
            id="hermes-unclosed",
        ),
        pytest.param(
            '<tool_call>\n```json\n{"name": "poke", "arguments": {"n": 1}}\n```\n</tool_call>',
            [("poke", {"n": 1})],
            id="hermes-fenced",
        ),
        pytest.param(
            '<tools>{"name": "poke", "arguments": {"n": 3}}</tools>',
            [("poke", {"n": 3})],
            id="tools-tag",
        ),
        pytest.param(
            '```json\n{"name": "poke", "arguments": {"n": 1}}\n```',
            [("poke", {"n": 1})],
            id="json-fence",
        ),
        pytest.param(
            '```\n{"name": "poke", "parameters": {"n": 1}}\n```',
            [("poke", {"n": 1})],
            id="bare-fence-parameters",
        ),
        pytest.param(
            '{"name": "poke", "parameters": {"n": 1}}', [("poke", {"n": 1})], id="json-reply"
        ),
        pytest.param(
            '[{"name": "poke", "arguments": {"n": 1}}, {"name": "poke", "arguments": {}}]',
            [("poke", {"n": 1}), ("poke", {})],
            id="json-list-reply",
        ),
        pytest.param(
            '[TOOL_CALLS] [{"name": "poke", "arguments": {"n": 1}}]',
            [("poke", {"n": 1})],
            id="mistral-json",
        ),
        pytest.param(
            '[TOOL_CALLS]poke[ARGS]{"n": 1}[TOOL_CALLS]poke[CALL_ID]a1b2c3d4e[ARGS]{"n": 2}',
            [("poke", {"n": 1}), ("poke", {"n": 2})],
            id="mistral-args",
        ),
        pytest.param(
            '<|python_tag|>{"type": "function", "name": "poke", "parameters": {"n": 1}}<|eom_id|>',
            [("poke", {"n": 1})],
            id="llama-python-tag",
        ),
        pytest.param(
            '<tool_call>{"type": "function", "function": {"name": "poke", '
            '"arguments": "{\\"n\\": 5}"}}</tool_call>',
            [("poke", {"n": 5})],
            id="openai-shape-string-arguments",
        ),
        pytest.param(
            '<tool_call>{"name": "write_file", "arguments": {"path": "a.py", '
            '"content": "x = 1\ny = 2\n"}}</tool_call>',
            [("write_file", {"path": "a.py", "content": "x = 1\ny = 2\n"})],
            id="raw-newlines-in-a-string",
        ),
        pytest.param(
            '<tool_call>{"name": "poke", "arguments": {"n": "five"}}</tool_call>',
            [("poke", {"n": "five"})],
            id="arguments-the-executor-will-refuse",
        ),
    ],
)
def test_each_markup_is_recovered(text: str, calls: list[tuple[str, dict[str, object]]]) -> None:
    assert calls_of(text) == calls


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("You could call poke with n=1 to do it.", id="prose-naming-a-tool"),
        pytest.param('Call poke like {"name": "poke", "arguments": {}}.', id="prose-with-json"),
        pytest.param('<tool_call>{"name": "nuke", "arguments": {}}</tool_call>', id="unknown"),
        pytest.param('```json\n{"name": "nuke", "arguments": {}}\n```', id="unknown-in-fence"),
        pytest.param('<tool_call>{"name": "poke", "arguments": {"n": 1</tool_call>', id="broken"),
        pytest.param('<tool_call>{"name": "poke", "arguments": {}, "x": 1}</tool_call>', id="key"),
        pytest.param('<tool_call>{"name": "poke", "arguments": [1]}</tool_call>', id="not-object"),
        pytest.param(
            '<tool_call>{"name": "poke", "arguments": {}}</tool_call>'
            '<tool_call>{"name": "nuke", "arguments": {}}</tool_call>',
            id="one-of-two-unknown",
        ),
        pytest.param('Example:\n```json\n{"name": "Ada", "age": 36}\n```', id="code-sample"),
        pytest.param('```python\nprint({"name": "poke", "arguments": {}})\n```', id="python"),
        pytest.param('{"name": "poke", "arguments": {}} and then more', id="json-then-prose"),
        pytest.param('{"answer": 42}', id="json-answer"),
        pytest.param('{"name": "poke", "arguments": {}, "name": "x"}', id="duplicate-key"),
        pytest.param('{"name": "poke", "arguments": {"n": NaN}}', id="nan"),
        pytest.param("[TOOL_CALLS] nothing here", id="mistral-prose"),
    ],
)
def test_what_is_not_a_well_formed_call_stays_text(text: str) -> None:
    assert calls_of(text) is None


def test_no_tools_no_calls() -> None:
    assert recover('<tool_call>{"name": "poke", "arguments": {}}</tool_call>', []) is None


def test_the_prose_before_is_kept_and_the_rest_is_said_dropped() -> None:
    text = (
        "I will poke it.\n<tool_call>\n"
        '{"name": "poke", "arguments": {"n": 1}}\n</tool_call>\nIt worked!'
    )
    found = recover(text, TOOLS)
    assert found is not None
    assert found.text == "I will poke it."
    assert found.calls == (ToolCall(id="", name="poke", arguments={"n": 1}),)
    assert found.note() == (
        "1 tool call written as text (<tool_call> markup) recovered as calls: poke; "
        "the text after them was dropped: 'It worked!'"
    )


def test_a_code_sample_beside_a_fenced_call_is_prose() -> None:
    text = (
        'The config:\n```json\n{"debug": true}\n```\nNow:\n'
        '```json\n{"name": "poke", "arguments": {"n": 1}}\n```'
    )
    found = recover(text, TOOLS)
    assert found is not None
    assert found.text == 'The config:\n```json\n{"debug": true}\n```\nNow:'
    assert [c.name for c in found.calls] == ["poke"]
    assert found.form == "```json fence"


# --- the provider, against a scripted server ----------------------------------------------------


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = Peer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def model(peer: Peer) -> AsyncIterator[OpenAIModel]:
    provider = OpenAIModel(model="m", base_url=peer.base_url, api_key="x")
    yield provider
    await provider.aclose()


MARKUP = (
    "I'll create it.\n<tool_call>\n"
    '{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}\n</tool_call>'
)
WRITE = ToolCall(id="", name="write_file", arguments={"path": "hello.txt", "content": "hi"})
NOTE = "1 tool call written as text (<tool_call> markup) recovered as calls: write_file"


async def test_a_plain_request_gets_the_calls(peer: Peer, model: OpenAIModel) -> None:
    peer.script = [completion(MARKUP)]
    response = await model.request(HELLO, [write_file.spec], ModelSettings())
    assert response.message == AssistantMessage(text="I'll create it.", tool_calls=(WRITE,))
    assert response.finish == "tool_use"
    assert response.notes == (NOTE,)


async def test_a_streamed_reply_gets_the_calls(peer: Peer, model: OpenAIModel) -> None:
    peer.script = [streamed(answer(MARKUP[:20], MARKUP[20:60], MARKUP[60:]))]
    items = [item async for item in model.stream(HELLO, [write_file.spec], ModelSettings())]
    response = items[-1]
    assert response.message == AssistantMessage(text="I'll create it.", tool_calls=(WRITE,))  # type: ignore[union-attr]
    assert response.finish == "tool_use"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tools", "settings", "provider"),
    [
        pytest.param([], ModelSettings(), {}, id="no-tools"),
        pytest.param([write_file.spec], ModelSettings(tool_choice="none"), {}, id="choice-none"),
        pytest.param([write_file.spec], ModelSettings(), {"text_calls": False}, id="switched-off"),
    ],
)
async def test_no_calls_where_none_may_be_made(
    peer: Peer, tools: list[ToolSpec], settings: ModelSettings, provider: dict[str, bool]
) -> None:
    peer.script = [completion(MARKUP)]
    model = OpenAIModel(model="m", base_url=peer.base_url, api_key="x", **provider)
    try:
        response = await model.request(HELLO, tools, settings)
    finally:
        await model.aclose()
    assert response.message == AssistantMessage(text=MARKUP)
    assert (response.finish, response.notes) == ("end_turn", ())


@pytest.mark.real_model  # the agent calls a model over HTTP (the scripted server)
async def test_the_agent_runs_a_call_written_as_text(peer: Peer, workspace: Path) -> None:
    peer.script = [streamed(answer(MARKUP)), streamed(answer("Done: hello.txt holds hi."))]
    model = OpenAIModel(model="m", base_url=peer.base_url, api_key="x")
    try:
        agent = Agent(
            model=model, tools=[write_file], workspace=workspace, budgets=Budgets(max_steps=4)
        )
        events = [e async for e in agent.iter("Create hello.txt containing hi")]
    finally:
        await model.aclose()
    assert (workspace / "hello.txt").read_text() == "hi"
    [note] = [e for e in events if isinstance(e, Notice) and e.source == "model"]
    assert note.text == NOTE
    first = next(e for e in events if isinstance(e, ModelResponded))
    assert first.message.text == "I'll create it."
    assert [(c.id, c.name, c.arguments) for c in first.message.tool_calls] == [
        ("call_1_0", "write_file", {"path": "hello.txt", "content": "hi"})
    ]
    [done] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not done.result.is_error
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.stop_reason, finished.final_answer) == (
        StopReason.END_TURN,
        "Done: hello.txt holds hi.",
    )
    # The server gets the call back as a native one, with its result.
    history = peer.requests[1].body["messages"]
    # then the done-check guard's question, after the write
    assert history.pop()["content"].startswith("That change succeeded. Is the goal reached now?")
    assert history[-2] == {
        "role": "assistant",
        "content": "I'll create it.",
        "tool_calls": [
            {
                "id": "call_1_0",
                "type": "function",
                "function": {
                    "name": "write_file",
                    "arguments": '{"path": "hello.txt", "content": "hi"}',
                },
            }
        ],
    }
    assert history[-1]["role"] == "tool"
    assert history[-1]["tool_call_id"] == "call_1_0"


@pytest.mark.real_model
async def test_markup_for_an_unknown_tool_is_nudged_not_run(peer: Peer, workspace: Path) -> None:
    unknown = '<tool_call>{"name": "create_file", "arguments": {"path": "a"}}</tool_call>'
    peer.script = [streamed(answer(unknown)), streamed(answer("I cannot do that."))]
    model = OpenAIModel(model="m", base_url=peer.base_url, api_key="x")
    try:
        agent = Agent(
            model=model, tools=[write_file], workspace=workspace, budgets=Budgets(max_steps=4)
        )
        events = [e async for e in agent.iter("Say what you can do")]
    finally:
        await model.aclose()
    [rejected] = [e for e in events if isinstance(e, ResponseRejected)]
    assert rejected.source == "LeakedMarkup"
    assert not [e for e in events if isinstance(e, ToolCallFinished)]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.final_answer == "I cannot do that."


# --- a real server that returns the markup as text ----------------------------------------------

HERMES_GRAMMAR = r"""root ::= "<tool_call>\n" call "\n</tool_call>"
call ::= "{\"name\": \"write_file\", \"arguments\": " arguments "}"
arguments ::= "{\"path\": \"" name ".txt\", \"content\": \"" words "\"}"
name ::= [a-z]{1,12}
words ::= [a-z ]{1,24}
"""


@pytest.fixture(scope="module")
def markup_server() -> Iterator[str]:
    binary = built_llama_server()
    grammar = ("--grammar", HERMES_GRAMMAR)
    with run_llama_server(
        binary, embedded_gguf("smollm2"), threads=2, extra_args=grammar
    ) as base_url:
        yield f"{base_url}/v1"


@pytest.mark.real_model
@pytest.mark.parametrize("stream", [False, True])
async def test_a_real_server_returns_markup_and_reins_recovers_it(
    markup_server: str, stream: bool
) -> None:
    model = OpenAIModel(model="smollm2", base_url=markup_server, api_key="x", provider="llamacpp")
    settings = ModelSettings(temperature=0.0, max_tokens=160)
    try:
        if stream:
            items = [item async for item in model.stream(HELLO, [write_file.spec], settings)]
            response = items[-1]
            assert isinstance(response, ModelResponse)
        else:
            response = await model.request(HELLO, [write_file.spec], settings)
        off = OpenAIModel(model="smollm2", base_url=markup_server, api_key="x", text_calls=False)
        raw = await off.request(HELLO, [write_file.spec], settings)
        await off.aclose()
    finally:
        await model.aclose()
    assert raw.message.text.startswith("<tool_call>\n"), raw  # the server parsed nothing
    assert not raw.message.tool_calls
    [call] = response.message.tool_calls
    assert call.name == "write_file"
    assert set(call.arguments) == {"path", "content"}
    assert call.arguments["path"].endswith(".txt")
    assert (response.message.text, response.finish) == ("", "tool_use")
    assert response.notes == (NOTE,)


@pytest.mark.real_model
async def test_an_agent_runs_the_markup_of_a_real_server(
    markup_server: str, workspace: Path
) -> None:
    model = OpenAIModel(model="smollm2", base_url=markup_server, api_key="x", provider="llamacpp")
    settings = ModelSettings(temperature=0.0, max_tokens=160)
    try:
        agent = Agent(
            model=model,
            tools=[write_file],
            workspace=workspace,
            budgets=Budgets(max_steps=2),
            settings=settings,
        )
        run = agent.iter("Create the file hello.txt containing the word hi")
        events = [e async for e in run]
    finally:
        await model.aclose()
    ok = {
        e.result.call_id
        for e in events
        if isinstance(e, ToolCallFinished) and not e.result.is_error
    }
    calls = [
        call
        for e in events
        if isinstance(e, ModelResponded)
        for call in e.message.tool_calls
        if call.id in ok
    ]
    assert calls, events
    arguments = calls[-1].arguments  # the file holds what the last good write sent
    assert (workspace / arguments["path"]).read_text() == arguments["content"]
    assert NOTE in [e.text for e in events if isinstance(e, Notice) and e.source == "model"]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.stop_reason in (StopReason.END_TURN, StopReason.MAX_STEPS)


# --- the guard knows the markup -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tools>{"name": "nuke", "arguments": {}}</tools>',
        '[TOOL_CALLS]nuke[ARGS]{"a": 1}',
        '<|python_tag|>{"name": "nuke", "parameters": {}}',
    ],
)
def test_the_guard_sees_the_new_markup(text: str) -> None:
    assert LeakedMarkup(["poke"]).leaked(text)
    assert strip_markup(f"The answer is 3.\n{text}") == "The answer is 3."
