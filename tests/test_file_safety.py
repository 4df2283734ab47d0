"""File tools against a hostile workspace: symlinks swapped mid-call, hard links to outside
files, FIFOs and sockets, huge files, and calls that time out. Real files, real threads."""

from __future__ import annotations

import asyncio
import ctypes
import os
import random
import resource
import socket
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from reins import ToolCall, ToolContext, ToolError, ToolResultMessage, Workspace, tool
from reins.core._threads import running
from reins.tools import (
    BUILTIN_TOOLS,
    Tool,
    ToolExecutor,
    edit_file,
    grep,
    list_files,
    read_file,
    write_file,
)

SECRET = "SECRET-outside-the-workspace"


async def threads_done() -> None:
    """Until the tool calls given up have ended in their threads (which nothing waits for)."""
    while running():  # noqa: ASYNC110 (a count in other threads: nothing to await)
        await asyncio.sleep(0.005)


def executor(workspace: Path, tools: list[Tool] = list(BUILTIN_TOOLS)) -> ToolExecutor:  # noqa: B006
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    return ToolExecutor(tools, context=ctx)


async def run(ex: ToolExecutor, name: str, **arguments: object) -> ToolResultMessage:
    return await ex.execute(ToolCall(id="c", name=name, arguments=arguments))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace with a secret in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET + "\n")
    return folder


def _rename_exchange() -> Callable[..., int] | None:
    """renameat2(RENAME_EXCHANGE) from glibc: swaps two names in one step (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except AttributeError:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    exchange: Callable[..., int] = fn
    return exchange


class Swapper(threading.Thread):
    """Swaps `name` between a real folder and a symlink to outside, as fast as it can."""

    def __init__(self, workspace: Path, name: str, outside: Path) -> None:
        super().__init__(daemon=True)
        self.a, self.b = str(workspace / name), str(workspace / f".{name}.other")
        os.symlink(outside, self.b)
        self.done = threading.Event()
        self.swaps = 0
        self.exchange = _rename_exchange()

    def run(self) -> None:
        a, b = self.a.encode(), self.b.encode()
        while not self.done.is_set():
            if self.exchange is not None:
                if self.exchange(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
                    raise OSError(ctypes.get_errno(), "renameat2")
            else:  # two renames: the name is briefly missing, still a swap
                os.rename(self.a, self.a + ".tmp")
                os.rename(self.b, self.a)
                os.rename(self.a + ".tmp", self.b)
            self.swaps += 1


async def test_a_symlink_swapped_in_mid_call_never_leads_outside(
    workspace: Path, outside: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d/secret.txt").write_text("inside\n")
    ex = executor(workspace)
    swapper = Swapper(workspace, "d", outside)
    swapper.start()
    calls = [
        ("read_file", {"path": "d/secret.txt"}),
        ("write_file", {"path": "d/new.txt", "content": "x"}),
        ("edit_file", {"path": "d/secret.txt", "old": "inside\n", "new": "inside\n\n"}),
        ("grep", {"pattern": "SECRET", "path": "d"}),
        ("find_files", {"pattern": "*", "path": "d"}),
    ]
    outcomes = {"ok": 0, "outside": 0}
    try:
        for i in range(3000):
            name, args = calls[i % len(calls)]
            result = await run(ex, name, **args)
            assert SECRET not in result.content, (name, result.content)
            if not result.is_error:
                outcomes["ok"] += 1
            elif "resolves outside the workspace" in result.content:
                outcomes["outside"] += 1
            else:  # the executor's early path check lost the race (or, without renameat2,
                # the name was missing for a moment): a refusal too
                assert "keeps changing" in result.content or "exist" in result.content, result
        # Straight to the tools, without the executor's path check first: only the walk guards.
        ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
        for i in range(3000):
            name, args = calls[i % len(calls)]
            try:
                text = {t.name: t for t in BUILTIN_TOOLS}[name].fn(ctx, **args)
            except ToolError as exc:
                text = str(exc)
                # A refusal either way; the walk's retries on a name that keeps flipping
                # between folder and symlink count against the symlink cap (seen under load).
                assert "outside the workspace" in text or "too many symlinks" in text, text
                outcomes["outside"] += 1
            else:
                outcomes["ok"] += 1
            assert SECRET not in text, (name, text)
    finally:
        swapper.done.set()
        swapper.join()
    assert os.listdir(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert swapper.swaps > 1000, swapper.swaps
    assert outcomes["ok"] > 100, outcomes  # both sides of the race were hit
    assert outcomes["outside"] > 100, outcomes


async def test_symlinks_that_stay_inside_are_followed(workspace: Path, outside: Path) -> None:
    (workspace / "src/pkg").mkdir(parents=True)
    (workspace / "src/pkg/a.txt").write_text("a\n")
    (workspace / "rel").symlink_to("src/pkg")
    (workspace / "src/up").symlink_to("../src/pkg/a.txt")
    (workspace / "abs").symlink_to(workspace / "src/pkg/a.txt")
    (workspace.parent / "alias").symlink_to(workspace)  # the workspace by another name
    (workspace / "src/via").symlink_to(workspace.parent / "alias/src/pkg/a.txt")
    (workspace / "loop").symlink_to("loop")
    (workspace / "esc").symlink_to("src/../../outside")
    ex = executor(workspace)
    paths = ["rel/a.txt", "src/up", "abs", "src/via", "src/pkg/../pkg/./a.txt", "rel/../pkg/a.txt"]
    for path in paths:
        assert (await run(ex, "read_file", path=path)).content == "a\n\n[1 line in all]", path
    assert (await run(ex, "write_file", path="abs", content="b\n")).content == (
        "Wrote 2 bytes to src/pkg/a.txt"
    )
    assert (workspace / "abs").is_symlink()
    assert (await run(ex, "read_file", path="rel/a.txt")).content == "b\n\n[1 line in all]"
    assert (await run(ex, "write_file", path="rel/new/n.txt", content="n")).content == (
        "Wrote 1 bytes to src/pkg/new/n.txt"
    )
    # none to outside or folders
    assert (await run(ex, "find_files", pattern="*")).content == (
        "abs\nsrc/up\nsrc/via\nsrc/pkg/a.txt\nsrc/pkg/new/n.txt\n[5 files]"
    )
    loop = await run(ex, "read_file", path="loop")
    assert loop.content == "path 'loop' goes through too many symlinks (a loop?)"
    escape = await run(ex, "read_file", path="esc/secret.txt")
    assert "resolves outside the workspace" in escape.content


async def test_the_log_folder_stays_unwritable_through_a_symlink(workspace: Path) -> None:
    """The fd walk refuses it on its own (the executor's path check is bypassed here)."""
    (workspace / ".reins").mkdir()
    (workspace / "log").symlink_to(".reins")
    ws = Workspace(workspace, protected=[workspace / ".reins"])
    ctx = ToolContext(workspace=ws, session_id="s", run_id="r")
    for path in ["log/x.db", "log/sub/x.db", ".reins/x.db"]:
        with pytest.raises(ToolError, match="is in the run log's folder"):
            write_file.fn(ctx, path=path, content="x")
    (workspace / ".reins").rename(workspace / "renamed")
    with pytest.raises(ToolError, match="is in the run log's folder"):
        write_file.fn(ctx, path="renamed/x.db", content="x")
    assert os.listdir(workspace / "renamed") == []


async def test_a_hard_link_to_an_outside_file_is_not_read(workspace: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", workspace / "linked.txt")
    (workspace / "plain.txt").write_text("SECRET? no\n")
    ex = executor(workspace)
    message = (await run(ex, "read_file", path="linked.txt")).content
    assert message == (
        "'linked.txt' has 2 hard links, and where the others are cannot be known: it may be a "
        "file outside the workspace, so it is not read or edited; a copy of it can be"
    )
    edit = await run(ex, "edit_file", path="linked.txt", old="SECRET", new="x")
    assert edit.is_error
    assert "2 hard links" in edit.content
    assert (await run(ex, "grep", pattern="SECRET")).content == (
        "plain.txt:1: SECRET? no\n[1 matching line]\n"
        "[1 file(s) with more than one hard link not searched: "
        "their other links may be outside the workspace]"
    )
    single = await run(ex, "grep", pattern="SECRET", path="linked.txt")
    assert single.is_error
    assert SECRET not in single.content
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


async def test_fifos_sockets_and_devices_do_not_hang_the_tools(workspace: Path) -> None:
    os.mkfifo(workspace / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace / "sock"))
    (workspace / "zero").symlink_to("/dev/zero")
    try:
        os.mknod(workspace / "null", 0o600 | 0o020000, os.makedev(1, 3))  # S_IFCHR
        device = True
    except OSError:
        device = False
    (workspace / "a.txt").write_text("hello\n")
    ex = executor(workspace)

    async def bounded(name: str, **args: object) -> ToolResultMessage:
        try:
            return await asyncio.wait_for(run(ex, name, **args), 5)
        except TimeoutError:  # unblock the stuck thread, so that the test ends
            fd = os.open(workspace / "fifo", os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            raise

    start = time.monotonic()
    assert (await bounded("read_file", path="fifo")).content == (
        "'fifo' is a FIFO (named pipe), not a regular file; only regular files are read"
    )
    assert (await bounded("read_file", path="sock")).content == "'sock' is a socket, not a file"
    assert "resolves outside the workspace" in (await bounded("read_file", path="zero")).content
    if device:
        assert (await bounded("read_file", path="null")).content == (
            "'null' is a character device, which the file tools do not open"
        )
    assert (await bounded("grep", pattern="hello")).content == "a.txt:1: hello\n[1 matching line]"
    assert (await bounded("grep", pattern="x", path="fifo")).is_error
    assert (await bounded("find_files", pattern="*")).content == "a.txt\n[1 file]"
    listing = (await bounded("list_files")).content
    assert listing.split("\n") == sorted(["a.txt", "fifo", "sock", "zero", *(["null"] * device)])
    assert (await bounded("write_file", path="fifo", content="x")).content == (
        "'fifo' is a FIFO (named pipe); only regular files can be written"
    )
    assert time.monotonic() - start < 5
    server.close()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


TEXT = b"".join(b"line %d of the text before a hole\n" % i for i in range(1, 301))


async def test_a_huge_sparse_file_costs_bounded_memory(workspace: Path) -> None:
    huge = workspace / "huge.log"
    with huge.open("wb") as out:
        out.write(TEXT)
        out.truncate(2 << 30)  # 2 GiB, nearly all of it a hole of NUL bytes
    ex = executor(workspace)
    rss = _rss_mb()
    tracemalloc.start()
    try:
        read = await run(ex, "read_file", path="huge.log")
        found = await run(ex, "grep", pattern="^line 7 ")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = TEXT.decode()
    assert read.content == (
        f"{text}\n[binary data from byte {len(TEXT)} on (of 2147483648) not shown]"
    )
    assert found.content == (
        f"huge.log:7: line 7 of the text before a hole\n[1 matching line]\n"
        f"[huge.log: binary from byte {len(TEXT)} on, not searched]"
    )
    assert peak < 4 << 20, peak
    assert _rss_mb() - rss < 64


async def test_a_huge_text_file_is_read_in_bounded_memory_and_time(workspace: Path) -> None:
    big = workspace / "big.txt"
    block = b"x" * (1 << 20)
    with big.open("wb") as out:
        out.write(b"head\n")
        for _ in range(80):  # one line of 80 MiB, more than the 64 MiB read at most
            out.write(block)
    ex = executor(workspace)
    tracemalloc.start()
    start = time.monotonic()
    try:
        read = await run(ex, "read_file", path="big.txt")
        second = await run(ex, "read_file", path="big.txt", start_line=2)
        found = await run(ex, "grep", pattern="^x+$", path="big.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - start
    size = 5 + 80 * (1 << 20)
    read_at_most = 64 << 20
    cut = read_at_most - 5 - 20_000
    assert read.content == (
        f"head\n{'x' * 20_000} [... {cut} more bytes on this line]"
        f"\n[stopped reading after {read_at_most} of {size} bytes]"
    )
    assert second.content == read.content[5:]
    assert found.content == (
        f"big.txt:2: {'x' * 300}\n[1 matching line]\n"
        f"[big.txt: searched the first {read_at_most} of {size} bytes]"
    )
    assert peak < 8 << 20, peak
    assert elapsed < 20, elapsed


async def test_a_write_that_times_out_leaves_no_file_then_or_later(workspace: Path) -> None:
    slow_write = replace(write_file, timeout=0.001)
    ex = executor(workspace, [slow_write])
    result = await run(ex, "write_file", path="sub/big.txt", content="x" * (64 << 20))
    assert (result.content, result.is_error) == ("write_file timed out and was stopped", True)
    await threads_done()
    assert [files for _, _, files in os.walk(workspace)] in ([[]], [[], []])  # "sub" at most


async def test_a_cancelled_write_leaves_no_file(workspace: Path) -> None:
    ex = executor(workspace)
    task = asyncio.create_task(run(ex, "write_file", path="big.txt", content="x" * (64 << 20)))
    await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await threads_done()
    assert os.listdir(workspace) == []


async def test_a_user_sync_tool_that_ignores_its_timeout_may_still_be_running(
    workspace: Path,
) -> None:
    release = threading.Event()
    finished = threading.Event()

    @tool(timeout=0.1)
    def stubborn() -> str:
        """Wait, ignoring any timeout."""
        release.wait(10)
        finished.set()
        return "late"

    result = await run(executor(workspace, [stubborn]), "stubborn")
    assert (result.content, result.is_error) == (
        "stubborn timed out after 0.1 s and may still be running: it runs in a thread that "
        "cannot be stopped, so what it does from now on is unknown",
        True,
    )
    assert not finished.is_set()  # it was indeed still running
    release.set()
    await threads_done()
    assert finished.is_set()


async def test_a_tool_raising_timeout_error_itself_is_a_failure_not_a_timeout(
    workspace: Path,
) -> None:
    @tool
    def flaky() -> str:
        """Time out on its own."""
        raise TimeoutError("upstream took too long")

    result = await run(executor(workspace, [flaky]), "flaky")
    assert result.content == "flaky failed: TimeoutError: upstream took too long"


def test_errors_of_the_walk_are_plain(workspace: Path) -> None:
    """A missing middle folder and a file used as a folder get their own messages."""
    (workspace / "f.txt").write_text("x")
    ctx = ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r")
    with pytest.raises(ToolError, match=r"^'f.txt/x': f.txt is not a folder$"):
        read_file.fn(ctx, path="f.txt/x")
    missing = (
        r"^'nope/x' does not exist; list_files shows what is there, and write_file creates a file$"
    )
    with pytest.raises(ToolError, match=missing):
        read_file.fn(ctx, path="nope/x")
    with pytest.raises(ToolError, match=missing):  # a small model lists the file to create
        list_files.fn(ctx, path="nope/x")
    with pytest.raises(ToolError, match=missing):
        edit_file.fn(ctx, path="nope/x", old="a", new="b")
    assert os.listdir(workspace) == ["f.txt"]  # edit_file made no folders


def mixed_text() -> tuple[str, list[str]]:
    """About 1 MB of lines (so, several chunks) of every kind: empty, long, very long, with
    carriage returns and characters of several bytes; the last without a newline."""
    rng = random.Random(7)
    lines = []
    for _ in range(6000):
        r = rng.random()
        if r < 0.003:
            lines.append("L" * rng.randint(20_001, 300_000))
        elif r < 0.05:
            lines.append("é€" * rng.randint(0, 50) + "\r")
        else:
            lines.append("x" * rng.randint(0, 200))
    return "\n".join(lines), lines


async def test_pages_of_a_long_mixed_file_add_up_to_the_file(workspace: Path) -> None:
    text, lines = mixed_text()
    (workspace / "mixed.txt").write_text(text, encoding="utf-8", newline="")
    cut = " [... {} more bytes on this line]"
    shown = [
        line if len(line) <= 20_000 else line[:20_000] + cut.format(len(line) - 20_000)
        for line in lines
    ]
    expected = "\n".join(shown)
    ex = executor(workspace)
    pages, start = [], 1
    while True:
        content = (await run(ex, "read_file", path="mixed.txt", start_line=start)).content
        if content.endswith(end := "\n[6000 lines in all]"):  # the last page
            pages.append(content.removesuffix(end))
            break
        page, _, note = content.partition("\n\n[")
        assert note.startswith("6000 lines in all; read on with start_line="), note
        pages.append(page + "\n")
        start = int(note.rsplit("=", 1)[1].rstrip("]"))
    assert len(pages) > 10
    assert "".join(pages) == expected
    past = await run(ex, "read_file", path="mixed.txt", start_line=6001)
    assert past.content == "[mixed.txt has 6000 lines; start_line=6001 is past its end]"
    some = await run(ex, "read_file", path="mixed.txt", start_line=2990, end_line=3010)
    page = "\n".join(shown[2989:3010]) + "\n"
    assert some.content == page + "\n[more lines follow; read on with start_line=3011]"
    found = (await run(ex, "grep", pattern="^(é€)+$", path="mixed.txt")).content.split("\n")
    numbers = [i for i, line in enumerate(lines, 1) if line.startswith("é€")]
    assert [int(f.split(":")[1]) for f in found if not f.startswith("[")] == numbers[:200]


async def test_a_grep_that_times_out_stops_searching(workspace: Path) -> None:
    for d in range(20):
        (workspace / f"d{d}").mkdir()
        for f in range(100):
            (workspace / f"d{d}/f{f}.txt").write_text("nothing to see\n" * 200)
    ex = executor(workspace)
    start = time.perf_counter()
    assert (await run(ex, "grep", pattern="needle")).content == (
        "no matches for 'needle' (grep searches contents; find_files matches names)"
    )
    whole = time.perf_counter() - start
    quick = executor(workspace, [replace(grep, timeout=0.005)])
    result = await run(quick, "grep", pattern="needle")
    assert result.content == "grep timed out and was stopped"
    start = time.perf_counter()
    await threads_done()
    stopping = time.perf_counter() - start
    assert stopping < whole / 3, (stopping, whole)


async def test_edit_file_refuses_a_file_too_big_to_hold(workspace: Path) -> None:
    with (workspace / "big.txt").open("wb") as out:
        out.truncate(16 * 1024 * 1024 + 1)
    result = await run(executor(workspace), "edit_file", path="big.txt", old="a", new="b")
    assert result.content == (
        "'big.txt' has 16777217 bytes; edit_file edits files of at most 16777216 bytes"
    )


async def test_a_change_made_just_before_the_timeout_is_reported_as_made(workspace: Path) -> None:
    """A stoppable tool's commit holds off its abandonment, which then knows it happened."""
    from reins.tools._stop import current

    @tool(timeout=0.05)
    def commits_slowly() -> str:
        """Make a change that outlasts the timeout."""
        with current().commit():
            time.sleep(0.3)
            (workspace / "made.txt").write_text("made")
        return "ok"

    ex = executor(workspace, [replace(commits_slowly, stoppable=True)])
    result = await run(ex, "commits_slowly")
    assert result.content == (
        "commits_slowly timed out just after making its change, which stands; it was stopped"
    )
    assert (workspace / "made.txt").read_text() == "made"
