"""`reins acp`: reins as an editor's agent over the Agent Client Protocol. The SDK's client side
drives `reins.acp` over real streams (a socket pair) with scripted models and a real SQLite
store; then `reins acp` runs as a process an editor starts, spoken to over its stdin and
stdout."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    ContentToolCallContent,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    McpServerStdio,
    PermissionOption,
    PlanEntry,
    RequestPermissionResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from reins import Agent, Budgets, Message, StopReason, ToolSpec, UserMessage
from reins.acp import ACPAgent, SessionSetup, serve
from reins.core._errors import UsageError
from reins.events import PermissionDecided, RunStarted, ToolCallFinished
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .test_cli import HELLO, script
from .test_media import png


class Editor:
    """The editor's side: keeps every update of its sessions, and answers an approval with
    `answer` (an option's id; None: not until the prompt is cancelled, then "cancelled")."""

    def __init__(self, answer: str | None = "allow") -> None:
        self.answer = answer
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.waiting = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        self.waiting.set()
        if self.answer is None:
            await self.cancelled.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )


Maker = Callable[[SessionSetup], Agent]


def maker(model: Any, **fields: Any) -> Maker:
    """Each session's agent: the built-in tools in the editor's folder, its approvals asked
    in the editor."""

    def make(setup: SessionSetup) -> Agent:
        return Agent(
            model=model,
            tools=BUILTIN_TOOLS,
            workspace=setup.workspace,
            log=setup.log,
            budgets=Budgets(max_steps=10),
            approval=setup.approval,
            mcp_servers=setup.mcp_servers,
            **fields,
        )

    return make


@asynccontextmanager
async def streams() -> AsyncIterator[
    tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter], asyncio.StreamReader, Any]
]:
    """Two ends of a socket pair: the agent's (reader, writer), and the editor's."""
    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=ours)
    editor_reader, editor_writer = await asyncio.open_connection(sock=theirs)
    try:
        yield (agent_reader, agent_writer), editor_reader, editor_writer
    finally:
        editor_writer.close()
        await editor_writer.wait_closed()


@asynccontextmanager
async def connected(
    editor: Editor, make: Maker, log: SQLiteLog
) -> AsyncIterator[ClientSideConnection]:
    """The SDK's client connection to reins' ACP agent; leaving closes the editor's end, as
    an editor that quits does (the agent ends its runs and returns)."""
    async with streams() as ((reader, writer), editor_reader, editor_writer):
        serving = asyncio.create_task(serve(ACPAgent(make, lambda _: log), reader, writer))
        connection = connect_to_agent(editor, editor_writer, editor_reader)
        try:
            yield connection
        finally:
            await connection.close()
            editor_writer.close()
            await asyncio.wait_for(serving, 20)


def told(updates: Sequence[Any]) -> list[Any]:
    """The updates, with each run of text chunks of one kind joined: (kind, text)."""
    kinds = {
        UserMessageChunk: "user",
        AgentMessageChunk: "message",
        AgentThoughtChunk: "thought",
    }
    shown: list[Any] = []
    for update in updates:
        kind = kinds.get(type(update))
        if kind is None:
            shown.append(update)
        elif shown and isinstance(shown[-1], tuple) and shown[-1][0] == kind:
            shown[-1] = (kind, shown[-1][1] + update.content.text)
        else:
            shown.append((kind, update.content.text))
    return shown


def output(tool_call_id: str, text: str, status: str = "completed") -> ToolCallProgress:
    content = ContentToolCallContent(
        type="content", content=TextContentBlock(type="text", text=text)
    )
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_call_id,
        status=status,  # type: ignore[arg-type]
        content=[content],
        raw_output=text,
    )


def real(path: Path) -> str:
    """The path as the agent names it (the workspace's real path)."""
    return os.path.realpath(path)


def results(events: Sequence[Any]) -> dict[str, str]:
    return {e.result.call_id: e.result.content for e in events if isinstance(e, ToolCallFinished)}


WRITE = [
    reply("I will write it.", call("write_file", "w1", path="hello.txt", content="hi\n")),
    reply("", call("final_answer", "f1", answer="hello.txt written")),
]


async def test_a_prompt_streams_the_reply_and_a_tool_call_with_its_status_and_output(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    editor = Editor()
    async with connected(editor, maker(ScriptedModel(WRITE)), sqlite_log) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("write hello.txt")])

    assert init.protocol_version == PROTOCOL_VERSION
    assert init.agent_info is not None
    assert init.agent_info.name == "reins"
    capabilities = init.agent_capabilities
    assert capabilities is not None
    assert capabilities.load_session
    assert capabilities.prompt_capabilities is not None
    assert capabilities.prompt_capabilities.image
    assert capabilities.prompt_capabilities.embedded_context
    assert done.stop_reason == "end_turn"
    assert (workspace / "hello.txt").read_text() == "hi\n"
    [run] = await sqlite_log.runs(new.session_id)  # the editor's session is reins' session
    assert run.stop_reason is StopReason.END_TURN
    wrote = results(await sqlite_log.events(run.run_id))["w1"]
    tool = f"{run.run_id}/w1"
    arguments = {"path": "hello.txt", "content": "hi\n"}
    assert told(editor.updates) == [
        ("message", "I will write it."),
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=tool,
            title="Write hello.txt",
            kind="edit",
            status="pending",
            raw_input=arguments,
            locations=[ToolCallLocation(path=real(workspace / "hello.txt"))],
        ),
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=tool,
            status="in_progress",
            raw_input=arguments,
        ),
        output(tool, wrote),
        ("message", "\n\nhello.txt written"),  # the final answer, said once
    ]


@pytest.mark.parametrize(("answer", "ran"), [("allow", True), ("reject", False)])
async def test_an_approval_is_asked_in_the_editor_and_its_answer_decides(
    workspace: Path, sqlite_log: SQLiteLog, answer: str, ran: bool
) -> None:
    editor = Editor(answer)
    model = ScriptedModel([reply("", call("run_command", "c1", command="touch made.txt")), "ok"])
    async with connected(editor, maker(model), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("make a file")])

    assert done.stop_reason == "end_turn"
    assert (workspace / "made.txt").exists() is ran
    [run] = await sqlite_log.runs(new.session_id)
    tool = f"{run.run_id}/c1"
    [(asked, options)] = editor.asked
    assert (asked.tool_call_id, asked.title, asked.kind, asked.status) == (
        tool,
        "touch made.txt",
        "execute",
        "pending",
    )
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject", "reject_once"),
    ]
    events = await sqlite_log.events(run.run_id)
    [decided] = [e for e in events if isinstance(e, PermissionDecided)]
    assert (decided.allowed, decided.by) == (ran, "user")
    last = [u for u in editor.updates if isinstance(u, ToolCallProgress)][-1]
    assert last == output(tool, results(events)["c1"], "completed" if ran else "failed")


async def test_allow_always_holds_for_the_rest_of_the_session(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    editor = Editor("allow_always")
    model = ScriptedModel(
        [
            reply("", call("run_command", "c1", command="touch a.txt")),
            reply("", call("run_command", "c2", command="touch a.txt b.txt")),  # `touch a.txt`
            "both made",
        ]
    )
    async with connected(editor, maker(model), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("make two files")])

    assert len(editor.asked) == 1  # the second call was allowed by the first answer
    assert (workspace / "a.txt").exists()
    assert (workspace / "b.txt").exists()
    [run] = await sqlite_log.runs(new.session_id)
    decided = [e for e in await sqlite_log.events(run.run_id) if isinstance(e, PermissionDecided)]
    assert [(d.call_id, d.by, d.always) for d in decided] == [
        ("c1", "user", True),
        ("c2", "session", False),
    ]


async def test_cancel_ends_the_prompt_cancelled_and_the_session_goes_on(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    thinking = asyncio.Event()
    calls = 0

    async def model(messages: list[Message], tools: list[ToolSpec]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first call thinks until the run is cancelled
            thinking.set()
            await asyncio.Event().wait()
        return "still here"

    editor = Editor()
    async with connected(editor, maker(FunctionModel(model)), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        asked = [text_block("take your time")]
        prompt = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=asked))
        await asyncio.wait_for(thinking.wait(), 10)
        await conn.cancel(session_id=new.session_id)
        cancelled = await asyncio.wait_for(prompt, 10)
        again = await conn.prompt(session_id=new.session_id, prompt=[text_block("and now?")])

    assert (cancelled.stop_reason, again.stop_reason) == ("cancelled", "end_turn")
    runs = await sqlite_log.runs(new.session_id)
    assert [r.stop_reason for r in runs] == [StopReason.CANCELLED, StopReason.END_TURN]
    assert told(editor.updates) == [("message", "still here")]


async def test_cancel_while_the_editor_is_asked_runs_nothing(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    editor = Editor(answer=None)
    model = ScriptedModel([reply("", call("run_command", "c1", command="touch made.txt")), "ok"])
    async with connected(editor, maker(model), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        asked = [text_block("make a file")]
        prompt = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=asked))
        await asyncio.wait_for(editor.waiting.wait(), 10)
        await conn.cancel(session_id=new.session_id)
        editor.cancelled.set()  # as ACP asks: the editor answers what it asked "cancelled"
        done = await asyncio.wait_for(prompt, 10)

    assert done.stop_reason == "cancelled"
    assert not (workspace / "made.txt").exists()
    [run] = await sqlite_log.runs(new.session_id)
    assert run.stop_reason is StopReason.CANCELLED
    last = [u for u in editor.updates if isinstance(u, ToolCallProgress)][-1]
    assert (last.tool_call_id, last.status) == (f"{run.run_id}/c1", "failed")


async def test_an_editor_that_goes_away_mid_run_leaves_it_ended_cancelled(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    thinking = asyncio.Event()

    async def model(messages: list[Message], tools: list[ToolSpec]) -> str:
        thinking.set()
        await asyncio.Event().wait()
        return "never"

    agent = ACPAgent(maker(FunctionModel(model)), lambda _: sqlite_log)
    async with streams() as ((reader, writer), editor_reader, editor_writer):
        serving = asyncio.create_task(serve(agent, reader, writer))
        conn = connect_to_agent(Editor(), editor_writer, editor_reader)
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        asked = [text_block("take your time")]
        prompt = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=asked))
        await asyncio.wait_for(thinking.wait(), 10)
        await conn.close()
        editor_writer.close()  # the editor quits: its end of the pipe closes
        await asyncio.wait_for(serving, 20)  # the agent returns, its run ended first
        with pytest.raises(ConnectionError):
            await prompt  # it never had its answer

    [run] = await sqlite_log.runs(new.session_id)
    assert run.stop_reason is StopReason.CANCELLED


async def test_a_past_session_is_told_again_on_load_and_goes_on(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    model = ScriptedModel([*WRITE, "the second turn"])
    async with connected(Editor(), maker(model), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("write hello.txt")])

    editor = Editor()  # the editor, started again, reopens the thread in a new process
    async with connected(editor, maker(model), sqlite_log) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        await conn.load_session(cwd=str(workspace), session_id=new.session_id, mcp_servers=[])
        replayed = told(editor.updates)
        editor.updates.clear()
        again = await conn.prompt(session_id=new.session_id, prompt=[text_block("and then?")])

    first, second = await sqlite_log.runs(new.session_id)
    wrote = results(await sqlite_log.events(first.run_id))["w1"]
    arguments = {"path": "hello.txt", "content": "hi\n"}
    assert replayed == [
        ("user", "write hello.txt"),
        ("message", "I will write it."),
        ToolCallStart(
            session_update="tool_call",
            tool_call_id="2/w1",  # the message's place in the conversation, and the call's id
            title="Write hello.txt",
            kind="edit",
            status="in_progress",
            raw_input=arguments,
            locations=[ToolCallLocation(path=real(workspace / "hello.txt"))],
        ),
        output("2/w1", wrote),
        ("message", "hello.txt written"),
    ]
    assert again.stop_reason == "end_turn"
    assert told(editor.updates) == [("message", "the second turn")]
    [started] = [e for e in await sqlite_log.events(second.run_id) if isinstance(e, RunStarted)]
    assert "write hello.txt" in [getattr(m, "content", None) for m in started.messages]


async def test_the_todo_list_is_the_editors_plan(workspace: Path, sqlite_log: SQLiteLog) -> None:
    steps = [{"text": "write the file"}, {"text": "check it"}]
    model = ScriptedModel(
        [
            reply("", call("todo", "t1", action="set", items=steps)),
            reply("", call("todo", "t2", action="update", id=1, status="done")),
            "done",
        ]
    )
    editor = Editor()
    async with connected(editor, maker(model, planning=True), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("plan it")])

    plans = [u for u in editor.updates if isinstance(u, AgentPlanUpdate)]
    assert plans == [
        AgentPlanUpdate(
            session_update="plan",
            entries=[
                PlanEntry(content="write the file", priority="medium", status="pending"),
                PlanEntry(content="check it", priority="medium", status="pending"),
            ],
        ),
        AgentPlanUpdate(
            session_update="plan",
            entries=[
                PlanEntry(content="write the file", priority="medium", status="completed"),
                PlanEntry(content="check it", priority="medium", status="pending"),
            ],
        ),
    ]
    kinds = {u.title: u.kind for u in editor.updates if isinstance(u, ToolCallStart)}
    assert kinds == {"Todo list": "think"}


async def test_a_prompt_gives_the_run_its_images_files_and_mentions(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    notes = workspace / "notes.md"
    async with connected(Editor(), maker(ScriptedModel(["seen"])), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = [
            text_block("what is in these?"),
            ImageContentBlock(
                type="image", data=base64.b64encode(png()).decode(), mime_type="image/png"
            ),
            ResourceContentBlock(type="resource_link", name="notes.md", uri=notes.as_uri()),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=TextResourceContents(uri=notes.as_uri(), text="# Notes"),
            ),
        ]
        done = await conn.prompt(session_id=new.session_id, prompt=prompt)

    assert done.stop_reason == "end_turn"
    [run] = await sqlite_log.runs(new.session_id)
    [started] = [e for e in await sqlite_log.events(run.run_id) if isinstance(e, RunStarted)]
    asked = started.messages[-1]
    assert isinstance(asked, UserMessage)
    assert asked.content == (
        'what is in these?\n\n@notes.md\n\n<file path="notes.md">\n# Notes\n</file>'
    )
    assert [m.media_type for m in asked.media] == ["image/png"]


async def test_the_editors_mcp_servers_serve_the_session(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    clock = McpServerStdio(
        name="the clock",  # not a name reins takes as it is: `the-clock`
        command=str(Path(sys.executable).parent / "mcp-server-time"),
        args=["--local-timezone", "UTC"],
        env=[],
    )
    asked = call("the-clock__get_current_time", "c1", timezone="Europe/Paris")
    model = ScriptedModel([reply("", asked), "it is now"])
    editor = Editor()
    async with connected(editor, maker(model), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[clock])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("what time?")])

    assert done.stop_reason == "end_turn"
    [run] = await sqlite_log.runs(new.session_id)
    [started] = [e for e in await sqlite_log.events(run.run_id) if isinstance(e, RunStarted)]
    assert started.config.mcp_servers == ("the-clock",)
    last = [u for u in editor.updates if isinstance(u, ToolCallProgress)][-1]
    assert last.status == "completed"
    assert json.loads(last.raw_output)["timezone"] == "Europe/Paris"


async def test_a_session_named_before_its_first_turn_begins_with_that_id(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    agent = Agent(model=ScriptedModel(["one", "two"]), workspace=workspace, log=sqlite_log)
    first = await agent.iter("hello", session_id="s-named", new_session=True).result()
    assert first.session_id == "s-named"
    with pytest.raises(UsageError, match="session s-named is in this log already"):
        await agent.iter("again", session_id="s-named", new_session=True).result()
    with pytest.raises(UsageError, match="new_session names the new session"):
        agent.iter("hello", new_session=True)
    second = await agent.iter("and on", session_id="s-named").result()
    assert [r.run_id for r in await sqlite_log.runs("s-named")] == [first.run_id, second.run_id]


async def test_a_bad_request_is_a_json_rpc_error_and_the_agent_goes_on(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    editor = Editor()
    async with connected(editor, maker(ScriptedModel(["hi"])), sqlite_log) as conn:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        failures: list[RequestError] = []
        for bad in (
            conn.prompt(session_id="s-nobody", prompt=[text_block("hello")]),
            conn.new_session(cwd="relative/folder", mcp_servers=[]),
            conn.new_session(cwd=str(workspace / "missing"), mcp_servers=[]),
            conn.load_session(cwd=str(workspace), session_id="s-nobody", mcp_servers=[]),
            conn.prompt(
                session_id=new.session_id,
                prompt=[AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")],
            ),
        ):
            with pytest.raises(RequestError) as raised:
                await bad
            failures.append(raised.value)
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("hello")])

    assert [(f.code, str(f)) for f in failures] == [
        (-32602, "no session s-nobody here: session/new or session/load it"),
        (-32602, "cwd 'relative/folder' is not an absolute path"),
        (-32602, f"cwd {workspace / 'missing'} is not a folder"),
        (-32602, f"no session s-nobody in the store of {real(workspace)}"),
        (-32602, "reins takes no audio: give the prompt as text"),
    ]
    assert done.stop_reason == "end_turn"
    assert len(await sqlite_log.runs(new.session_id)) == 1  # the bad prompt started no run


async def test_a_line_that_is_no_json_rpc_message_is_answered_with_its_error(
    sqlite_log: SQLiteLog,
) -> None:
    agent = ACPAgent(maker(ScriptedModel(["hi"])), lambda _: sqlite_log)
    async with streams() as ((reader, writer), editor_reader, editor_writer):
        serving = asyncio.create_task(serve(agent, reader, writer))
        sent = [
            "this is not JSON",
            "[1, 2]",
            '{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": 3}}',
            '{"jsonrpc": "2.0", "id": 8, "method": "no/such/method", "params": {}}',
            '{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": 1}}',
        ]
        editor_writer.write("".join(f"{line}\n" for line in sent).encode())
        await editor_writer.drain()
        answers = [json.loads(await editor_reader.readline()) for _ in sent]
        editor_writer.close()
        await asyncio.wait_for(serving, 20)

    assert [(a.get("id"), a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700),
        (None, -32600),
        (7, -32602),
        (8, -32601),
        (9, None),
    ]
    assert answers[-1]["result"]["agentInfo"]["name"] == "reins"


async def test_reins_acp_started_as_an_editor_starts_it_answers_over_its_pipes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    model = script(tmp_path / "hello.json", HELLO)
    said = tmp_path / "stderr.txt"
    editor = Editor()
    with said.open("w") as stderr:
        async with spawn_agent_process(
            editor,
            sys.executable,
            "-m",
            "reins",
            "acp",
            "--model",
            model,
            "--store",
            str(tmp_path / "store"),
            cwd=project,
            env={**os.environ, "COLUMNS": "200"},
            transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 30},
        ) as (conn, process):
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="an-editor", version="1.0"),
            )
            new = await conn.new_session(cwd=str(project), mcp_servers=[])
            asked = [text_block("write hello.txt")]
            done = await conn.prompt(session_id=new.session_id, prompt=asked)
            process.terminate()  # as an editor stops its agent
            await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == 0  # it ended cleanly, its runs recorded
    assert init.agent_info is not None
    assert init.agent_info.name == "reins"
    assert done.stop_reason == "end_turn"
    assert (project / "hello.txt").read_text() == "hi\n"
    starts = [u.title for u in editor.updates if isinstance(u, ToolCallStart)]
    assert starts == ["Write hello.txt", "Read hello.txt"]
    assert told(editor.updates)[-1] == ("message", "FINAL_ANSWER: hello.txt says hi")
    stderr_text = said.read_text()
    assert "reins acp: serving over stdin and stdout" in stderr_text
    assert "Traceback" not in stderr_text
    assert not caplog.records  # every line it wrote to stdout was a protocol message
    runs = SQLiteLog(tmp_path / "store")
    try:
        [run] = await runs.runs(new.session_id)  # `reins sessions` shows it
    finally:
        await runs.close()
    assert run.stop_reason is StopReason.END_TURN


@pytest.mark.real_model
@pytest.mark.slow
async def test_reins_acp_on_the_embedded_smollm2_streams_a_real_reply(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    editor = Editor("reject")
    async with spawn_agent_process(
        editor,
        sys.executable,
        "-m",
        "reins",
        "acp",
        "--model",
        "local:smollm2",
        "--max-steps",
        "2",
        "--store",
        str(tmp_path / "store"),
        cwd=project,
        env={**os.environ},
        transport_kwargs={"stderr": subprocess.DEVNULL, "shutdown_timeout": 30},
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        asked = [text_block("Say hello in one short sentence.")]
        done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=asked), 300)
    assert process.returncode == 0
    assert done.stop_reason in ("end_turn", "max_turn_requests")  # a small model may not finish
    assert any(isinstance(u, AgentMessageChunk | ToolCallStart) for u in editor.updates)


def test_reins_acp_without_its_extra_says_what_to_install(tmp_path: Path) -> None:
    blocked = (
        "import sys; sys.modules['acp'] = None; sys.argv = ['reins', 'acp']; "
        "from reins.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        "error: reins acp needs the Agent Client Protocol SDK: pip install 'reins[acp]'"
    )
