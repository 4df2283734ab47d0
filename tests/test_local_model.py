"""The embedded model and the strict JSON action protocol."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from reins import (
    Agent,
    AssistantMessage,
    Budgets,
    Cancel,
    Message,
    ModelSettings,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UnknownModel,
    UsageError,
    UserMessage,
    resolve_model,
    tool,
)
from reins.core._actions import MAX_REPAIRS, parse_action
from reins.core._model import ModelResponse, TextChunk
from reins.events import ResponseRejected
from reins.models import LocalModel, OpenAIModel
from reins.models._json_actions import (
    MAX_STRING,
    MIN_STRING,
    action_schema,
    chat,
    thought_cap,
)
from reins.models._local import _grammar
from reins.policies._repair import REPEAT_TEMPERATURE
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import edit_file, final_answer, list_files, read_file, write_file

TOOLS = [write_file.spec, read_file.spec, list_files.spec, final_answer.spec]
GOALS = [
    "Create the file hello.txt containing the text Hello from reins",
    "Read the file notes.txt",
    "List the files in the folder src",
    "Say that you are done",
    "Write a short poem about rivers into poem.txt",
]


@pytest.fixture(scope="module")
def local() -> LocalModel:
    return LocalModel(embedded="smollm2")  # the cheapest: these tests do not judge quality


@pytest.mark.real_model
async def test_constrained_decoding_only_samples_valid_actions(local: LocalModel) -> None:
    for goal in GOALS:
        messages = [SystemMessage(content="You are an agent."), UserMessage(content=goal)]
        response = await local.request(messages, TOOLS, ModelSettings(max_tokens=256))
        assert response.finish == "tool_use", (goal, response.message.text)
        [call] = response.message.tool_calls
        action = parse_action(
            json.dumps({"name": call.name, "arguments": call.arguments}), TOOLS
        )  # valid by the same checks the repair policy applies
        assert action.name in {t.name for t in TOOLS}
        assert response.usage.output_tokens > 5
        assert response.usage.input_tokens > 100


@pytest.mark.real_model
async def test_an_excluded_tool_stays_in_the_prompt_and_is_never_sampled(
    local: LocalModel,
) -> None:
    goal = "Read the file notes.txt"
    messages = [SystemMessage(content="You are an agent."), UserMessage(content=goal)]
    free = await local.request(messages, TOOLS, ModelSettings(max_tokens=256))
    [chosen] = free.message.tool_calls  # what it does unbarred
    barred = ModelSettings(max_tokens=256, excluded_tools=frozenset({chosen.name}))
    response = await local.request(messages, TOOLS, barred)
    [call] = response.message.tool_calls
    assert call.name in {t.name for t in TOOLS} - {chosen.name}
    # the same prompt (its prefix reused whole): only the grammar changed
    assert response.usage.input_tokens == free.usage.input_tokens


CONFIG = '{\n  "log_level": "info",\n  "http": {\n    "timeout": 10\n  }\n}'
HELD = {"edit_file": {"path": {"const": "config.json"}, "old": {"enum": CONFIG.splitlines()}}}


def test_argument_schemas_hold_a_tool_to_them() -> None:
    schema = action_schema([edit_file.spec, final_answer.spec], max_chars=512, arguments=HELD)
    ok = {"path": "config.json", "old": '  "http": {', "new": "x"}
    jsonschema.validate({"thought": "", "name": "edit_file", "arguments": ok}, schema)
    for wrong in ({"old": "http:"}, {"path": "other.json"}, {"old": '"http": {'}):
        action = {"thought": "", "name": "edit_file", "arguments": ok | wrong}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(action, schema)
    # the other tools as they were
    answer = {"thought": "", "name": "final_answer", "arguments": {"answer": "done"}}
    jsonschema.validate(answer, schema)


@pytest.mark.real_model
async def test_an_edit_held_to_a_files_lines_takes_old_from_them(local: LocalModel) -> None:
    # The failure it repairs, reproduced: shown the file, the model guesses at old.
    goal = f'config.json holds:\n{CONFIG}\nAdd "retries": 3 to its "http" section.'
    messages = [SystemMessage(content="You are an agent."), UserMessage(content=goal)]
    tools = [edit_file.spec, final_answer.spec]
    edit = frozenset({"final_answer"})
    free = await local.request(messages, tools, ModelSettings(max_tokens=256, excluded_tools=edit))
    [guess] = free.message.tool_calls
    assert guess.arguments["old"] not in CONFIG.splitlines()
    settings = ModelSettings(max_tokens=256, excluded_tools=edit, argument_schemas=HELD)
    held = await local.request(messages, tools, settings)
    [call] = held.message.tool_calls
    assert call.arguments["path"] == "config.json"
    assert call.arguments["old"] in CONFIG.splitlines()
    assert held.usage.input_tokens == free.usage.input_tokens  # the same prompt


@pytest.mark.real_model
def test_the_grammar_consulted_last_picks_the_tokens_it_would_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from llama_cpp import Llama

    from reins.models import _greedy_grammar
    from reins.models._embedded import embedded_gguf

    calls = {"_allows": 0, "_best_allowed": 0}
    for name in calls:  # both paths taken: the top token alone, and the whole vocabulary
        method = getattr(_greedy_grammar._GreedyGrammar, name)

        def counted(*args: Any, _method: Any = method, _name: str = name) -> Any:
            calls[_name] += 1
            return _method(*args)

        monkeypatch.setattr(_greedy_grammar._GreedyGrammar, name, counted)
    path = str(embedded_gguf("smollm2"))
    settings: dict[str, Any] = {"model_path": path, "n_ctx": 2048, "verbose": False}
    stock, greedy = Llama(**settings), _greedy_grammar.GreedyGrammarLlama(**settings)
    grammar = _grammar(action_schema(TOOLS, max_chars=256))
    for goal in GOALS:
        messages = chat(
            [SystemMessage(content="You are an agent."), UserMessage(content=goal)], TOOLS
        )
        replies = [
            llm.create_chat_completion(
                messages=messages, grammar=grammar, max_tokens=256, temperature=0.0
            )["choices"][0]["message"]["content"]
            for llm in (stock, greedy)
        ]
        assert replies[0] == replies[1], goal
        parse_action(replies[1], TOOLS)  # a valid action: the grammar held
    assert calls["_allows"] > calls["_best_allowed"] > 0


@pytest.mark.real_model
async def test_an_agent_runs_on_the_embedded_model(local: LocalModel, workspace: Path) -> None:
    agent = Agent(
        model=local, tools=[write_file], workspace=workspace, budgets=Budgets(max_steps=3)
    )
    run = agent.iter("Create the file hello.txt containing the text Hello from reins")
    events = [e async for e in run]
    assert not [e for e in events if isinstance(e, ResponseRejected)]  # every action parsed
    assert run.state.finished is not None
    assert run.state.finished.stop_reason in (StopReason.END_TURN, StopReason.MAX_STEPS)
    assert run.state.step >= 1
    for message in run.state.messages:
        if isinstance(message, AssistantMessage):
            assert len(message.tool_calls) == 1  # one action per reply, always


@pytest.mark.real_model
async def test_cancel_stops_the_local_model_mid_generation(
    local: LocalModel, workspace: Path
) -> None:
    cancel = Cancel()
    agent = Agent(
        model=LocalModel(embedded="smollm2", constrained=False),
        workspace=workspace,
        settings=ModelSettings(max_tokens=4000),
    )
    asyncio.get_running_loop().call_later(0.5, cancel.cancel)
    result = await asyncio.wait_for(agent.run("Write a very long story.", cancel=cancel), 20)
    assert result.stop_reason is StopReason.CANCELLED


def test_the_action_schema_admits_each_tool_and_nothing_else() -> None:
    schema = action_schema(TOOLS)
    assert [branch["properties"]["name"] for branch in schema["anyOf"]] == [
        {"const": "write_file"},
        {"const": "read_file"},
        {"const": "list_files"},
        {"const": "final_answer"},
    ]
    assert all(branch["additionalProperties"] is False for branch in schema["anyOf"])


@tool
def note(title: str, text: str, tags: list[str], stars: int = 3, draft: bool | None = None) -> str:
    """Keep a note."""
    return "kept"


def longest(schema: Any) -> Any:
    """The longest value a (fitted) schema admits."""
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        return max((longest(s) for s in schema["anyOf"]), key=lambda v: len(json.dumps(v)))
    kind = schema.get("type")
    if kind == "string":
        return "x" * schema["maxLength"]
    if kind == "array":
        return [longest(schema["items"])] * schema["maxItems"]
    if kind == "object":
        return {key: longest(value) for key, value in schema["properties"].items()}
    return {"integer": -(10**15), "boolean": False, "null": None}[kind]


@pytest.mark.parametrize("budget", [200, 256, 512, 2048])
def test_a_fitted_action_always_fits_its_budget(budget: int) -> None:
    tools = [*TOOLS, note.spec]
    schema = action_schema(tools, max_chars=budget)
    for branch in schema["anyOf"]:
        action = longest(branch)
        jsonschema.validate(action, branch)  # the longest value is still a valid action
        size = len(json.dumps(action))
        assert size <= budget, (action["name"], size)
    [write] = [b for b in schema["anyOf"] if b["properties"]["name"]["const"] == "write_file"]
    content = write["properties"]["arguments"]["properties"]["content"]["maxLength"]
    # the budget is shared, not wasted
    assert content >= min((budget - thought_cap(budget)) // 2 - 70, MAX_STRING)


def test_a_budget_too_small_to_fit_keeps_usable_floors() -> None:
    [branch] = action_schema([note.spec], max_chars=64)["anyOf"]
    arguments = branch["properties"]["arguments"]["properties"]
    assert arguments["title"]["maxLength"] == MIN_STRING
    assert arguments["tags"]["maxItems"] == 1


@pytest.mark.real_model
async def test_a_looping_model_still_ends_its_action_within_the_token_cap(
    local: LocalModel,
) -> None:
    """Asked for more text than the cap allows, the model fills the strings; the grammar closes
    them in time, so the action is whole, never cut off."""
    goal = "Keep a note titled History with a very long, detailed essay on the history of rivers."
    messages = [SystemMessage(content="You are an agent."), UserMessage(content=goal)]
    for cap in (48, 96):
        response = await local.request(messages, [note.spec], ModelSettings(max_tokens=cap))
        assert response.finish == "tool_use", (cap, response.message.text)
        [call] = response.message.tool_calls
        assert note.validate(call.arguments)
        assert response.usage.output_tokens <= cap


def test_history_is_flattened_for_a_text_only_model() -> None:
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})
    flat = chat(
        [
            SystemMessage(content="Be brief."),
            UserMessage(content="read a.txt"),
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage(call_id="c1", name="read_file", content="hi"),
            ToolResultMessage(call_id="c2", name="grep", content="bad regex", is_error=True),
            AssistantMessage(text="It says hi.", tool_calls=(call,)),
        ],
        TOOLS,
    )
    assert [m["role"] for m in flat] == ["system", "user", "assistant", "user", "user", "assistant"]
    assert flat[0]["content"].startswith("Be brief.\n\nYou act by replying with exactly one JSON")
    assert "- write_file: Create a text file, replace its whole content" in flat[0]["content"]
    assert flat[2]["content"] == '{"name": "read_file", "arguments": {"path": "a.txt"}}'
    assert flat[3]["content"] == "Result of read_file: hi"
    assert flat[4]["content"] == "Error from grep: bad regex"
    assert flat[5]["content"] == (  # the thought goes back where the model wrote it
        '{"thought": "It says hi.", "name": "read_file", "arguments": {"path": "a.txt"}}'
    )


class FakeLlama:
    """Stands in for a loaded `llama_cpp.Llama`: records each chat completion asked for, and
    streams `text` as its answer."""

    n_tokens = 50

    def __init__(self, text: str) -> None:
        self.text = text
        self.asked: list[dict[str, Any]] = []

    def create_chat_completion(self, **kw: Any) -> Iterator[dict[str, Any]]:
        self.asked.append(kw)
        yield {"choices": [{"delta": {"content": self.text}, "finish_reason": None}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}


async def test_when_no_tool_may_be_called_the_reply_is_plain_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The summary at a cap: no action rules, no grammar, and a reply kept as text."""
    action = '{"name": "final_answer", "arguments": {"answer": "done"}}'
    llm = FakeLlama(action)
    local = LocalModel(embedded="smollm2")
    monkeypatch.setattr(local, "load", lambda: llm)
    messages = [SystemMessage(content="Be brief."), UserMessage(content="[CAP REACHED] Sum up.")]

    acting = await local.request(messages, TOOLS, ModelSettings())
    assert acting.message.tool_calls[0].name == "final_answer"
    summary = await local.request(messages, TOOLS, ModelSettings(tool_choice="none"))
    assert (summary.message, summary.finish) == (AssistantMessage(text=action), "end_turn")

    constrained, plain = llm.asked
    assert constrained["grammar"] is not None
    assert constrained["messages"][0]["content"].startswith("Be brief.\n\nYou act by replying")
    assert plain["grammar"] is None
    assert plain["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "[CAP REACHED] Sum up."},
    ]


class JsonScript(ScriptedModel):
    """A scripted model on the strict JSON protocol: its replies are raw text."""

    actions = "json"

    def __init__(self, texts: Sequence[str]) -> None:
        from reins.models._json_actions import reply

        super().__init__([reply(t, TOOLS) for t in texts])


async def test_an_invalid_reply_gets_the_repair_message_then_the_run_goes_on(
    workspace: Path,
) -> None:
    replies = [
        'Sure! {"name": "list_files", "arguments": {}}',
        '{"name": "final_answer", "arguments": {"answer": "done"}}',
    ]
    agent = Agent(model=JsonScript(replies), tools=[list_files], workspace=workspace)
    run = agent.iter("go")
    events = [e async for e in run]
    [rejected] = [e for e in events if isinstance(e, ResponseRejected)]
    assert rejected.source == "StrictActions"
    assert rejected.observation.startswith("Your reply was rejected: not a single JSON object")
    assert "split it into several smaller actions" in rejected.observation
    assert run.state.finished is not None
    assert run.state.finished.final_answer == "done"


async def test_repeated_invalid_replies_are_capped(workspace: Path) -> None:
    agent = Agent(
        model=JsonScript(["not json"] * (MAX_REPAIRS + 2)), tools=[list_files], workspace=workspace
    )
    result = await agent.run("go")
    assert result.stop_reason is StopReason.ERROR
    assert result.detail.startswith(f"no valid action after {MAX_REPAIRS} repairs")
    assert result.steps == MAX_REPAIRS + 1


async def test_a_valid_action_resets_the_repair_count(workspace: Path) -> None:
    texts = [
        "x",
        "x",
        '{"name": "list_files", "arguments": {}}',
        "x",
        "x",
        '{"name": "final_answer", "arguments": {"answer": "ok"}}',
    ]
    result = await Agent(model=JsonScript(texts), tools=[list_files], workspace=workspace).run("go")
    assert (result.stop_reason, result.final_answer) == (StopReason.END_TURN, "ok")


def test_native_models_get_no_strict_policy(workspace: Path) -> None:
    def plain(messages: list[Message], tools: list[ToolSpec]) -> str:
        return "plain text is a final answer here"

    result = Agent(model=FunctionModel(plain), workspace=workspace).run_sync("go")
    assert result.final_answer == "plain text is a final answer here"


def test_model_strings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REINS_MODEL_NAME", "qwen")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ollama = resolve_model("ollama:llama3.2")
    assert isinstance(ollama, OpenAIModel)
    assert (ollama.name, ollama.base_url) == ("ollama:llama3.2", "http://127.0.0.1:9/v1")
    openai = resolve_model("openai:gpt-4o-mini")
    assert isinstance(openai, OpenAIModel)
    assert (openai.name, openai.base_url) == ("openai:gpt-4o-mini", None)
    server = resolve_model("http://127.0.0.1:8080/v1")
    assert isinstance(server, OpenAIModel)
    assert (server.model, server.base_url) == ("qwen", "http://127.0.0.1:8080/v1")
    local = resolve_model("local:smollm2")  # `local`, the default: test_embedded_models.py
    assert isinstance(local, LocalModel)
    assert local.name == "local:smollm2"
    with pytest.raises(UsageError, match="no GGUF model file at"):
        resolve_model(f"local:{tmp_path / 'missing.gguf'}")
    with pytest.raises(UnknownModel, match="unknown model 'gpt5'; known forms: local"):
        resolve_model("gpt5")


@pytest.mark.real_model
async def test_a_reflection_on_the_embedded_model_is_a_valid_reflect_call(
    local: LocalModel,
) -> None:
    from reins.policies._reflect import INSTRUCTIONS, REFLECT_TOOL, parse_reflection

    report = (
        "Goal:\nCreate the file hello.txt containing the text: hello world\n\n"
        "The agent's step 1:\n"
        '- write_file({"path": "hello", "content": "hello world"}) -> error:\n'
        "No such directory: hello\n\nJudge this step: call reflect."
    )
    messages = [SystemMessage(content=INSTRUCTIONS), UserMessage(content=report)]
    settings = ModelSettings(max_tokens=512, tool_choice="required")
    response = await local.request(messages, [REFLECT_TOOL], settings)
    [call] = response.message.tool_calls  # the grammar allows nothing else
    assert call.name == "reflect"
    jsonschema.validate(call.arguments, REFLECT_TOOL.parameters)
    parsed = parse_reflection(response.message)
    assert (parsed.assessment, parsed.next_action) == (
        call.arguments["assessment"],
        call.arguments["next_action"],
    )


@pytest.mark.real_model
async def test_a_raw_newline_the_grammar_allows_is_a_valid_action(local: LocalModel) -> None:
    """llama.cpp's JSON grammar lets a string hold a raw newline. Shown one, SmolLM2 types its
    own file's lines that way; the reply must still be the action it is (it was text that the
    strict parser rejected: "Invalid control character")."""
    shown = (
        '{"thought": "Two lines, one per line.", "name": "write_file", '
        '"arguments": {"path": "a.txt", "content": "one\ntwo\n"}}'
    )
    messages = [
        SystemMessage(content="You are an agent."),
        UserMessage(content="Write a.txt with the lines one and two."),
        AssistantMessage(text=shown),
        UserMessage(content="Result of write_file: wrote a.txt"),
        UserMessage(content="Now write b.txt with the lines three and four."),
    ]
    chunks = [
        c async for c in local.stream(messages, [write_file.spec], ModelSettings(max_tokens=64))
    ]
    raw = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert "\n" in raw.strip()  # a raw newline inside the content string
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(raw)
    response = chunks[-1]
    assert isinstance(response, ModelResponse)
    [call] = response.message.tool_calls
    assert call.name == "write_file"
    assert "\n" in call.arguments["content"]


class Deterministic(FunctionModel):
    """At temperature 0 (or unset) the same bad reply, whatever the repair says; sampled at
    a higher temperature, a valid action. Records each request's temperature."""

    actions = "json"

    def __init__(self) -> None:
        super().__init__(self.answer)
        self.temperatures: list[float | None] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> Any:
        self.temperatures.append(settings.temperature)
        return await super().request(messages, tools, settings)

    def answer(self, messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage:
        from reins.models._json_actions import reply

        if self.temperatures[-1]:
            return reply('{"name": "final_answer", "arguments": {"answer": "done"}}', tools)
        return reply('Sure! {"name": "final_answer", "arguments": {"answer": "done"}}', tools)


async def test_a_repair_that_repeats_the_rejected_reply_raises_the_temperature(
    workspace: Path,
) -> None:
    model = Deterministic()
    run = Agent(model=model, tools=[list_files], workspace=workspace).iter("go")
    events = [e async for e in run]
    first, second = [e for e in events if isinstance(e, ResponseRejected)]
    assert first.temperature is None
    assert not first.observation.startswith("You sent the same reply")
    assert second.temperature == REPEAT_TEMPERATURE  # recorded: the log says why it changed
    assert second.observation.startswith("You sent the same reply as before")
    assert model.temperatures == [None, None, REPEAT_TEMPERATURE]  # for one request only
    assert run.state.finished is not None
    assert run.state.finished.final_answer == "done"
    assert run.state.temperature is None


def test_the_local_model_uses_every_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    from reins.models import _greedy_grammar

    made: list[dict[str, Any]] = []
    monkeypatch.setattr(_greedy_grammar, "GreedyGrammarLlama", lambda **kw: made.append(kw))
    monkeypatch.delenv("REINS_LOCAL_THREADS", raising=False)
    LocalModel(embedded="smollm2").load()
    monkeypatch.setenv("REINS_LOCAL_THREADS", "3")
    LocalModel(embedded="smollm2").load()
    LocalModel(embedded="smollm2", threads=1).load()
    cores, told, given = [(kw["n_threads"], kw["n_threads_batch"]) for kw in made]
    assert cores[0] == cores[1]
    assert 1 <= cores[0] <= len(os.sched_getaffinity(0))  # a physical core each
    assert (told, given) == ((3, 3), (1, 1))
    monkeypatch.setenv("REINS_LOCAL_THREADS", "all")
    with pytest.raises(UsageError, match="REINS_LOCAL_THREADS='all'"):
        LocalModel(embedded="smollm2").load()


def test_the_weights_are_repacked_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import llama_cpp as C

    defaults = C.llama_model_default_params
    monkeypatch.delenv("REINS_LOCAL_REPACK", raising=False)
    plain = LocalModel(embedded="smollm2").load()
    asked = LocalModel(embedded="smollm2", repack=False).load()
    monkeypatch.setenv("REINS_LOCAL_REPACK", "0")
    by_env = LocalModel(embedded="smollm2").load()
    overruled = LocalModel(embedded="smollm2", repack=True).load()
    repacks = [m.model_params.use_extra_bufts for m in (plain, asked, by_env, overruled)]
    assert repacks == [True, False, False, True]
    assert C.llama_model_default_params is defaults  # unwrapped once the models are made
    monkeypatch.setenv("REINS_LOCAL_REPACK", "yes")
    with pytest.raises(UsageError, match="REINS_LOCAL_REPACK='yes' is neither 1"):
        LocalModel(embedded="smollm2").load()


def test_tokens_are_drafted_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REINS_LOCAL_DRAFTS", raising=False)
    plain, asked = LocalModel(embedded="smollm2"), LocalModel(embedded="smollm2", drafts=False)
    plain.load(), asked.load()
    monkeypatch.setenv("REINS_LOCAL_DRAFTS", "0")
    by_env, overruled = LocalModel(embedded="smollm2"), LocalModel(embedded="smollm2", drafts=True)
    by_env.load(), overruled.load()
    assert [m._drafting for m in (plain, asked, by_env, overruled)] == [True, False, False, True]
    monkeypatch.setenv("REINS_LOCAL_DRAFTS", "on")
    with pytest.raises(UsageError, match="REINS_LOCAL_DRAFTS='on' is neither 1"):
        LocalModel(embedded="smollm2").load()


def test_a_repacked_model_does_not_share_prefix_cache_entries() -> None:
    from reins.models import _prefix_cache

    keys = [
        _prefix_cache.cache_key(LocalModel(embedded="smollm2", repack=r).load(), "m")
        for r in (False, True)
    ]
    assert keys[0]["model_params"]["use_extra_bufts"] is False
    assert keys[1]["model_params"]["use_extra_bufts"] is True


def test_each_round_renders_the_earlier_rounds_unchanged() -> None:
    """llama.cpp reuses the KV cache of the longest common prompt prefix: the rules and the
    history must render the same every round, only new messages added at the end."""
    messages: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="go")]
    before = chat(messages, TOOLS)
    for k in range(4):
        call = ToolCall(id=f"c{k}", name="read_file", arguments={"path": f"{k}.txt"})
        messages += [
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage(call_id=call.id, name="read_file", content=f"line\n{k}"),
        ]
        now = chat(messages, TOOLS)
        assert now[: len(before)] == before
        before = now
