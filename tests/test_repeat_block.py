"""The repeat-block guard: an immediate repeat whose result cannot differ is not run, and the
next reply may not call that tool."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from reins import Agent, AssistantMessage, Guards, MemoryLog, Message, ToolSpec
from reins.core._model import ModelResponse, ModelSettings
from reins.events import ResponseRejected, ToolCallFinished
from reins.policies._repeat_block import asks_question
from reins.testing import ScriptedModel

from .helpers import call, reply

FIND = call("grep", "g1", pattern="def handle_request", path="server.py")


class Recording(ScriptedModel):
    """A scripted model that keeps the tools each request excluded."""

    def __init__(self, replies: Sequence[AssistantMessage | str]) -> None:
        super().__init__(replies)
        self.excluded: list[frozenset[str]] = []
        self.held: list[object] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        self.excluded.append(settings.excluded_tools)
        self.held.append(settings.argument_schemas)
        return await super().request(messages, tools, settings)


QUESTION = "On which line is handle_request defined?"
CHANGE = "Move handle_request to the top of server.py"


async def run(
    workspace: Path,
    replies: Sequence[AssistantMessage | str],
    goal: str = CHANGE,
    **kw: object,
) -> tuple[Recording, list[object]]:
    model = Recording(replies)
    log = MemoryLog()
    agent = Agent(model=model, workspace=workspace, log=log, approval="allow", **kw)  # type: ignore[arg-type]
    result = await agent.run(goal)
    return model, list(await log.events(result.run_id))


def rejected(events: list[object]) -> list[ResponseRejected]:
    return [e for e in events if isinstance(e, ResponseRejected)]


async def rejected_once(
    workspace: Path, replies: Sequence[AssistantMessage | str]
) -> tuple[Recording, list[object], ResponseRejected]:
    """A run of a change goal (no done-check) with one response rejected, and that one."""
    model, events = await run(workspace, replies, guards=Guards().without("done-check"))
    [rejection] = rejected(events)
    return model, events, rejection


def ran(events: list[object], name: str) -> int:
    return sum(1 for e in events if isinstance(e, ToolCallFinished) and e.result.name == name)


async def test_a_read_repeated_at_once_is_rejected_and_its_tool_left_out_of_the_next_reply(
    workspace: Path,
) -> None:
    (workspace / "server.py").write_text("import http\n\ndef handle_request(path):\n    pass\n")
    again = call("grep", "g2", pattern="def handle_request", path="server.py")
    answer = call("final_answer", "f1", answer="line 3")
    model, events = await run(workspace, [reply("", FIND), reply("", again), reply("", answer)])
    [rejection] = rejected(events)
    assert rejection.source == "RepeatBlock"
    assert rejection.excluded_tools == ("grep",)
    assert rejection.observation == (
        "Not run: you made this exact call (grep) in your last step, and nothing has changed "
        "since. Its result was:\nserver.py:3: def handle_request(path):\n"
        "[1 matching line]\nIt would be the same again. Use what you have: if it answers the "
        "goal, call final_answer now; if not, take a different step."
    )
    assert model.excluded == [frozenset(), frozenset(), frozenset({"grep"})]
    assert ran(events, "grep") == 1


async def test_a_failed_edit_tried_again_two_steps_later_is_rejected(workspace: Path) -> None:
    (workspace / "stats.py").write_text("def median(xs):\n    return xs[len(xs) // 2]\n")
    read = call("read_file", "r1", path="stats.py")
    same = call("edit_file", "e1", path="stats.py", old="return 2.5", new="return 2.5")
    look = call("list_files", "l1", path=".")
    replies = [reply("", read), reply("", same), reply("", look), reply("", same), "gave up"]
    model, events = await run(workspace, replies)
    [rejection] = rejected(events)
    assert rejection.observation.startswith(
        "Not run: you made this exact call (edit_file) two steps ago, and it failed: old text "
        "not found in stats.py"
    )
    assert "Nothing has changed since: it would fail again." in rejection.observation
    # its old was not in the file: the next edit is held to the file's lines, not barred
    assert model.excluded[-1] == frozenset()
    assert model.held[-1]["edit_file"]["path"] == {"const": "stats.py"}  # type: ignore[index]


async def test_a_failed_command_tried_again_with_nothing_changed_is_rejected(
    workspace: Path,
) -> None:
    (workspace / "calc.py").write_text("x = 1\n")
    broken = call("run_command", "c1", command="python3 -c 'print(open(\"calc.py\", 'r'))'")
    fix = call("edit_file", "e1", path="calc.py", old="x = 1", new="x = 2")
    read = call("read_file", "r1", path="calc.py")
    replies = [
        reply("", broken),
        reply("", read),
        reply("", broken),  # rejected: nothing changed since it failed
        reply("", fix),
        reply("", broken),  # runs: a change since
        "5",
    ]
    _, events = await run(workspace, replies, guards=Guards().without("done-check"))
    [rejection] = rejected(events)
    assert rejection.observation.startswith(
        "Not run: you made this exact call (run_command) two steps ago, and it failed: exit code: 1"
    )
    assert "Nothing has changed since: it would fail again." in rejection.observation
    assert rejection.excluded_tools == ("run_command",)
    assert ran(events, "run_command") == 2


async def test_a_repeat_that_may_differ_runs(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("one\n")
    read = call("read_file", "r1", path="notes.txt")
    edit = call("edit_file", "e1", path="notes.txt", old="one", new="two")
    command = call("run_command", "c1", command="cat notes.txt")
    again = call("edit_file", "e2", path="notes.txt", old="two", new="three")
    look = call("list_files", "l1", path=".")
    replies = [
        reply("", read),
        reply("", edit),
        reply("", read),  # the file changed since: read again
        reply("", command),
        reply("", again),
        reply("", command),  # something changed since it ran
        reply("", look),
        reply("", read),  # three steps back: the repeat cache's to answer
        "done",
    ]
    model, events = await run(workspace, replies, guards=Guards().without("done-check"))
    assert rejected(events) == []
    assert ran(events, "read_file") == 3
    assert ran(events, "run_command") == 2
    assert set().union(*model.excluded) == set()


async def test_a_second_repeat_in_a_row_is_let_through_and_the_guard_can_be_off(
    workspace: Path,
) -> None:
    (workspace / "server.py").write_text("def handle_request(path):\n    pass\n")
    replies = [reply("", FIND), reply("", FIND), reply("", FIND), "line 1"]
    _, events = await run(workspace, replies)
    assert len(rejected(events)) == 1  # then the repeat cache answers, as before
    _, events = await run(workspace, replies, guards=Guards().without("repeat-block"))
    assert rejected(events) == []


async def test_a_command_run_again_at_once_is_rejected_with_what_it_printed(
    workspace: Path,
) -> None:
    # Seen on the default model: "defined on line 23, I'll confirm", the same grep command
    # five times.
    (workspace / "server.py").write_text("def handle_request(path):\n    pass\n")
    command = call("run_command", "c1", command="grep -n handle_request server.py")
    replies = [reply("", command), reply("", command), "line 1"]
    model, events = await run(workspace, replies, QUESTION)
    [rejection] = rejected(events)
    assert rejection.observation.startswith(
        "Not run: you made this exact call (run_command) in your last step, and nothing has "
        "changed since. Its result was:\nexit code: 0\n1:def handle_request(path):"
    )
    assert rejection.observation.endswith(
        "Your goal is a question: answer it now from what you have found, with final_answer."
    )
    assert "final_answer" not in model.excluded[-1]
    assert {"run_command", "grep", "read_file", "edit_file"} <= model.excluded[-1]


async def test_a_question_asked_again_after_a_failed_call_may_go_on(workspace: Path) -> None:
    # A failed command tells nothing to answer from: only its tool is left out.
    (workspace / "server.py").write_text("def handle_request(path):\n    pass\n")
    command = call("run_command", "c1", command="grep -n handle_request nowhere.py")
    replies = [reply("", command), reply("", command), "?"]
    model, events = await run(workspace, replies, QUESTION)
    [rejection] = rejected(events)
    assert "and it failed: exit code: 2" in rejection.observation
    assert model.excluded[-1] == frozenset({"run_command"})


@pytest.mark.parametrize(
    ("goal", "question"),
    [
        ("How many words are in sentence.txt? Answer with the number.", True),
        ("Where is the class OrderRepository defined? Answer with the file path.", True),
        ("What is the oldest Python version this project supports?", True),
        ("Can you fix the failing test?", False),
        ("Rename get_user to fetch_user. Is that hard?", False),
        ("List the Python files.", False),
    ],
)
def test_a_question_is_told_from_a_request_for_a_change(goal: str, question: bool) -> None:
    assert asks_question(goal) is question


async def test_a_read_that_failed_is_not_run_again_until_its_path_changes(workspace: Path) -> None:
    # Seen on the default model: grep with the path `README.md install.md`, four times.
    (workspace / "README.md").write_text("see http://old.org\n")
    both = call("grep", "g1", pattern="old.org", path="README.md install.md")
    make = call("write_file", "w1", path="README.md install.md", content="old.org\n")
    replies = [reply("", both), reply("", both), reply("", make), reply("", both), "done"]
    model, events, rejection = await rejected_once(workspace, replies)
    assert rejection.observation.startswith(
        "Not run: you made this exact call (grep) in your last step, and it failed: "
        "'README.md install.md' does not exist; a path names one file or folder, not 2"
    )
    assert model.excluded[2] == frozenset({"grep"})
    assert ran(events, "grep") == 2  # once before, once after the file it names was made


async def test_an_edit_whose_old_was_not_found_is_held_to_the_files_lines(workspace: Path) -> None:
    # Seen on the default model: `http:` for `"http": {`, sent again after the file's text
    # and the lines most like it were shown, then answered as done.
    (workspace / "config.json").write_text('{\n  "http": {\n    "timeout": 10\n  }\n}\n')
    read = call("read_file", "r1", path="config.json")
    guess = call("edit_file", "e1", path="config.json", old="http:", new="http: retries: 3")
    right = call(
        "edit_file", "e2", path="config.json", old='  "http": {', new='  "http": {"retries": 3,'
    )
    replies = [reply("", read), reply("", guess), reply("", guess), reply("", right), "done"]
    model, _, rejection = await rejected_once(workspace, replies)
    assert rejection.observation.endswith(
        "old must be text the file holds: copy one or two of its lines exactly as they are, "
        "whitespace included, and write new as those lines should read."
    )
    lines = ["{", '  "http": {', '    "timeout": 10', "  }", "}"]
    pairs = ['{\n  "http": {', '  "http": {\n    "timeout": 10', '    "timeout": 10\n  }', "  }\n}"]
    held = {"edit_file": {"path": {"const": "config.json"}, "old": {"enum": lines + pairs}}}
    assert rejection.argument_schemas == held
    assert rejection.excluded_tools == ()
    assert model.held == [{}, {}, {}, held, {}]  # the next request only
    assert '"retries": 3' in (workspace / "config.json").read_text()


async def test_an_edit_given_a_folder_is_held_to_the_files_that_hold_old(workspace: Path) -> None:
    # Seen on the default model: a rename sent to edit_file with path `.`, until the cap.
    (workspace / "loader.py").write_text("class DataLoader:\n    pass\n")
    (workspace / "tests").mkdir()
    (workspace / "tests/test_loader.py").write_text("from loader import DataLoader\n")
    (workspace / "notes.md").write_text("nothing here\n")
    folder = call("edit_file", "e1", path=".", old="DataLoader", new="DatasetLoader")
    replies = [reply("", folder), reply("", folder), "done"]
    model, _, rejection = await rejected_once(workspace, replies)
    assert rejection.observation.endswith(
        "path must name one file: change each of those that hold old in turn."
    )
    held = {"edit_file": {"path": {"enum": ["loader.py", "tests/test_loader.py"]}}}
    assert rejection.argument_schemas == held
    assert model.held[-1] == held
