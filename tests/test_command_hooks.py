"""Command hooks around tools and sessions: real shell scripts as hooks, in the real loop."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from reins import (
    Agent,
    AssistantMessage,
    Message,
    RunState,
    SQLiteLog,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    UsageError,
    UserMessage,
    tool,
)
from reins.events import Event, ModelRequested, Notice, ToolCallFinished, ToolCallStarted
from reins.policies import Hook
from reins.testing import FunctionModel, ScriptedModel

from .helpers import call, reply
from .terminal import run_in_terminal
from .test_cli import reins
from .test_store_cli import one_line_error

RAN: list[str] = []


@tool
def shout(text: str) -> str:
    """Say `text` loudly."""
    RAN.append(text)
    return text.upper() + "!"


@tool
def whisper(text: str) -> str:
    """Say `text` quietly."""
    RAN.append(text)
    return text.lower()


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


def agent_for(replies: Sequence[AssistantMessage | str], workspace: Path, **kw: object) -> Agent:
    return Agent(
        model=ScriptedModel(replies),
        workspace=workspace,
        tools=[shout, whisper],
        **kw,  # type: ignore[arg-type]
    )


async def events_of(agent: Agent, goal: str = "go") -> tuple[list[Event], RunState]:
    run = agent.iter(goal)
    events = [e async for e in run]
    return events, run.state


def results(events: list[Event]) -> list[tuple[str, str, bool]]:
    return [
        (e.result.name, e.result.content, e.result.is_error)
        for e in events
        if isinstance(e, ToolCallFinished)
    ]


def notices(events: list[Event], source: str) -> list[Notice]:
    return [e for e in events if isinstance(e, Notice) and e.source == source]


def script(folder: Path, name: str, body: str) -> str:
    """A real hook script in the workspace; the command that runs it."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return f"./{name}"


BLOCK_LOUD = """\
cat > before.json
if grep -q secret before.json; then echo "no secrets out loud" >&2; exit 2; fi
"""


async def test_a_before_tool_hook_blocks_a_call_with_exit_2_and_the_model_sees_why(
    workspace: Path,
) -> None:
    command = script(workspace, "guard.sh", BLOCK_LOUD)
    hook = Hook(event="before_tool", matcher="shout", command=command)
    replies = [
        reply("", call("shout", "c1", text="the secret"), call("shout", "c2", text="hi")),
        "done",
    ]
    events, state = await events_of(agent_for(replies, workspace, hooks=[hook]))
    blocked = f"This call was blocked by a hook ({command}): no secrets out loud"
    assert results(events) == [("shout", blocked, True), ("shout", "HI!", False)]
    assert RAN == ["hi"]  # the blocked call never ran
    assert [e.call.id for e in events if isinstance(e, ToolCallStarted)] == ["c2"]
    # The hook read Claude Code's fields on stdin (the last call it saw: c2).
    event = json.loads((workspace / "before.json").read_text())
    assert event == {
        "hook_event_name": "PreToolUse",
        "reins_event": "before_tool",
        "session_id": state.session_id,
        "run_id": state.run_id,
        "cwd": state.config.workspace,
        "step": 1,
        "tool_name": "shout",
        "tool_input": {"text": "hi"},
        "tool_use_id": "c2",
    }


async def test_the_matcher_picks_tools_by_a_pattern_matched_whole(workspace: Path) -> None:
    deny = script(workspace, "deny.sh", "echo no >&2; exit 2\n")
    replies = [
        reply("", call("shout", "c1", text="a"), call("whisper", "c2", text="B")),
        "done",
    ]
    for matcher, blocked in [
        ("whisper", {"whisper"}),
        ("sh.*", {"shout"}),
        ("sh", set()),  # matched whole: not a prefix
        ("shout|whisper", {"shout", "whisper"}),
        ("*", {"shout", "whisper"}),
        ("", {"shout", "whisper"}),
    ]:
        hook = Hook(event="before_tool", matcher=matcher, command=deny)
        events, _ = await events_of(agent_for(replies, workspace, hooks=[hook]))
        assert {name for name, _, error in results(events) if error} == blocked, matcher


REWRITE = """\
cat > /dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
  "updatedInput": {"text": "rewritten"}}}'
"""


async def test_a_hook_changes_the_arguments_the_log_records_them_and_the_model_is_told(
    workspace: Path, sqlite_log: SQLiteLog
) -> None:
    command = script(workspace, "rewrite.sh", REWRITE)
    hook = Hook(event="before_tool", matcher="shout", command=command)
    replies = [reply("", call("shout", "c1", text="original")), "done"]
    agent = agent_for(replies, workspace, hooks=[hook], log=sqlite_log)
    events, state = await events_of(agent)
    assert RAN == ["rewritten"]
    assert results(events) == [("shout", "REWRITTEN!", False)]
    name = f"before_tool hook `{command}`"
    [started] = [e for e in events if isinstance(e, ToolCallStarted)]
    assert (started.call.arguments, started.changed_by) == ({"text": "rewritten"}, name)
    note, told = notices(events, name)
    assert note.text == 'changed the arguments of shout (c1) to {"text": "rewritten"}'
    assert (note.level, note.to_model, told.to_model) == ("info", False, True)
    assert told.text == (
        f"A hook ({command}) changed the arguments of your shout call (c1) before it ran; its "
        'result above is of the call with these arguments: {"text": "rewritten"}'
    )
    # The log holds what ran: a fold of it (a resume, a replay) sees the changed call.
    folded = RunState.fold(await sqlite_log.events(state.run_id))
    assert folded.changed["c1"].call.arguments == {"text": "rewritten"}
    assert folded.messages == state.messages


TO_OTHER = """\
cat > /dev/null
cat <<'JSON'
{"hookSpecificOutput": {"updatedInput": {"path": "other.txt", "content": "new"}}}
JSON
"""


async def test_the_guards_see_the_call_that_ran_not_the_one_the_model_made(
    workspace: Path,
) -> None:
    """The read cache forgets the reads a change made stale: those of the path it wrote, as
    the hook changed it (else the second read would be answered with the stale text)."""
    (workspace / "other.txt").write_text("old")
    command = script(workspace, "other.sh", TO_OTHER)
    hook = Hook(event="before_tool", matcher="write_file", command=command)
    replies = [
        reply("", call("read_file", "r1", path="other.txt")),
        reply("", call("write_file", "w1", path="hello.txt", content="hi")),
        reply("", call("read_file", "r2", path="other.txt")),
        "done",
    ]
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, hooks=[hook])
    events, _ = await events_of(agent)
    reads = [content for name, content, _ in results(events) if name == "read_file"]
    assert "old" in reads[0]
    assert "new" in reads[1]
    assert "old" not in reads[1]
    assert not (workspace / "hello.txt").exists()


async def test_arguments_the_tool_refuses_are_a_warning_and_the_call_runs_as_made(
    workspace: Path,
) -> None:
    command = script(
        workspace,
        "bad.sh",
        'echo \'{"hookSpecificOutput": {"updatedInput": {"text": 3}}}\'\n',
    )
    hook = Hook(event="before_tool", command=command)
    replies = [reply("", call("shout", "c1", text="as made")), "done"]
    events, _ = await events_of(agent_for(replies, workspace, hooks=[hook]))
    assert RAN == ["as made"]
    [note] = notices(events, f"before_tool hook `{command}`")
    assert note.level == "warning"
    assert note.text.startswith(
        f"before_tool hook `{command}` failed on shout (c1) and was passed over: its "
        "updatedInput does not fit the tool, so the call runs as the model made it: invalid "
        "arguments for shout: text:"
    )


async def test_a_json_deny_blocks_with_its_reason(workspace: Path) -> None:
    command = script(
        workspace,
        "deny.sh",
        'echo \'{"hookSpecificOutput": {"permissionDecision": "deny", '
        '"permissionDecisionReason": "not today"}}\'\n',
    )
    hook = Hook(event="before_tool", command=command)
    replies = [reply("", call("shout", "c1", text="x")), "done"]
    events, _ = await events_of(agent_for(replies, workspace, hooks=[hook]))
    assert results(events) == [
        ("shout", f"This call was blocked by a hook ({command}): not today", True)
    ]
    assert RAN == []


DEBUG_THEN_DENY = """\
echo "guard: reading the event" >&2
cat > /dev/null
echo "guard: it is a shout, denying" >&2
echo '{"hookSpecificOutput": {"permissionDecision": "deny",
  "permissionDecisionReason": "no shouting after ten"}}'
"""


async def test_a_hook_logs_to_stderr_and_replies_json_on_stdout(workspace: Path) -> None:
    """Claude Code reads the JSON reply from stdout alone: debug lines on stderr don't hide it."""
    deny = script(workspace, "deny.sh", DEBUG_THEN_DENY)
    start = script(
        workspace,
        "start.sh",
        "echo 'start: looking' >&2\n"
        'echo \'{"hookSpecificOutput": {"additionalContext": "branch: main"}}\'\n',
    )
    hooks = [Hook(event="before_tool", command=deny), Hook(event="session_start", command=start)]
    replies = [reply("", call("shout", "c1", text="x")), "done"]
    events, state = await events_of(agent_for(replies, workspace, hooks=hooks))
    assert results(events) == [
        ("shout", f"This call was blocked by a hook ({deny}): no shouting after ten", True)
    ]
    assert RAN == []
    context = f"Context from a session-start hook ({start}):\nbranch: main"
    assert [m.content for m in state.messages if isinstance(m, UserMessage)] == ["go", context]
    assert not [e for e in events if isinstance(e, Notice) and e.level == "warning"]


async def test_exit_2_gives_stderr_as_the_reason_and_stdout_only_when_stderr_is_empty(
    workspace: Path,
) -> None:
    both = script(workspace, "both.sh", "echo 'checked 3 rules'\necho 'no secrets' >&2\nexit 2\n")
    only_stdout = script(workspace, "old.sh", "echo 'no whispers'\nexit 2\n")
    hooks = [
        Hook(event="before_tool", matcher="shout", command=both),
        Hook(event="before_tool", matcher="whisper", command=only_stdout),
    ]
    replies = [
        reply("", call("shout", "c1", text="a"), call("whisper", "c2", text="b")),
        "done",
    ]
    events, _ = await events_of(agent_for(replies, workspace, hooks=hooks))
    assert results(events) == [
        ("shout", f"This call was blocked by a hook ({both}): no secrets", True),
        ("whisper", f"This call was blocked by a hook ({only_stdout}): no whispers", True),
    ]
    # After a tool and at a prompt, the same: the note and the refusal are stderr's.
    note = script(workspace, "note.sh", "echo 'ran ruff'\necho 'fix line 3' >&2\nexit 2\n")
    replies = [reply("", call("shout", "c1", text="a")), "done"]
    after = [Hook(event="after_tool", command=note)]
    events, _ = await events_of(agent_for(replies, workspace, hooks=after))
    [told] = notices(events, f"after_tool hook `{note}`")
    assert told.text == f"A hook ({note}) on your shout call (c1): fix line 3"
    events, state = await events_of(
        agent_for(["never"], workspace, hooks=[Hook(event="prompt", command=both)])
    )
    assert state.finished is not None
    assert state.finished.detail == f"the prompt was blocked by prompt hook `{both}`: no secrets"


async def test_a_failed_hooks_warning_quotes_its_stderr(workspace: Path) -> None:
    broken = script(
        workspace, "broken.sh", "echo 'step 1 ok'\necho 'jq: not found' >&2\nexit 127\n"
    )
    hook = Hook(event="before_tool", command=broken)
    events, _ = await events_of(
        agent_for([reply("", call("shout", "c1", text="a")), "done"], workspace, hooks=[hook])
    )
    [warned] = notices(events, f"before_tool hook `{broken}`")
    assert warned.level == "warning"
    assert warned.text.endswith("exit 127: jq: not found")
    assert RAN == ["a"]


async def test_a_long_json_reply_is_read_whole(workspace: Path) -> None:
    """Longer than the tail kept for messages (2000 characters), still a JSON reply."""
    long = "x" * 5000
    command = script(
        workspace,
        "long.sh",
        f'echo \'{{"hookSpecificOutput": {{"additionalContext": "{long}"}}}}\'\n',
    )
    hook = Hook(event="session_start", command=command)
    _, state = await events_of(agent_for(["done"], workspace, hooks=[hook]))
    context = f"Context from a session-start hook ({command}):\n{long}"
    assert UserMessage(content=context) in state.messages


NOTE_AFTER = """\
cat > after.json
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse",
  "additionalContext": "the linter is happy"}}'
"""


async def test_an_after_tool_hook_adds_a_note_for_the_model(workspace: Path) -> None:
    command = script(workspace, "after.sh", NOTE_AFTER)
    hook = Hook(event="after_tool", matcher="shout", command=command)
    replies = [
        reply("", call("shout", "c1", text="a"), call("whisper", "c2", text="B")),
        "done",
    ]
    events, state = await events_of(agent_for(replies, workspace, hooks=[hook]))
    [note] = notices(events, f"after_tool hook `{command}`")
    assert note.to_model
    assert note.text == f"A hook ({command}) on your shout call (c1): the linter is happy"
    assert UserMessage(content=note.text) in state.messages
    event = json.loads((workspace / "after.json").read_text())
    assert event["hook_event_name"] == "PostToolUse"
    assert (event["tool_name"], event["tool_input"], event["tool_use_id"]) == (
        "shout",
        {"text": "a"},
        "c1",
    )
    assert event["tool_response"] == {"content": "A!", "is_error": False}


async def test_an_after_tool_hook_runs_only_for_calls_that_ran(workspace: Path) -> None:
    deny = script(workspace, "deny.sh", "echo no >&2; exit 2\n")
    after = script(workspace, "after.sh", "cat >> after.jsonl; echo >> after.jsonl\n")
    hooks = [
        Hook(event="before_tool", matcher="whisper", command=deny),
        Hook(event="after_tool", command=after),
    ]
    replies = [
        reply("", call("shout", "c1", text="a"), call("whisper", "c2", text="B")),
        "done",
    ]
    await events_of(agent_for(replies, workspace, hooks=hooks))
    lines = (workspace / "after.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool_use_id"] for line in lines] == ["c1"]  # c2 was blocked


async def test_an_after_tool_hook_exit_2_is_told_and_plain_output_is_not(workspace: Path) -> None:
    loud = script(workspace, "loud.sh", "echo 'check the result' >&2; exit 2\n")
    quiet = script(workspace, "quiet.sh", "echo 'just a log line'\n")
    hooks = [
        Hook(event="after_tool", command=loud),
        Hook(event="after_tool", command=quiet),
    ]
    replies = [reply("", call("shout", "c1", text="a")), "done"]
    events, _ = await events_of(agent_for(replies, workspace, hooks=hooks))
    [note] = notices(events, f"after_tool hook `{loud}`")
    assert note.text == f"A hook ({loud}) on your shout call (c1): check the result"
    assert notices(events, f"after_tool hook `{quiet}`") == []


async def test_session_start_context_reaches_the_model_once_per_session(workspace: Path) -> None:
    command = script(workspace, "start.sh", "cat > start.json; echo 'branch: main'\n")
    seen: list[list[str]] = []

    def model(messages: list[Message], tools: object) -> str:
        seen.append([m.content for m in messages if isinstance(m, UserMessage)])
        return f"answer {len(seen)}"

    hook = Hook(event="session_start", command=command)
    agent = Agent(model=FunctionModel(model), workspace=workspace, hooks=[hook])
    first = await agent.run("one")
    event = json.loads((workspace / "start.json").read_text())
    assert (event["hook_event_name"], event["source"]) == ("SessionStart", "startup")
    (workspace / "start.json").unlink()
    second = await agent.run("two", session_id=first.session_id)
    assert (first.final_answer, second.final_answer) == ("answer 1", "answer 2")
    context = f"Context from a session-start hook ({command}):\nbranch: main"
    assert seen[0] == ["one", context]
    assert seen[1] == ["one", context, "two"]  # the session's history; not again
    assert not (workspace / "start.json").exists()


async def test_a_prompt_hook_adds_context_or_blocks_the_prompt(workspace: Path) -> None:
    add = script(
        workspace,
        "add.sh",
        'cat > prompt.json\necho \'{"hookSpecificOutput": {"additionalContext": "ticket 42"}}\'\n',
    )
    events, state = await events_of(
        agent_for(["ok"], workspace, hooks=[Hook(event="prompt", command=add)]), "fix it"
    )
    assert UserMessage(content=f"Context from a prompt hook ({add}):\nticket 42") in state.messages
    event = json.loads((workspace / "prompt.json").read_text())
    assert (event["hook_event_name"], event["prompt"]) == ("UserPromptSubmit", "fix it")

    block = script(workspace, "block.sh", "echo 'no deploys on Friday' >&2; exit 2\n")
    agent = agent_for(["never"], workspace, hooks=[Hook(event="prompt", command=block)])
    events, state = await events_of(agent, "deploy")
    assert state.finished is not None
    assert state.finished.stop_reason is StopReason.REFUSAL
    assert state.finished.detail == (
        f"the prompt was blocked by prompt hook `{block}`: no deploys on Friday"
    )
    assert [e for e in events if isinstance(e, ModelRequested)] == []


async def test_a_subagents_run_has_the_tool_hooks_not_the_session_and_prompt_ones(
    workspace: Path,
) -> None:
    command = script(workspace, "log.sh", "cat >> hooks.jsonl; echo >> hooks.jsonl\n")
    hooks = [
        Hook(event="session_start", command=command),
        Hook(event="prompt", command=command),
        Hook(event="before_tool", matcher="shout", command=command),
    ]

    def model(messages: list[Message], tools: list[ToolSpec]) -> AssistantMessage | str:
        parent = any(t.name == "spawn_agent" for t in tools)
        if any(isinstance(m, ToolResultMessage) for m in messages):
            return "parent done" if parent else "child done"
        if parent:
            return reply("", call("spawn_agent", "s1", task="dig"))
        return reply("", call("shout", "c1", text="child"))

    agent = Agent(
        model=FunctionModel(model), workspace=workspace, tools=[shout], subagents=True, hooks=hooks
    )
    result = await agent.run("go")
    assert result.final_answer == "parent done"
    assert RAN == ["child"]
    lines = (workspace / "hooks.jsonl").read_text().splitlines()
    fired = [(e["reins_event"], e["run_id"] == result.run_id) for e in map(json.loads, lines)]
    assert fired == [("session_start", True), ("prompt", True), ("before_tool", False)]


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        ("echo oops >&2; exit 1\n", "exit 1: oops"),
        ("sleep 5\n", "timed out after 0.5 s"),
        ("echo '{not json'\n", "its reply is not JSON"),
        (  # past the 20 000 bytes of stdout kept: a cut reply is not parsed
            "printf '{\"a\": \"'; head -c 30000 /dev/zero | tr '\\0' x; echo '\"}'\n",
            "its JSON reply is too long to read whole (10010 bytes cut",
        ),
    ],
)
async def test_a_broken_hook_is_one_warning_and_the_run_goes_on(
    workspace: Path, body: str, failure: str
) -> None:
    command = script(workspace, "broken.sh", body)
    hooks = [
        Hook(event=event, command=command, timeout=0.5)  # type: ignore[arg-type]
        for event in ("session_start", "prompt", "before_tool", "after_tool")
    ]
    replies = [reply("", call("shout", "c1", text="a")), "done"]
    events, state = await events_of(agent_for(replies, workspace, hooks=hooks))
    assert state.finished is not None
    assert state.finished.stop_reason is StopReason.END_TURN
    assert RAN == ["a"]
    warned = [e for e in events if isinstance(e, Notice) and "hook" in e.source]
    assert [e.source.split(" ")[0] for e in warned] == [
        "session_start",
        "prompt",
        "before_tool",
        "after_tool",
    ]
    assert all(e.level == "warning" and not e.to_model for e in warned)
    assert all(failure in e.text and "passed over" in e.text for e in warned)


def test_a_hook_that_cannot_work_is_refused_when_made() -> None:
    with pytest.raises(UsageError, match="event='PreToolUse': say one of before_tool"):
        Hook(event="PreToolUse", command="true")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="a prompt hook is an empty command"):
        Hook(event="prompt", command=" ")
    with pytest.raises(UsageError, match="matcher '\\(' is not a regular expression"):
        Hook(event="before_tool", command="true", matcher="(")
    with pytest.raises(UsageError, match="a session_start hook runs for no tool"):
        Hook(event="session_start", command="true", matcher="shout")
    with pytest.raises(UsageError, match="hooks\\[0\\] is a str, not a Hook"):
        Agent(model=ScriptedModel(["x"]), hooks=["./guard.sh"])  # type: ignore[list-item]


# The config files and the command line


GUARD = "echo 'not in this repo' >&2; exit 2\n"
PROJECT_HOOK = '[[hooks.before_tool]]\nmatcher = "write_file"\ncommand = "./guard.sh"\n'
WRITE = [
    {
        "text": "Writing.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}
        ],
    },
    "FINAL_ANSWER: done",
]
RUN = ("run", "go", "-m", "script:s.json", "-w", "ws")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository whose reins.toml sets a hook (its script in the workspace); the
    user's config is empty."""
    folder = (tmp_path / "repo").resolve()
    (folder / "ws").mkdir(parents=True)
    script(folder / "ws", "guard.sh", GUARD)
    (folder / "reins.toml").write_text(PROJECT_HOOK)
    (folder / "s.json").write_text(json.dumps(WRITE))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the child's user config
    return folder


def test_a_projects_hooks_wait_for_trust_and_then_block(repo: Path) -> None:
    refused = reins(*RUN, cwd=repo)
    assert refused.returncode == 2, refused.stdout
    user = repo.parent / "config" / "reins" / "config.toml"
    assert one_line_error(refused) == (
        f"error: {repo / 'reins.toml'} sets commands that run around tool calls, at a "
        "session's start, on a prompt or when the agent says it is done (before_tool hook "
        "(write_file) `./guard.sh`), and this project is not trusted: to run them, pass "
        f'--trust-project, or add "{repo}" to trusted_projects in {user}'
    )
    assert not (repo / "ws" / "hello.txt").exists()

    done = reins(*RUN, "--trust-project", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "This call was blocked by a hook (./guard.sh): not in this repo" in done.stdout
    assert not (repo / "ws" / "hello.txt").exists()


def test_the_users_hooks_need_no_trust(repo: Path) -> None:
    (repo / "reins.toml").unlink()
    path = repo.parent / "config" / "reins" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(PROJECT_HOOK)
    done = reins(*RUN, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "This call was blocked by a hook (./guard.sh): not in this repo" in done.stdout
    assert not (repo / "ws" / "hello.txt").exists()


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        (
            '[[hooks.PreToolUse]]\ncommand = "./guard.sh"\n',
            "hooks.PreToolUse: reins calls Claude Code's PreToolUse before_tool: write "
            "[[hooks.before_tool]]",
        ),
        (
            '[[hooks.before_tool]]\nmatcher = "("\ncommand = "./guard.sh"\n',
            "matcher '(' is not a regular expression",
        ),
        ('[[hooks.prompt]]\ncommand = ""\n', "a prompt hook is an empty command"),
        ('[[hooks.after_tool]]\ncommand = "x"\ntimeout = 0\n', "greater than 0"),
    ],
)
def test_a_bad_hook_in_a_config_file_is_one_clear_error(repo: Path, toml: str, error: str) -> None:
    (repo / "reins.toml").write_text(toml)
    done = reins(*RUN, "--trust-project", cwd=repo)
    assert done.returncode == 2, done.stdout
    line = one_line_error(done)
    assert line.startswith(f"error: config {repo / 'reins.toml'}: hooks"), line
    assert error in line


def test_resume_runs_the_projects_hooks_only_once_trusted(repo: Path) -> None:
    write = WRITE[0]
    (repo / "s.json").write_text(json.dumps([write, write, "FINAL_ANSWER: done"]))
    capped = reins(*RUN, "--max-steps", "1", "--trust-project", cwd=repo)
    assert capped.returncode == 3, capped.stderr  # max_steps, after the hook blocked step 1
    refused = reins("resume", "last", cwd=repo)
    assert refused.returncode == 2, refused.stdout
    assert "(before_tool hook (write_file) `./guard.sh`)" in one_line_error(refused)
    done = reins("resume", "last", "--trust-project", "--max-steps", "5", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "This call was blocked by a hook (./guard.sh): not in this repo" in done.stdout
    assert not (repo / "ws" / "hello.txt").exists()


def test_a_prompt_hook_blocks_from_the_config_with_exit_8(repo: Path) -> None:
    (repo / "reins.toml").write_text(
        "[[hooks.prompt]]\ncommand = \"grep -q deploy && { echo 'not on Friday' >&2; exit 2; }; "
        'exit 0"\n'
    )
    done = reins("run", "deploy it", "-m", "script:s.json", "-w", "ws", "--trust-project", cwd=repo)
    assert done.returncode == 8, done.stderr  # refusal
    assert "not on Friday" in done.stdout
    assert "step 1" not in done.stdout  # no model call


def test_the_terminal_shows_the_hooks_and_no_runs_without_them(repo: Path) -> None:
    code, screen = run_in_terminal(repo, list(RUN), [b"n\n"], prompt=b"Run them?")
    assert code == 0, screen
    assert (
        f"{repo / 'reins.toml'} sets commands that run, unasked, around tool calls, at a "
        "session's start, on a prompt or when the agent says it is done (in the sandbox):"
    ) in screen.replace("\r\n", " ")
    assert "  before_tool hook (write_file)  ./guard.sh\r\n" in screen
    assert "Running without the project's hooks." in screen
    assert (repo / "ws" / "hello.txt").read_text() == "hi\n"  # not blocked: not trusted
