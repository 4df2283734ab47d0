"""What a checkpoint costs on a 10,000-file workspace: the harness snapshots the workspace before a
step's first change on every step that writes, so an incremental snapshot must be cheap in time
and in disk.

The workspace: 100 folders of 100 text files (1-4 KB each), a .gitignore and a few ignored build
files; the store lies beside it. Printed: the first snapshot; the median of incremental
snapshots, each after changing one file, and of snapshots with nothing changed; the shadow
repository's size after the first snapshot and what each incremental snapshot adds to it (disk
usage, as du counts it, and the bytes of the files); `modified_since` of 10 paths and `restore`
of 10 files.

    python benchmarks/checkpoints.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from reins.checkpoints import Shadow

FOLDERS, FILES = 100, 100
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "writes", "code"]


def build(workspace: Path, rng: random.Random) -> list[str]:
    paths = []
    for folder in range(FOLDERS):
        (workspace / f"pkg{folder:03}").mkdir(parents=True)
        for file in range(FILES):
            path = f"pkg{folder:03}/mod{file:03}.py"
            size = rng.randint(1024, 4096)
            text = " ".join(rng.choice(WORDS) for _ in range(size // 4))[:size]
            (workspace / path).write_text(text + "\n")
            paths.append(path)
    (workspace / ".gitignore").write_text("build/\n*.o\n")
    (workspace / "build").mkdir()
    for n in range(5):
        (workspace / "build" / f"out{n}.bin").write_bytes(os.urandom(100_000))
        (workspace / f"pkg000/obj{n}.o").write_bytes(os.urandom(10_000))
    return paths


def disk(folder: Path) -> tuple[int, int]:
    """Disk usage (blocks, as du) and the bytes of the files under `folder`."""
    used = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            used += info.st_blocks * 512
            size += info.st_size
    return used, size


async def timed(call: Awaitable[object]) -> float:
    start = time.perf_counter()
    await call
    return time.perf_counter() - start


async def measure(runs: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        paths = build(workspace, rng)
        shadow = Shadow(Path(folder) / "store", workspace)
        first = await timed(shadow.snapshot("bench"))
        first_disk = disk(shadow.path)
        incremental, added_disk, added_bytes = [], [], []
        for n in range(runs):
            with (workspace / rng.choice(paths)).open("a") as changed:
                changed.write(f"edit {n}\n")
            before = disk(shadow.path)
            incremental.append(await timed(shadow.snapshot("bench")))
            after = disk(shadow.path)
            added_disk.append(after[0] - before[0])
            added_bytes.append(after[1] - before[1])
        unchanged = [await timed(shadow.snapshot("bench")) for _ in range(runs)]
        base = await shadow.snapshot("bench")
        ten = rng.sample(paths, 10)
        for path in ten:
            (workspace / path).write_text("rewritten\n")
        since = [await timed(shadow.modified_since(base, ten)) for _ in range(runs)]
        restores = []
        for _ in range(runs):
            for path in ten:
                (workspace / path).write_text("rewritten\n")
            restores.append(await timed(shadow.restore(base, ten)))
    ms = 1000
    rows = [
        ("first snapshot", f"{first:.2f} s"),
        ("incremental snapshot, one file changed", f"{statistics.median(incremental) * ms:.1f} ms"),
        ("snapshot, nothing changed", f"{statistics.median(unchanged) * ms:.1f} ms"),
        ("shadow after the first snapshot", f"{first_disk[0] / 2**20:.1f} MB on disk "
         f"({first_disk[1] / 2**20:.1f} MB of files)"),
        ("added per incremental snapshot", f"{statistics.median(added_disk) / 1024:.0f} KB on "
         f"disk ({statistics.median(added_bytes) / 1024:.1f} KB of files)"),
        ("modified_since, 10 paths", f"{statistics.median(since) * ms:.1f} ms"),
        ("restore, 10 files", f"{statistics.median(restores) * ms:.1f} ms"),
    ]  # fmt: skip
    print(f"checkpoints of {FOLDERS * FILES} files, medians of {runs} runs\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each (default 20)")
    asyncio.run(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
