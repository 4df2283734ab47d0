"""`make bench`: what the command sandbox costs per command, side by side in one run.

Each way runs `/bin/sh -c true` N times, interleaved (one of each per round, so a noisy
neighbour hits all alike): plain `subprocess.run`; bare bubblewrap (`--ro-bind / /`, new PID
and network namespaces); reins' `run_process` unconfined (danger-full-access: its own cost
without a sandbox); reins' `run_process` sandboxed (the default policy: bwrap, seccomp,
rlimits, a pids cgroup when root); and the `run_command` tool through the executor. Printed:
a markdown table of medians, and what each adds to plain.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from reins import ToolCall, ToolContext, Workspace
from reins.sandbox import SandboxPolicy, run_process
from reins.tools import ToolExecutor, run_command

COMMAND = "true"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="runs of each (default 200)")
    n = parser.parse_args().n
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        sys.exit("bubblewrap is not installed (apt-get install bubblewrap)")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        executor = ToolExecutor(
            [run_command],
            context=ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r"),
        )
        call = ToolCall(id="c", name="run_command", arguments={"command": COMMAND})
        unconfined = SandboxPolicy(mode="danger-full-access")

        def plain() -> None:
            subprocess.run(["/bin/sh", "-c", COMMAND], cwd=workspace, check=True)

        bare = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        bare += ["--unshare-pid", "--unshare-net", "--die-with-parent", "--"]

        def bare_bwrap() -> None:
            subprocess.run([*bare, "/bin/sh", "-c", COMMAND], cwd=workspace, check=True)

        async def reins_unconfined() -> None:
            await run_process(COMMAND, workspace=workspace, policy=unconfined)

        async def reins_sandboxed() -> None:
            await run_process(COMMAND, workspace=workspace)

        async def tool() -> None:
            result = await executor.execute(call)
            assert not result.is_error, result.content

        ways: dict[str, Callable[[], Awaitable[None] | None]] = {
            "plain `subprocess.run`": plain,
            "bare `bwrap` (no seccomp, no limits)": bare_bwrap,
            "reins `run_process`, danger-full-access": reins_unconfined,
            "reins `run_process`, sandboxed (default)": reins_sandboxed,
            "reins `run_command` tool, sandboxed": tool,
        }
        for way in ways.values():  # warm up: the seccomp program, the probe, the cgroup folder
            await _call(way)
        samples: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(n):
            for name, way in ways.items():
                start = time.perf_counter()
                await _call(way)
                samples[name].append((time.perf_counter() - start) * 1000)
    base = statistics.median(samples["plain `subprocess.run`"])
    cores, uid = os.cpu_count(), os.geteuid()
    print(f"\n{n} runs of each, `/bin/sh -c {COMMAND}`, {cores} cores, uid {uid}\n")
    print("| way | median ms | min ms | p90 ms | added ms (median) |")
    print("|---|---:|---:|---:|---:|")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"| {name} | {median:.2f} | {min(values):.2f} | {p90:.2f} | {median - base:+.2f} |")


async def _call(way: Callable[[], Awaitable[None] | None]) -> None:
    pending = way()
    if pending is not None:
        await pending


if __name__ == "__main__":
    asyncio.run(main())
