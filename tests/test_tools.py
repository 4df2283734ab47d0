"""Tools: schemas from type hints, the built-ins, and the workspace boundary."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Literal

import pytest

from reins import ToolCall, ToolContext, ToolResultMessage, ToolSpec, UsageError, Workspace, tool
from reins.tools import BUILTIN_TOOLS, ToolExecutor


@tool(read_only=True, path_args=("path",))
def search(
    ctx: ToolContext, path: str, mode: Literal["fast", "exact"] = "fast", limit: int = 5
) -> str:
    """Search a file.

    Longer explanation.

    Args:
        path: Where to look.
        mode: How to look.
    """
    return path


def test_schema_comes_from_type_hints_and_docstring() -> None:
    assert search.spec == ToolSpec(
        name="search",
        description="Search a file.\n\nLonger explanation.",
        parameters={
            "additionalProperties": False,
            "properties": {
                "path": {"description": "Where to look.", "type": "string"},
                "mode": {
                    "default": "fast",
                    "description": "How to look.",
                    "enum": ["fast", "exact"],
                    "type": "string",
                },
                "limit": {"default": 5, "type": "integer"},
            },
            "required": ["path"],
            "type": "object",
        },
    )
    assert search.takes_context
    assert search.read_only
    assert search.path_args == ("path",)


class _Opaque:
    """A type pydantic cannot describe."""


def test_tool_definitions_are_checked() -> None:
    with pytest.raises(UsageError, match=r"tool opaque: its parameters cannot be described"):

        @tool
        def opaque(x: _Opaque) -> str:
            return ""

    def made_inside() -> object:
        class Local:  # under `from __future__ import annotations`, a hint is a name
            pass

        def local(x: Local) -> str:
            return ""

        return local

    with pytest.raises(UsageError, match=r"tool local: a type hint cannot be resolved"):
        tool(made_inside())  # type: ignore[call-overload]

    with pytest.raises(UsageError, match="parameter 'x' needs a type hint"):

        @tool
        def untyped(x) -> str:  # type: ignore[no-untyped-def]
            return ""

    with pytest.raises(UsageError, match=r"path_args \['nope'\] are not parameters"):

        @tool(path_args=("nope",))
        def f(path: str) -> str:
            return ""


async def _rows(x: int) -> AsyncIterator[int]:
    yield x


def _late(x: int, ctx: ToolContext) -> str:
    return ""


def _by_position(x: int, /) -> str:
    return ""


@pytest.mark.parametrize(
    ("make", "message"),
    [  # each would be offered, then fail every call (or the provider refuse the request)
        (lambda: tool(name="my tool")(_by_position), r"tool name 'my tool': model APIs take"),
        (lambda: tool(name="x" * 65)(_by_position), r"tool name 'xxx.*': model APIs take 1 to"),
        (lambda: tool(_by_position), r"parameter 'x' is positional-only; .* drop the `/`"),
        (lambda: tool(_rows), r"tool _rows: an async generator is not a tool"),
        (lambda: tool(timeout=0)(_late), r"tool _late: timeout=0: seconds, more than 0"),
        (lambda: tool(_late), r"its ToolContext parameter 'ctx' must come first"),
        (lambda: tool(3), r"@tool makes a tool of a function, not of int"),
    ],
)
def test_a_tool_no_call_could_run_is_refused_when_made(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        make()


def test_duplicate_tool_names_are_refused(workspace: Path) -> None:
    with pytest.raises(UsageError, match=r"share the name\(s\) \['search'\]"):
        make_executor(workspace, [search, search])


def make_executor(workspace: Path, tools: list = list(BUILTIN_TOOLS)) -> ToolExecutor:  # noqa: B006
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    return ToolExecutor(tools, context=ctx)


async def run_tool(workspace: Path, name: str, **arguments: object) -> ToolResultMessage:
    return await make_executor(workspace).execute(ToolCall(id="c", name=name, arguments=arguments))


async def ok(workspace: Path, name: str, **arguments: object) -> str:
    result = await run_tool(workspace, name, **arguments)
    assert not result.is_error, result.content
    return result.content


async def error(workspace: Path, name: str, **arguments: object) -> str:
    result = await run_tool(workspace, name, **arguments)
    assert result.is_error, result.content
    return result.content


async def test_write_then_read_with_line_ranges(workspace: Path) -> None:
    assert await ok(workspace, "write_file", path="d/a.txt", content="1\n2\n3\n4\n") == (
        "Wrote 8 bytes to d/a.txt"
    )
    assert await ok(workspace, "read_file", path="d/a.txt") == "1\n2\n3\n4\n\n[4 lines in all]"
    assert await ok(workspace, "read_file", path="d/a.txt", start_line=2, end_line=3) == (
        "2\n3\n\n[more lines follow; read on with start_line=4]"  # or small models read on
    )  # line by line, past the end
    assert await ok(workspace, "read_file", path="d/a.txt", start_line=2, end_line=4) == "2\n3\n4\n"
    assert await ok(workspace, "read_file", path="d/a.txt", start_line=4, end_line=99) == (
        "4\n\n[4 lines in all]"
    )
    assert "bad line range 3-2" in await error(
        workspace, "read_file", path="d/a.txt", start_line=3, end_line=2
    )
    assert "'nope.txt' does not exist" in await error(workspace, "read_file", path="nope.txt")
    assert [p.name for p in (workspace / "d").iterdir()] == ["a.txt"]  # no temp files left


async def test_long_files_are_read_in_pages(workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    text = await ok(workspace, "read_file", path="big.txt")
    assert text.endswith("2000\n\n[2500 lines in all; read on with start_line=2001]")


async def test_binary_files_are_refused(workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02")
    assert await error(workspace, "read_file", path="b.bin") == "'b.bin' is a binary file"


async def test_an_edit_of_a_name_found_more_than_once_points_at_replace_all(
    workspace: Path,
) -> None:
    # Seen on the default model: told to "include more surrounding lines", it sent the whole
    # file as old and "RETRY_LIMIT" as new.
    source = "from settings import MAX_RETRIES\n\n\ndef fetch(n):\n    return n < MAX_RETRIES\n"
    (workspace / "client.py").write_text(source)
    assert await error(
        workspace, "edit_file", path="client.py", old="MAX_RETRIES", new="RETRY_LIMIT"
    ) == (
        "old text `MAX_RETRIES` occurs 2 times in client.py: to replace it everywhere in the "
        "file (a rename), set replace_all to true; to change one of them, include the "
        "surrounding text that makes it unique"
    )
    result = await ok(
        workspace, "edit_file", path="client.py", old=source.rstrip("\n"), new="RETRY_LIMIT"
    )
    assert result == (
        "Replaced 1 occurrence in client.py; the lines now read:\n1: RETRY_LIMIT\n"
        "[this edit put 1 line where 5 were: the others are gone from client.py]"
    )


async def test_edit_replaces_exactly_one_match(workspace: Path) -> None:
    (workspace / "f.py").write_text("x = 1\ny = 1\nx = 1\n")
    assert "occurs 2 times in f.py" in await error(
        workspace, "edit_file", path="f.py", old="x = 1", new="x = 2"
    )
    assert "old text not found in f.py" in await error(
        workspace, "edit_file", path="f.py", old="z = 1", new="z = 2"
    )
    assert await ok(workspace, "edit_file", path="f.py", old="y = 1", new="y = 3") == (
        "Replaced 1 occurrence in f.py; the lines now read:\n2: y = 3"
    )
    assert await ok(
        workspace, "edit_file", path="f.py", old="x = 1", new="x = 0", replace_all=True
    ) == ("Replaced 2 occurrences in f.py; the lines now read:\n1: x = 0\n3: x = 0")
    assert (workspace / "f.py").read_text() == "x = 0\ny = 3\nx = 0\n"


async def test_an_edit_finds_old_written_with_other_whitespace_quotes_or_backslashes(
    workspace: Path,
) -> None:
    # Seen on the default model, each sent again and again until the cap: a YAML list item on
    # the line after its key written on one line, single quotes for a TOML string's double,
    # a URL with a regex's backslashes.
    compose = 'services:\n  web:\n    ports:\n      - "8000:8000"\n'
    (workspace / "compose.yml").write_text(compose)
    (workspace / "pyproject.toml").write_text('[project]\nversion = "0.3.1"\n')
    (workspace / "guide.md").write_text("See http://docs.old-site.org/guide.\n")
    assert await ok(
        workspace,
        "edit_file",
        path="compose.yml",
        old='ports: - "8000:8000"',
        new='ports: - "8080:8000"',
    ) == (
        "Replaced 1 occurrence in compose.yml; the lines now read:\n"
        '3:     ports:\n4:       - "8080:8000"\n'
        "[old was not in compose.yml as written: it matched with the file's whitespace, "
        "and new was written with them too]"
    )
    assert (workspace / "compose.yml").read_text() == compose.replace('"8000:', '"8080:')
    result = await ok(
        workspace,
        "edit_file",
        path="pyproject.toml",
        old="version = '0.3.1'",
        new="version = '0.4.0'",
    )
    assert "file's quotes" in result
    assert (workspace / "pyproject.toml").read_text() == '[project]\nversion = "0.4.0"\n'
    result = await ok(
        workspace,
        "edit_file",
        path="guide.md",
        old=r"http://docs\.old-site\.org/guide",
        new="https://docs.example.com/guide",
    )
    assert "file's backslashes" in result
    assert (workspace / "guide.md").read_text() == "See https://docs.example.com/guide.\n"


async def test_lines_added_around_a_loosely_matched_old_keep_the_file_s_text(
    workspace: Path,
) -> None:
    # Seen on the default model: a header put above two lines written without the blank line
    # between them, sent four times as "not found as written".
    (workspace / "app.py").write_text("from utils import shout\n\nprint(shout('hi'))\n")
    old = "from utils import shout\nprint(shout('hi'))"
    result = await ok(workspace, "edit_file", path="app.py", old=old, new=f"# MIT\n{old}")
    assert "matched with the file's whitespace" in result
    assert (workspace / "app.py").read_text() == (
        "# MIT\nfrom utils import shout\n\nprint(shout('hi'))\n"
    )


async def test_a_loose_match_that_new_cannot_follow_shows_the_text_to_copy(
    workspace: Path,
) -> None:
    (workspace / "compose.yml").write_text('web:\n  ports:\n    - "8000:8000"\n')
    message = await error(  # new has more words than old: where its line breaks go is unknown
        workspace,
        "edit_file",
        path="compose.yml",
        old='ports: - "8000:8000"',
        new='ports: - "8080:8000" - "9090:9090"',
    )
    assert message == (
        "old text not found in compose.yml as written; it is there with other whitespace:\n"
        'ports:\n    - "8000:8000"\ncopy that as old, and write new the same way'
    )
    assert (workspace / "compose.yml").read_text() == 'web:\n  ports:\n    - "8000:8000"\n'
    (workspace / "two.txt").write_text("alpha  beta\nalpha  beta\nab\n")
    assert "occurs 2 times in two.txt" in await error(  # loosely too, it must be unique
        workspace, "edit_file", path="two.txt", old="alpha beta", new="gamma delta"
    )
    assert "old text not found in two.txt;" in await error(  # too short to match loosely
        workspace, "edit_file", path="two.txt", old="a b", new="c d"
    )
    assert (workspace / "two.txt").read_text() == "alpha  beta\nalpha  beta\nab\n"


async def test_old_text_not_found_shows_the_lines_most_like_it(workspace: Path) -> None:
    # Seen on the default model: `dependencies = []` for a list on several lines, `http:` for
    # a JSON key, sent again after each "not found" until the cap.
    toml = '[project]\nname = "fetcher"\ndependencies = [\n    "pydantic>=2.5",\n]\n'
    (workspace / "pyproject.toml").write_text(toml)
    assert await error(
        workspace, "edit_file", path="pyproject.toml", old="dependencies = []", new="x"
    ) == (
        "old text not found in pyproject.toml; the lines most like it:\n3: dependencies = [\n"
        "copy the exact text, whitespace and indentation included"
    )
    (workspace / "config.json").write_text('{\n  "log_level": "info",\n  "http": {}\n}\n')
    assert 'the lines most like it:\n3:   "http": {}\n' in await error(
        workspace, "edit_file", path="config.json", old="http:", new="x"
    )
    assert await error(  # nothing alike: no lines offered
        workspace, "edit_file", path="config.json", old="retries = 3", new="x"
    ) == (
        "old text not found in config.json; read the file and copy the exact text, "
        "whitespace and indentation included"
    )
    assert (workspace / "pyproject.toml").read_text() == toml


async def test_an_edit_shows_the_lines_it_left(workspace: Path) -> None:
    # Seen on the default model: asked to set the version, it replaced the key, not the value;
    # the numbered lines show it what the file now says.
    (workspace / "package.json").write_text('{\n  "name": "app",\n  "version": "1.2.9"\n}\n')
    said = await ok(workspace, "edit_file", path="package.json", old='"version"', new='"1.3.0"')
    assert said == (
        'Replaced 1 occurrence in package.json; the lines now read:\n3:   "1.3.0": "1.2.9"'
    )
    (workspace / "f.py").write_text("def f():\n    pass\n")
    block = "    a = 1\n    return a\n"
    said = await ok(workspace, "edit_file", path="f.py", old="    pass\n", new=block)
    assert said.endswith("now read:\n2:     a = 1\n3:     return a")  # every line of a block
    (workspace / "many.txt").write_text("x\n" * 9)
    said = await ok(workspace, "edit_file", path="many.txt", old="x", new="y", replace_all=True)
    assert said.endswith("now read (the first):\n1: y\n2: y\n3: y\n4: y\n5: y\n6: y")
    (workspace / "page.txt").write_text("a\fb\r\nc\r\n")  # lines as read_file counts them
    said = await ok(workspace, "edit_file", path="page.txt", old="c", new="d")
    assert said.endswith("now read:\n2: d")
    said = await ok(workspace, "edit_file", path="many.txt", old="y\n", new="", replace_all=True)
    assert said == "Replaced 9 occurrences in many.txt"  # a deletion leaves no line to show


async def test_an_edit_that_doubles_a_line_says_so(workspace: Path) -> None:
    # Seen on the default model: its new text held the line after old, which stayed too.
    (workspace / "greet.py").write_text("def greet()\n    print('hi')\n\ngreet()\n")
    said = await ok(
        workspace,
        "edit_file",
        path="greet.py",
        old="def greet()",
        new="def greet():\n    print('hi')",
    )
    assert said.endswith(
        "now read:\n1: def greet():\n2:     print('hi')\n3:     print('hi')\n[lines 2 and 3 are "
        "now the same line: new repeats a line next to old; if it should be there once, delete one]"
    )
    (workspace / "b.txt").write_text("x\ny\n")  # the line before old, repeated at new's start
    said = await ok(workspace, "edit_file", path="b.txt", old="y", new="x\ny")
    assert "now read:\n1: x\n2: x\n3: y\n[" in said
    assert said.endswith(
        "[lines 1 and 2 are now the same line: new repeats a line next to old; if it should be "
        "there once, delete one]"
    )
    (workspace / "c.txt").write_text("a\nb\nb\nc\n")  # a pair that was there before
    said = await ok(workspace, "edit_file", path="c.txt", old="a", new="A")
    assert said.endswith("now read:\n1: A")
    said = await ok(workspace, "edit_file", path="c.txt", old="c", new="b\nc")
    assert said.endswith(
        "same line: new repeats a line next to old; if it should be there once, delete one]"
    )


async def test_an_empty_write_over_a_file_says_it_still_exists(workspace: Path) -> None:
    # Seen on the default model: asked to delete old.log, it wrote it empty and answered done.
    (workspace / "old.log").write_text("line one\n")
    said = await ok(workspace, "write_file", path="old.log", content="")
    assert (
        said
        == "Wrote 0 bytes to old.log\n[old.log is now empty (it held 9 bytes); it still exists]"
    )
    assert (
        await ok(workspace, "write_file", path="new.txt", content="") == "Wrote 0 bytes to new.txt"
    )
    said = await ok(workspace, "write_file", path="old.log", content="")
    assert said == "Wrote 0 bytes to old.log"  # it was empty already


async def test_find_files_shows_where_a_name_it_cannot_find_occurs_as_text(workspace: Path) -> None:
    # Seen on the default model: find_files for a class and a URL, "no files", answered "nowhere".
    (workspace / "shop/db").mkdir(parents=True)
    (workspace / "shop/db/orders.py").write_text("import os\n\nclass OrderRepository:\n    pass\n")
    (workspace / "docs").mkdir()
    (workspace / "docs/index.md").write_text("See [the guide](http://docs.old-site.org/guide).\n")
    assert await ok(workspace, "find_files", pattern="OrderRepository") == (
        "no file names match 'OrderRepository' (find_files matches names), but the text occurs "
        "in these files (as grep shows it):\nshop/db/orders.py:3: class OrderRepository:\n"
        "[1 matching line]"
    )
    said = await ok(workspace, "find_files", pattern="http://docs.old-site.org", path="docs")
    assert said.endswith(
        "\ndocs/index.md:1: See [the guide](http://docs.old-site.org/guide).\n[1 matching line]"
    )
    assert await ok(workspace, "find_files", pattern="docs-old-site") == (  # "." is no wildcard
        "no files match 'docs-old-site' (find_files matches names; grep searches contents); "
        "no file holds it as text either"
    )
    assert await ok(workspace, "find_files", pattern="Order*") == (  # a glob is a name
        "no files match 'Order*' (find_files matches names; grep searches contents)"
    )
    (workspace / "list.txt").write_text("keep\nremove me\n")  # a file for its folder: its text
    assert await ok(workspace, "find_files", pattern="remove me", path="list.txt") == (
        "no file names match 'remove me' (find_files matches names), but the text occurs in "
        "these files (as grep shows it):\nlist.txt:2: remove me\n[1 matching line]"
    )
    said = await ok(workspace, "find_files", pattern="*.txt", path="list.txt")
    assert said == "list.txt\n[1 file]"  # its name
    (workspace / "many.txt").write_text("needle\n" * 30)
    said = await ok(workspace, "find_files", pattern="needle")
    assert said.count("many.txt:") == 20
    assert said.endswith("[stopped at 20 matches]")


async def test_write_keeps_the_file_mode(workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    await ok(workspace, "write_file", path="run.sh", content="new")
    assert script.stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "sub/../../outside.txt", "link/secret.txt", "filelink"],
)
async def test_paths_outside_the_workspace_are_refused(
    workspace: Path, tmp_path: Path, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "sub").mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / "filelink").symlink_to(outside / "secret.txt")
    for name, args in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("edit_file", {"path": path, "old": "secret", "new": "x"}),
        ("list_files", {"path": path}),
        ("grep", {"pattern": "secret", "path": path}),
    ]:
        message = await error(workspace, name, **args)
        assert "resolves outside the workspace" in message, (name, message)
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (tmp_path / "outside.txt").exists()


async def test_symlinks_inside_the_workspace_work(workspace: Path) -> None:
    (workspace / "real.txt").write_text("hi")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert await ok(workspace, "read_file", path="alias.txt") == "hi\n[1 line in all]"


async def test_the_event_log_folder_is_not_writable_by_tools(workspace: Path) -> None:
    store = workspace / ".reins"
    store.mkdir()
    ctx = ToolContext(workspace=Workspace(workspace, protected=[store]), session_id="s", run_id="r")
    executor = ToolExecutor(list(BUILTIN_TOOLS), context=ctx)
    call = ToolCall(id="c", name="write_file", arguments={"path": ".reins/reins.db", "content": ""})
    result = await executor.execute(call)
    assert result.is_error
    assert (
        result.content
        == "path '.reins/reins.db' is in the run log's folder, which tools may not write"
    )


def make_tree(workspace: Path) -> None:
    files = {
        ".gitignore": "build/\n*.log\n",
        "src/app.py": "def main():\n    return 'TODO fix'\n",
        "src/util.py": "# TODO later\n",
        "src/.gitignore": "generated.py\n",
        "src/generated.py": "TODO generated\n",
        "build/out.py": "TODO built\n",
        "debug.log": "TODO log\n",
        "docs/readme.md": "nothing here\n",
        ".git/config": "TODO git\n",
        ".reins/sessions/s.jsonl": "TODO log of runs\n",
    }
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    (workspace / "src/blob.bin").write_bytes(b"TODO\x00binary")


async def test_grep_honours_gitignore_and_skips_binaries(workspace: Path) -> None:
    make_tree(workspace)
    assert await ok(workspace, "grep", pattern="TODO") == (
        "src/app.py:2:     return 'TODO fix'\nsrc/util.py:1: # TODO later\n"
        "[2 matching lines in 2 files]"
    )
    assert await ok(workspace, "grep", pattern="todo", ignore_case=True, glob="util.*") == (
        "src/util.py:1: # TODO later\n[1 matching line]"
    )
    assert await ok(workspace, "grep", pattern="TODO", path="src/app.py") == (
        "src/app.py:2:     return 'TODO fix'\n[1 matching line]"
    )
    assert await ok(workspace, "grep", pattern="nothing-matches") == (
        "no matches for 'nothing-matches' (grep searches contents; find_files matches names)"
    )
    assert "bad regular expression '('" in await error(workspace, "grep", pattern="(")


async def test_grep_reads_a_path_with_a_wildcard_as_a_folder_and_a_glob(workspace: Path) -> None:
    make_tree(workspace)  # seen: path "docs/**", four times, "does not exist"
    assert await ok(workspace, "grep", pattern="TODO", path="src/**") == (
        "src/app.py:2:     return 'TODO fix'\nsrc/util.py:1: # TODO later\n"
        "[2 matching lines in 2 files]\n"
        "[path 'src/**' has a wildcard: searched src for files named *, at any depth]"
    )
    assert await ok(workspace, "grep", pattern="TODO", path="./**/util.*") == (
        "src/util.py:1: # TODO later\n[1 matching line]\n"
        "[path './**/util.*' has a wildcard: searched . for files named util.*, at any depth]"
    )
    # a real name with a wildcard in it is searched as it is
    (workspace / "odd*.txt").write_text("TODO odd\n")
    assert await ok(workspace, "grep", pattern="TODO", path="odd*.txt") == (
        "odd*.txt:1: TODO odd\n[1 matching line]"
    )
    # no single name pattern after the folder, a folder that is not there, a glob given too
    for path, glob in [("src/*/x/*.py", None), ("nope/*.py", None), ("src/*.py", "*.py")]:
        assert f"{path!r} does not exist" in await error(
            workspace, "grep", pattern="TODO", path=path, glob=glob
        )


async def test_a_missing_path_is_answered_with_where_that_name_is(workspace: Path) -> None:
    # Seen on the default model: `install.md` for `docs/install.md`, and grep given two files
    # in one path, until the step cap.
    make_tree(workspace)
    (workspace / "README.md").write_text("TODO top\n")
    for name in ("read_file", "grep", "edit_file"):
        args = {"pattern": "TODO"} if name == "grep" else {}
        args |= {"old": "x", "new": "y"} if name == "edit_file" else {}
        assert await error(workspace, name, path="util.py", **args) == (
            "'util.py' does not exist; a file of that name is at `src/util.py`"
        )
    assert await error(workspace, "grep", pattern="TODO", path="README.md util.py") == (
        "'README.md util.py' does not exist; a path names one file or folder, not 2: call "
        "once for each of `README.md`, `src/util.py`"
    )
    # ignored files are not offered; no file of that name: how to make one
    assert await error(workspace, "read_file", path="generated.py") == (
        "'generated.py' does not exist; list_files shows what is there, and write_file "
        "creates a file"
    )


async def test_an_edit_of_a_folder_names_the_files_that_hold_old(workspace: Path) -> None:
    # Seen on the default model: a rename across a project sent to edit_file with path `.`.
    make_tree(workspace)
    assert await error(workspace, "edit_file", path=".", old="TODO", new="DONE") == (
        "'.' is a folder: edit_file changes one file. old occurs in 2 files under it: change "
        "each: edit_file with path `src/app.py`, old `TODO`, new `DONE`, replace_all true "
        "(then the same for `src/util.py`)"
    )
    assert await error(workspace, "edit_file", path="docs", old="TODO", new="DONE") == (
        "'docs' is a folder: edit_file changes one file, and no file under it holds old"
    )


async def test_find_and_list_files(workspace: Path) -> None:
    make_tree(workspace)
    assert await ok(workspace, "find_files", pattern="*.py") == (
        "src/app.py\nsrc/util.py\n[2 files]"
    )
    assert await ok(workspace, "find_files", pattern="*.md", path="docs") == (
        "docs/readme.md\n[1 file]"
    )
    assert await ok(workspace, "find_files", pattern="*.rs") == (
        "no files match '*.rs' (find_files matches names; grep searches contents)"
    )
    assert await ok(workspace, "list_files") == (".gitignore\nbuild/\ndebug.log\ndocs/\nsrc/")
    size = (workspace / "src/app.py").stat().st_size
    assert await ok(workspace, "list_files", path="src/app.py") == (
        f"src/app.py ({size} bytes; a file: read_file shows its content)"
    )
    assert "'nope' does not exist" in await error(workspace, "list_files", path="nope")


async def test_run_command_reports_exit_code_and_output(workspace: Path) -> None:
    (workspace / "x.txt").write_text("hi")
    assert await ok(workspace, "run_command", command="cat x.txt; echo err >&2; exit 3") == (
        "exit code: 3\nhierr\n"
    )


async def test_run_command_timeout_kills_the_process_group(workspace: Path) -> None:
    start = time.monotonic()
    message = await error(
        workspace, "run_command", command="echo started; s=34; sleep $s.5 & wait", timeout=0.3
    )
    assert message == "command timed out after 0.3 s and was killed; its output:\nstarted\n"
    assert time.monotonic() - start < 5
    await asyncio.sleep(0.1)
    assert not running("sleep 34.5")


def running(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = (entry / "stat").read_text()
        except (OSError, NotADirectoryError):
            continue
        if marker in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(int(entry.name))
    return found


async def test_run_command_output_is_capped(workspace: Path) -> None:
    text = await ok(workspace, "run_command", command="seq 1 100000")
    assert len(text) < 31_000  # with no spill folder, the executor cuts the middle
    assert text.startswith("exit code: 0\n1\n2\n")
    assert "characters cut" in text
    assert text.endswith("99999\n100000\n")


def test_missing_workspace_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not an existing directory"):
        Workspace(tmp_path / "nope")


async def test_each_run_works_in_the_directory_its_workspace_names_then(tmp_path: Path) -> None:
    """An agent resolves its workspace once, but follows a symlink that now points elsewhere,
    and a workspace that is gone is the same clear error as at the first run."""
    from reins import Agent
    from reins.testing import ScriptedModel

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "current"
    link.symlink_to(first)
    agent = Agent(model=ScriptedModel(["done"]), workspace=link)
    one = await agent.run("go")
    again = await agent.run("go")
    link.unlink()
    link.symlink_to(second)
    two = await agent.run("go")
    roots = [(await agent.state(r.run_id)).config.workspace for r in (one, again, two)]
    assert roots == [str(first), str(first), str(second)]
    second.rmdir()
    with pytest.raises(UsageError, match="is not an existing directory"):
        await agent.run("go")
