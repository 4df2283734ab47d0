"""Checkpoints: a workspace's snapshots in a shadow git repository (real git, real files) — what
a snapshot holds and leaves out, the changes and diff between two, what changed since one, and
a restore that gives back every byte, mode and symlink."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reins.checkpoints import Change, CheckpointError, Shadow

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def listing(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry under `root` (but .git and .reins): its kind (with the exec bit) and its
    content, or a symlink's target."""
    found: dict[str, tuple[str, bytes]] = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name not in (".git", ".reins")]
        for name in [*folders, *files]:
            path = Path(folder, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[key] = ("link", os.fsencode(os.readlink(path)))
            elif path.is_dir():
                found[key] = ("dir", b"")
            else:
                executable = path.stat().st_mode & stat.S_IXUSR
                found[key] = ("exec" if executable else "file", path.read_bytes())
    return found


def git(shadow: Shadow, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", f"--git-dir={shadow.path}", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def init(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)


def files_in(shadow: Shadow, commit: str) -> set[str]:
    return set(git(shadow, "ls-tree", "-r", "--name-only", "-z", commit).split("\0")) - {""}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


async def test_a_run_s_changes_are_listed_diffed_and_put_back_byte_for_byte(
    ws: Path, store: Path
) -> None:
    write(ws, {"keep.txt": "same\n", "edit.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n"})
    (ws / ".gitattributes").write_text("*.txt text eol=crlf\n")  # no conversion all the same
    write(ws, {"old/a.txt": "a\n", "old/deep/b.txt": "b\n", "run.sh": "echo hi\n"})
    (ws / "link").symlink_to("keep.txt")
    (ws / "image.bin").write_bytes(b"\0\1\2\xff")
    (ws / "file-then-folder").write_text("a file\n")
    write(ws, {"folder-then-file/x": "x\n"})
    before = listing(ws)
    shadow = Shadow(store, ws)
    first = await shadow.snapshot("run1")

    (ws / "new.txt").write_text("new\n")
    (ws / "edit.txt").write_text("one\nTWO\nthree\n")
    (ws / "gone.txt").unlink()
    (ws / "image.bin").write_bytes(b"\0\3")
    write(ws, {"made/x.txt": "x\n", "made/deep/y.txt": "y\n"})
    shutil.rmtree(ws / "old")
    (ws / "run.sh").chmod(0o755)
    (ws / "link").unlink()
    (ws / "link").symlink_to("edit.txt")
    (ws / "file-then-folder").unlink()
    write(ws, {"file-then-folder/inner": "in\n"})
    shutil.rmtree(ws / "folder-then-file")
    (ws / "folder-then-file").write_text("now a file\n")
    second = await shadow.snapshot("run1")

    changes = await shadow.changes(first, second)
    assert changes == [
        Change("edit.txt", "modified"),
        Change("file-then-folder", "deleted"),
        Change("file-then-folder/inner", "added"),
        Change("folder-then-file", "added"),
        Change("folder-then-file/x", "deleted"),
        Change("gone.txt", "deleted"),
        Change("image.bin", "modified"),
        Change("link", "modified"),
        Change("made/deep/y.txt", "added"),
        Change("made/x.txt", "added"),
        Change("new.txt", "added"),
        Change("old/a.txt", "deleted"),
        Change("old/deep/b.txt", "deleted"),
        Change("run.sh", "modified"),
    ]
    diff = await shadow.diff(first, second, ["edit.txt"])
    assert "-two\n+TWO\n" in diff
    assert "new.txt" not in diff
    assert "Binary files a/image.bin and b/image.bin differ" in await shadow.diff(first, second)

    await shadow.restore(first, [change.path for change in changes])
    assert listing(ws) == before
    assert not (ws / "made").exists()  # the folder the run made is gone
    assert (ws / "old" / "deep" / "b.txt").read_text() == "b\n"  # the one it deleted is back


async def test_a_run_s_checkpoints_chain_on_its_ref(ws: Path, store: Path) -> None:
    (ws / "a.txt").write_text("1\n")
    shadow = Shadow(store, ws)
    first = await shadow.snapshot("run-1", "step 1")
    (ws / "a.txt").write_text("2\n")
    second = await shadow.snapshot("run-1", "step 2")
    other = await shadow.snapshot("run-2")
    assert len(first) == len(second) == 40
    assert git(shadow, "rev-parse", f"{second}^").strip() == first
    assert git(shadow, "rev-parse", "refs/reins/run-1").strip() == second
    assert git(shadow, "log", "-1", "--format=%s", second).strip() == "step 2"
    assert git(shadow, "rev-list", "--count", other).strip() == "1"  # another run: a new chain
    assert shadow.path.parent == shadow.workspace.parent / "store" / "checkpoints"
    assert (shadow.path / "workspace").read_text() == f"{shadow.workspace}\n"
    assert Shadow(store, ws / ".").path == shadow.path  # one shadow per workspace


async def test_what_a_snapshot_leaves_out_restore_leaves_alone(ws: Path, tmp_path: Path) -> None:
    init(ws)
    (ws / ".git" / "info" / "exclude").write_text("secret.txt\n")
    write(ws, {".gitignore": "*.log\nbuild/\n", "app.py": "print()\n", "small.txt": "s\n"})
    write(ws, {"debug.log": "log\n", "build/out.bin": "out\n", "secret.txt": "pw\n"})
    (ws / "big.bin").write_bytes(b"\0" * 2000)
    write(ws, {"sub/.keep": "k\n"})
    init(ws / "sub")  # no commit in it
    shadow = Shadow(ws / ".reins", ws, max_file_bytes=1000)
    first = await shadow.snapshot("run")
    assert shadow.path.is_relative_to(ws)
    assert files_in(shadow, first) == {".gitignore", "app.py", "small.txt"}

    (ws / "small.txt").write_bytes(b"s" * 2000)  # grown over the limit: out of the snapshot
    (ws / "debug.log").write_text("more log\n")
    (ws / "late.bin").write_bytes(b"\1" * 2000)
    second = await shadow.snapshot("run")
    assert files_in(shadow, second) == {".gitignore", "app.py"}
    assert await shadow.changes(first, second) == [Change("small.txt", "deleted")]

    left = listing(ws)
    paths = ["debug.log", "build", "secret.txt", "big.bin", "late.bin", "sub"]
    await shadow.restore(first, paths)
    assert listing(ws) == left
    assert (ws / "sub" / ".git").is_dir()
    await shadow.restore(first, ["small.txt"])  # the commit holds it: written back
    assert (ws / "small.txt").read_text() == "s\n"


async def test_modified_since_lists_what_differs_and_disturbs_nothing(
    ws: Path, tmp_path: Path
) -> None:
    write(ws, {"a.txt": "a\n", "b.txt": "b\n", "e.txt": "e\n", "dir/f.txt": "f\n"})
    shadow = Shadow(tmp_path / "store", ws)
    base = await shadow.snapshot("run")
    (ws / "a.txt").write_text("changed\n")
    (ws / "c.txt").write_text("new\n")
    (ws / "e.txt").unlink()
    (ws / "dir" / "f.txt").write_text("changed\n")
    ref = (shadow.path / "refs" / "reins" / "run").read_text()

    asked = ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "dir"]
    assert await shadow.modified_since(base, asked) == ["a.txt", "c.txt", "e.txt", "dir"]
    assert await shadow.modified_since(base, ["b.txt", "d.txt"]) == []
    assert (shadow.path / "refs" / "reins" / "run").read_text() == ref
    after = await shadow.snapshot("run")
    fresh = await Shadow(tmp_path / "other-store", ws).snapshot("run")
    assert git(shadow, "rev-parse", f"{after}^{{tree}}") == git(
        Shadow(tmp_path / "other-store", ws), "rev-parse", f"{fresh}^{{tree}}"
    )
    assert files_in(shadow, after) == {"a.txt", "b.txt", "c.txt", "dir/f.txt"}


async def test_odd_file_names_are_just_files(ws: Path, store: Path) -> None:
    names = ["with space.txt", "*", ":colon", "-dash", "ünïcødé.txt", "[ab].txt", "a"]
    write(ws, {name: f"{name}\n" for name in names})
    shadow = Shadow(store, ws)
    first = await shadow.snapshot("run")
    assert files_in(shadow, first) == set(names)
    for name in names:
        (ws / name).write_text("changed\n")
    second = await shadow.snapshot("run")
    assert {change.path for change in await shadow.changes(first, second)} == set(names)
    diff = await shadow.diff(first, second, ["*"])
    assert diff.count("diff --git") == 1

    await shadow.restore(first, ["*", ":colon"])  # those two, and no other
    assert (ws / "*").read_text() == "*\n"
    assert (ws / ":colon").read_text() == ":colon\n"
    assert (ws / "a").read_text() == "changed\n"
    assert await shadow.modified_since(first, ["*", "[ab].txt", "ünïcødé.txt"]) == [
        "[ab].txt",
        "ünïcødé.txt",
    ]


async def test_restore_never_writes_or_deletes_through_a_symlink(
    ws: Path, store: Path, tmp_path: Path
) -> None:
    write(ws, {"d/f.txt": "f\n"})
    shadow = Shadow(store, ws)
    first = await shadow.snapshot("run")
    outside = tmp_path / "outside"
    write(outside, {"f.txt": "precious\n", "g.txt": "precious\n"})
    shutil.rmtree(ws / "d")
    (ws / "d").symlink_to(outside)
    await shadow.snapshot("run")
    await shadow.restore(first, ["d", "d/g.txt"])
    assert listing(outside) == {"f.txt": ("file", b"precious\n"), "g.txt": ("file", b"precious\n")}
    assert listing(ws) == {"d": ("dir", b""), "d/f.txt": ("file", b"f\n")}


async def test_two_snapshots_at_once_both_hold_the_whole_tree(ws: Path, store: Path) -> None:
    write(ws, {f"p{n}/f{m}.txt": f"{n} {m}\n" for n in range(10) for m in range(30)})
    expected = {f"p{n}/f{m}.txt" for n in range(10) for m in range(30)}
    script = (
        "import asyncio, sys\nfrom reins.checkpoints import Shadow\n"
        "async def main():\n"
        "    for n in range(5):\n"
        "        print(await Shadow(sys.argv[1], sys.argv[2]).snapshot(f'proc-{n}'))\n"
        "asyncio.run(main())\n"
    )
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, str(store), str(ws), stdout=asyncio.subprocess.PIPE
    )
    here = [Shadow(store, ws).snapshot(f"task-{n}") for n in range(6)]
    commits = await asyncio.gather(*here)
    out, _ = await other.communicate()
    assert other.returncode == 0
    commits += out.decode().split()
    shadow = Shadow(store, ws)
    assert len(commits) == 11
    for commit in commits:
        assert files_in(shadow, commit) == expected
    git(shadow, "fsck", "--strict", "--no-dangling")


async def test_errors_say_what_failed(
    ws: Path, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        Shadow(store, tmp_path / "nowhere")
    shadow = Shadow(store, ws)
    with pytest.raises(CheckpointError, match="cannot name a checkpoint"):
        await shadow.snapshot("../escape")
    with pytest.raises(CheckpointError, match=r"no checkpoints of .* yet"):
        await shadow.changes("abcd", "abcd")
    (ws / "a.txt").write_text("a\n")
    commit = await shadow.snapshot("run")
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        await shadow.diff("--output=/tmp/x", commit)
    with pytest.raises(CheckpointError, match="not a path inside the workspace"):
        await shadow.restore(commit, ["../outside"])
    with pytest.raises(CheckpointError, match=r"git diff-tree failed .*: fatal: .*ffff"):
        await shadow.changes(commit, "ffff" * 10)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(CheckpointError, match=r"^git is not installed: checkpoints need git"):
        await shadow.snapshot("run")
