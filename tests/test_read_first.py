"""The read-first guard: a change to a file the run has not read gets the file's text instead."""

from __future__ import annotations

from pathlib import Path

from reins import Agent, AssistantMessage, Guards, RunResult, ToolResultMessage
from reins.testing import ScriptedModel

from .helpers import call, reply

CONFIG = '{\n  "http": {\n    "timeout": 10\n  }\n}\n'


async def run(
    workspace: Path, replies: list[AssistantMessage | str], **kw: object
) -> tuple[RunResult, list[ToolResultMessage]]:
    agent = Agent(model=ScriptedModel(replies), workspace=workspace, approval="allow", **kw)  # type: ignore[arg-type]
    result = await agent.run("add retries to config.json")
    return result, [m for m in result.messages if isinstance(m, ToolResultMessage)]


async def test_an_edit_of_an_unread_file_gets_its_text_and_the_next_edit_runs(
    workspace: Path,
) -> None:
    (workspace / "config.json").write_text(CONFIG)
    guess = call("edit_file", "e1", path="config.json", old="http:", new="http: retries: 3")
    copied = call(
        "edit_file",
        "e2",
        path="./config.json",
        old='"timeout": 10',
        new='"timeout": 10,\n    "retries": 3',
    )
    result, (refused, edited) = await run(
        workspace, [reply("", guess), reply("", copied), "FINAL_ANSWER: done"]
    )
    assert not refused.is_error
    assert refused.content == (
        "Not run: this run has not read config.json, and old is not in it: a change starts "
        f"from a file's text, not a guess at it. Its text (5 lines):\n{CONFIG}[5 lines in all]"
        "\nNow make the change, with old taken from this text exactly as written."
    )
    assert edited.content.startswith("Replaced 1 occurrence in ./config.json")
    assert '"retries": 3' in (workspace / "config.json").read_text()
    assert result.final_answer == "done"


async def test_an_edit_of_an_unread_file_whose_old_is_there_runs(workspace: Path) -> None:
    # A refusal here cost the default model a task: shown the text, it wrote it to a new file.
    (workspace / "compose.yml").write_text('web:\n  ports:\n    - "8000:8000"\n')
    (workspace / "notes.txt").write_text("alpha\n")
    loose = call(
        "edit_file",
        "e1",
        path="compose.yml",
        old='ports: - "8000:8000"',
        new='ports: - "8080:8000"',
    )
    exact = call("edit_file", "e2", path="notes.txt", old="alpha", new="beta")
    _, results = await run(workspace, [reply("", loose), reply("", exact), "ok"])
    assert [r.content.split(";")[0] for r in results] == [
        "Replaced 1 occurrence in compose.yml",
        "Replaced 1 occurrence in notes.txt",
    ]


async def test_a_write_over_an_unread_file_is_not_run_but_a_new_file_or_an_append_is(
    workspace: Path,
) -> None:
    (workspace / "app.py").write_text("import os\n\nprint(os.getcwd())\n")
    (workspace / "log.txt").write_text("one\n")
    replies: list[AssistantMessage | str] = [
        reply(
            "", call("write_file", "w1", path="app.py", content="# SPDX-License-Identifier: MIT\n")
        ),
        reply("", call("write_file", "w2", path="new.txt", content="fresh\n")),
        reply("", call("write_file", "w3", path="log.txt", content="two\n", append=True)),
        reply("", call("edit_file", "e1", path="new.txt", old="fresh", new="made")),
        "FINAL_ANSWER: done",
    ]
    _, (header, new, appended, edited) = await run(workspace, replies)
    assert header.content.startswith(
        "Not run: this run has not read app.py, and write_file would replace all of it. Its "
        "text (3 lines):\nimport os\n\nprint(os.getcwd())\n[3 lines in all]\nTo change part"
    )
    assert (workspace / "app.py").read_text() == "import os\n\nprint(os.getcwd())\n"
    assert new.content == "Wrote 6 bytes to new.txt"
    assert appended.content.startswith("Appended")
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"
    assert edited.content.startswith("Replaced 1 occurrence")  # its own write: known


async def test_a_read_a_command_naming_it_or_the_guard_off_lets_a_change_run(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (workspace / "b.txt").write_text("one\n")
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "r1", path="a.txt", start_line=2, end_line=2)),
        reply("", call("edit_file", "e1", path="a.txt", old="gamma", new="delta")),
        reply("", call("run_command", "c1", command="cat b.txt")),
        reply("", call("edit_file", "e2", path="b.txt", old="one", new="uno")),
        "FINAL_ANSWER: done",
    ]
    _, results = await run(workspace, replies)
    assert [r.content.split(" in ")[0] for r in results if r.name == "edit_file"] == [
        "Replaced 1 occurrence",
        "Replaced 1 occurrence",
    ]
    (workspace / "c.txt").write_text("before\n")
    blind = [reply("", call("edit_file", "e3", path="c.txt", old="before", new="after")), "done"]
    _, [edited] = await run(workspace, blind, guards=Guards().without("read-first"))
    assert edited.content.startswith("Replaced 1 occurrence")


async def test_a_long_file_shows_its_head_and_where_to_read_on(workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 501)))
    replies = [reply("", call("edit_file", "e1", path="long.txt", old="line 999", new="x")), "ok"]
    _, [refused] = await run(workspace, replies)
    _, rest = refused.content.split("Its first 120 lines:\n")
    assert rest.startswith("line 1\nline 2\n")
    assert "line 120\n[read_file with start_line=121 reads on]\n" in rest
    assert "line 121\n" not in rest


async def test_what_the_tool_reports_itself_is_left_to_it(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\0\1\2")
    (workspace / "empty.txt").write_text("")
    replies: list[AssistantMessage | str] = [
        reply("", call("edit_file", "e1", path="blob.bin", old="a", new="b")),
        reply("", call("edit_file", "e2", path="missing.txt", old="a", new="b")),
        reply("", call("write_file", "w1", path="empty.txt", content="now\n")),
        "ok",
    ]
    _, (binary, missing, empty) = await run(workspace, replies)
    assert binary.content == "'blob.bin' is a binary file"
    assert missing.content.startswith("'missing.txt' does not exist")
    assert empty.content == "Wrote 4 bytes to empty.txt"  # nothing in it to read first


async def test_an_empty_old_in_a_file_that_exists_says_how_to_add_at_its_top(
    workspace: Path,
) -> None:
    (workspace / "app.py").write_text("import os\n")
    replies: list[AssistantMessage | str] = [
        reply("", call("read_file", "r1", path="app.py")),
        reply("", call("edit_file", "e1", path="app.py", old="", new="# header\n")),
        reply("", call("edit_file", "e2", path="gone.py", old="", new="# header\n")),
        "ok",
    ]
    _, (_, top, missing) = await run(workspace, replies)
    assert top.is_error
    assert top.content == (
        "old must not be empty. To add text at the top of app.py, give its first line as old "
        "(`import os`) and your text followed by that line as new; write_file would replace "
        "the whole file"
    )
    assert missing.content == "old must not be empty; to create a file use write_file"
