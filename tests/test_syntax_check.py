"""A write that breaks a file (issue 29): asked to change one value in a JSON file, the model
wrote `key: value` lines over it and answered. A file of a kind reins parses that parsed before a
write_file or edit_file and does not after is reported with the parser's message, line and
column, or, with `Guards(syntax_check="refuse")`, the change is refused and the file kept."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reins import Agent, ToolCall, ToolContext, ToolResultMessage, UsageError, Workspace
from reins.agent._config import GuardsConfig
from reins.core._guard_settings import Guards
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, ToolExecutor
from reins.tools._syntax import MAX_CHECK_CHARS, Broken, judge

from .helpers import call, reply

CONFIG = '{\n  "name": "demo",\n  "port": 8080\n}\n'
FLAT = "name: demo\nport: 9090\n"
"""What the model wrote over the JSON file: no longer JSON."""


@pytest.mark.parametrize(
    ("name", "before", "after", "broken"),
    [
        ("c.json", CONFIG, FLAT, Broken("JSON", "Expecting value", 1, 1, "name: demo")),
        (
            "c.json",
            CONFIG,
            '{\n  "name": "demo"\n  "port": 1\n}',
            Broken("JSON", "Expecting ',' delimiter", 3, 3, '  "port": 1'),
        ),
        (
            "n.ipynb",
            "{}",
            "{cells",
            Broken("JSON", "Expecting property name enclosed in double quotes", 1, 2, "{cells"),
        ),
        ("p.toml", "a = 1\n", "a = 1\nb = \n", Broken("TOML", "Invalid value", 2, 5, "b = ")),
        ("p.toml", "a = 1\n", 'a = "x', Broken("TOML", "Unterminated string at the end")),
        (
            "c.yaml",
            "a: 1\n",
            "a: 1\n  b: 2\n",
            Broken("YAML", "mapping values are not allowed in this context", 2, 4, "  b: 2"),
        ),
        (
            "c.yml",
            "a: [1]\n",
            "a: [1\n",
            Broken(
                "YAML",
                "while parsing a flow sequence, did not find expected ',' or ']'",
                2,
                1,
            ),
        ),
        (
            "m.py",
            "x = 1\n",
            "def f(:\n    pass\n",
            Broken("Python", "invalid syntax", 1, 7, "def f(:"),
        ),
        ("t.pyi", "x: int\n", "x: int =\n", Broken("Python", "invalid syntax", 1, 9, "x: int =")),
        ("d.xml", "<a/>", "<a><b></a>", Broken("XML", "mismatched tag", 1, 9, "<a><b></a>")),
        ("i.svg", "<svg/>", "<svg>", Broken("XML", "no element found", 1, 6, "<svg>")),
    ],
)
def test_each_kind_reports_the_parser_s_message_line_and_column(
    name: str, before: str, after: str, broken: Broken
) -> None:
    assert judge(name, before, after) == broken
    assert judge(name, None, after) == broken  # a new file of that kind is judged too


def test_what_is_said_names_the_line_as_written() -> None:
    broken = judge("c.json", CONFIG, FLAT)
    assert str(broken) == "Expecting value at line 1, column 1: 'name: demo'"


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("c.json", "{draft", "{still a draft"),  # did not parse before: not this write's doing
        ("m.py", "print 'py2'\n", "print 'py2' +\n"),
        ("c.json", CONFIG, CONFIG.replace("8080", "9090")),  # parses
        ("c.yaml", "a: 1\n", "a: !Ref b\nc: &x 1\nd: *x\n"),  # custom tags and aliases parse
        ("m.py", "x = 1\n", 'x = "\\d"\n'),  # a warning is not an error, and is not printed
        ("notes.txt", "{}", "{"),  # no parser for it
        ("Makefile", "a:\n", "a"),
        ("tsconfig.json", "{}", "{ // comments, as tsc reads it\n}"),  # JSON with comments
        (".vscode/settings.json", "{}", '{"a": 1,}'),
        ("d.xml", "<a/>", '<!DOCTYPE a [<!ENTITY x "y">]><a>&x;'),  # entities: not expanded
        ("c.json", "{}", "[" * 100_000),  # too deep to tell
        ("c.json", "{}", "{" + " " * MAX_CHECK_CHARS),  # too big to parse at each write
        ("c.json", " " * MAX_CHECK_CHARS + "{}", "{"),
    ],
)
def test_what_is_not_judged(name: str, before: str, after: str) -> None:
    assert judge(name, before, after) is None


def _executor(workspace: Path, syntax_check: str = "report") -> ToolExecutor:
    context = ToolContext(
        workspace=Workspace(workspace),
        session_id="s",
        run_id="r",
        syntax_check=syntax_check,  # type: ignore[arg-type]
    )
    return ToolExecutor(BUILTIN_TOOLS, context=context)


async def _run(executor: ToolExecutor, name: str, **arguments: object) -> ToolResultMessage:
    return await executor.execute(ToolCall(id="c", name=name, arguments=arguments))


REPORTED = (
    "\n[config.json no longer parses as JSON: Expecting value at line 1, column 1: "
    "'name: demo'; it did before this change]"
)
REFUSED = (
    "not written: config.json would not parse as JSON (Expecting value at line 1, column 1: "
    "'name: demo'); the file is left as it was"
)


async def test_a_write_that_breaks_a_file_is_reported_and_stands(workspace: Path) -> None:
    (workspace / "config.json").write_text(CONFIG)
    done = await _run(_executor(workspace), "write_file", path="config.json", content=FLAT)
    assert (done.content, done.is_error) == (f"Wrote 22 bytes to config.json{REPORTED}", False)
    assert (workspace / "config.json").read_text() == FLAT


async def test_with_refuse_the_write_is_refused_and_the_file_kept(workspace: Path) -> None:
    (workspace / "config.json").write_text(CONFIG)
    executor = _executor(workspace, "refuse")
    done = await _run(executor, "write_file", path="config.json", content=FLAT)
    assert (done.content, done.is_error) == (REFUSED, True)
    assert (workspace / "config.json").read_text() == CONFIG
    fixed = CONFIG.replace("8080", "9090")  # a valid write goes through, with nothing said
    done = await _run(executor, "write_file", path="config.json", content=fixed)
    assert (done.content, done.is_error) == ("Wrote 37 bytes to config.json", False)


async def test_an_edit_is_judged_alike_in_both_modes(workspace: Path) -> None:
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    edit = {"path": "app.py", "old": "def main():", "new": "def main(:"}
    said = "app.py no longer parses as Python: invalid syntax at line 1, column 10: 'def main(:'"
    refused = await _run(_executor(workspace, "refuse"), "edit_file", **edit)
    assert refused.is_error
    assert refused.content == (
        "not written: app.py would not parse as Python (invalid syntax at line 1, column 10: "
        "'def main(:'); the file is left as it was"
    )
    assert (workspace / "app.py").read_text() == "def main():\n    return 1\n"
    reported = await _run(_executor(workspace), "edit_file", **edit)
    assert (
        reported.content == "Replaced 1 occurrence in app.py; the lines now read:\n1: def main(:\n"
        f"[{said}; it did before this change]"
    )
    assert (workspace / "app.py").read_text() == "def main(:\n    return 1\n"
    again = await _run(_executor(workspace, "refuse"), "edit_file", path="app.py", old="1", new="2")
    assert again.content.endswith("read:\n2:     return 2")  # broken before: not judged


async def test_a_new_file_that_does_not_parse_is_reported_or_not_made(workspace: Path) -> None:
    new = {"path": "deploy.yaml", "content": "steps:\n  - run: a\n    - run: b\n"}
    why = (
        "while parsing a block mapping, did not find expected key at line 3, column 5: "
        "'    - run: b'"
    )
    refused = await _run(_executor(workspace, "refuse"), "write_file", **new)
    assert (refused.content, refused.is_error) == (
        f"not written: deploy.yaml would not parse as YAML ({why}); no file was made",
        True,
    )
    assert not (workspace / "deploy.yaml").exists()
    reported = await _run(_executor(workspace), "write_file", **new)
    assert reported.content == (
        f"Wrote 31 bytes to deploy.yaml\n[deploy.yaml does not parse as YAML: {why}]"
    )
    assert (workspace / "deploy.yaml").exists()


async def test_an_append_that_breaks_the_file_is_judged_whole(workspace: Path) -> None:
    (workspace / "p.toml").write_text("a = 1\n")
    executor = _executor(workspace, "refuse")
    done = await _run(executor, "write_file", path="p.toml", content="b = [", append=True)
    assert done.content.startswith("not written: p.toml would not parse as TOML (")
    assert (workspace / "p.toml").read_text() == "a = 1\n"
    done = await _run(executor, "write_file", path="p.toml", content="b = 2", append=True)
    assert done.content == "Appended 5 bytes to p.toml"


async def test_off_looks_at_nothing(workspace: Path) -> None:
    (workspace / "config.json").write_text(CONFIG)
    done = await _run(_executor(workspace, "off"), "write_file", path="config.json", content=FLAT)
    assert done.content == "Wrote 22 bytes to config.json"


async def test_a_run_s_guards_choose_the_mode(workspace: Path) -> None:
    (workspace / "config.json").write_text(CONFIG)
    replies = [
        reply("", call("write_file", "w1", path="config.json", content=FLAT)),
        "FINAL_ANSWER: done",
    ]

    async def result_of(guards: Guards) -> str:
        agent = Agent(
            model=ScriptedModel(replies), workspace=workspace, tools=BUILTIN_TOOLS, guards=guards
        )
        run = await agent.run("set the port to 9090 in config.json")
        (workspace / "config.json").write_text(CONFIG)
        return next(m for m in run.messages if isinstance(m, ToolResultMessage)).content

    unread = Guards().without("read-first")  # the script writes over a file it did not read
    assert await result_of(unread) == f"Wrote 22 bytes to config.json{REPORTED}"
    assert await result_of(replace(unread, syntax_check="refuse")) == REFUSED
    off = unread.without("syntax-check")
    assert await result_of(off) == "Wrote 22 bytes to config.json"


def test_the_setting_is_spelled_as_the_other_guards() -> None:
    assert Guards().syntax_check == "report"
    assert Guards().without("syntax-check").syntax_check == "off"
    off = Guards(syntax_check="off")
    assert off.switched(on=["syntax-check"]).syntax_check == "report"
    refuse = Guards(syntax_check="refuse")
    assert refuse.switched(on=["syntax-check"]).syntax_check == "refuse"  # on already
    assert refuse.changes() == ["syntax_check refuse"]
    assert GuardsConfig(syntax_check="refuse").guards().syntax_check == "refuse"
    assert GuardsConfig(syntax_check=False).guards().syntax_check == "off"
    assert GuardsConfig(syntax_check=True).guards().syntax_check == "report"
    with pytest.raises(UsageError, match="syntax_check='strict': one of 'report', 'refuse'"):
        Guards(syntax_check="strict")  # type: ignore[arg-type]


async def test_the_escapes_guard_switches_the_read_back(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("total 42 items\n")
    replies = [
        reply("", call("grep", "g1", pattern="\x08[0-9]+\x08", path="notes.txt")),
        "FINAL_ANSWER: 42",
    ]

    async def result_of(guards: Guards) -> str:
        agent = Agent(
            model=ScriptedModel(replies), workspace=workspace, tools=BUILTIN_TOOLS, guards=guards
        )
        run = await agent.run("numbers?")
        return next(m for m in run.messages if isinstance(m, ToolResultMessage)).content

    assert (await result_of(Guards())).startswith(
        "notes.txt:1: total 42 items\n[1 matching line]\n[pattern: read"
    )
    assert (await result_of(Guards(escapes=False))).startswith("no matches for '\\x08[0-9]+")
