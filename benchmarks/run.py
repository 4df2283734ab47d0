"""`make bench`: per-round harness overhead of reins beside peer harnesses, in one invocation.

Each harness runs in its own process (benchmarks/*_driver.py, benchmarks/peers/*_driver.py) on the
same workload: a zero-latency scripted model, a no-op tool, 10 rounds a run (9 tool calls, then
a final answer). The drivers start together and take turns of a few runs each (`_report.turn`), so
the machine's drift in speed meets every harness alike. Reported: median µs per round and its
ratio to reins; import times and the wall time of `reins --help`. Medians throughout: these
machines are noisy.

The per-round time with the log on tmpfs, beside the floor, is a guard rail: every change
reports both, as shares of the fastest peer's round, and none may add more than 10 % to the
tmpfs row (a default-on feature that costs more than 5 µs a round says what it buys).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
DRIVERS = [
    ("reins", [HERE / "reins_driver.py"]),
    ("reins (read-only tool)", [HERE / "reins_driver.py", "--read-only"]),
    # The same log on tmpfs: what is the harness, and what is this machine's disk.
    ("reins, log on /dev/shm", [HERE / "reins_driver.py", "--dir", "/dev/shm"]),
    # The part of a round no loop can cut: its four events validated, serialized, signed, journaled.
    ("reins' events alone (the floor)", [HERE / "floor_driver.py", "--dir", "/dev/shm"]),
    ("pydantic-ai", [HERE / "peers" / "pydantic_ai_driver.py"]),
    ("smolagents", [HERE / "peers" / "smolagents_driver.py"]),
    ("openai-agents", [HERE / "peers" / "openai_agents_driver.py"]),
    ("mini-swe-agent", [HERE / "peers" / "mini_swe_agent_driver.py"]),
]
IMPORTS = {
    "reins": "reins",
    "reins, the API loaded": "reins; from reins import Agent, SQLiteLog",
    "pydantic-ai": "pydantic_ai",
    "smolagents": "smolagents",
    "openai-agents": "agents",
    "mini-swe-agent": "minisweagent",
}
RAIL = 1.10
GOAL_STARTUP_S = 0.3
TURN_TIMEOUT_S = 600


class Driver:
    """A driver process taking its turns: it waits on stdin, runs a turn, says `turn` on
    stdout; at the end it prints its JSON record instead."""

    def __init__(self, name: str, argv: list[str | Path], runs: int) -> None:
        self.name = name
        # Its stderr, read if it fails; closed with the process (the bench is one short run).
        self.errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, *map(str, argv), "--runs", str(runs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            env={**os.environ, "REINS_BENCH_TURNS": "1"},
        )
        self.result: dict[str, object] | None = None
        self.done = False

    def take_turn(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            self.process.stdin.write("go\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it has ended: its exit is read below
        # One line at most is pending (the driver waits for `go` after each), so a select
        # on the pipe sees it: a driver that hangs is stopped, not waited for.
        ready, _, _ = select.select([self.process.stdout], [], [], TURN_TIMEOUT_S)
        line = self.process.stdout.readline().strip() if ready else ""
        if line == "turn":
            return
        self.done = True
        record = line.startswith("{")
        if not ready or (line and not record):  # it hangs, or it broke the protocol
            self.process.kill()
        if self.process.wait() == 0 and record:
            self.result = json.loads(line)
        else:
            self.errors.seek(0)
            last = self.errors.read().strip().splitlines()[-1:]
            why = f"no turn in {TURN_TIMEOUT_S} s" if not ready else (last or repr(line))
            print(f"  {self.name}: failed ({why})", file=sys.stderr)


def run_drivers(drivers: list[tuple[str, list[str | Path]]], runs: int) -> list[Driver]:
    """All drivers at once, taking turns until each has made its runs."""
    started = [Driver(name, argv, runs) for name, argv in drivers]
    while going := [d for d in started if not d.done]:
        for driver in going:
            driver.take_turn()
    return started


def wall_times(argv: list[str], repeat: int) -> float:
    """Median wall time of a fresh process running argv."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def import_time(module: str, repeat: int) -> float:
    """Median time to import `module` in a fresh interpreter (interpreter start excluded)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    quiet = {
        **os.environ,
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": tempfile.mkdtemp(),
    }
    samples = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=quiet
        )
        if done.returncode != 0:
            return float("nan")
        samples.append(float(done.stdout.split()[-1]))
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200, help="runs per harness")
    parser.add_argument("--repeat", type=int, default=7, help="samples for start-up times")
    args = parser.parse_args()

    drivers = [(n, a) for n, a in DRIVERS if "/dev/shm" not in a or Path("/dev/shm").is_dir()]
    print(f"running {len(drivers)} harnesses in turns ...", file=sys.stderr)
    rows = []
    for driver in run_drivers(drivers, args.runs):
        if driver.result is not None:
            result = driver.result
            samples = sorted(result["us_per_round"])  # type: ignore[call-overload]
            q1, median, q3 = statistics.quantiles(samples, n=4)
            rows.append((driver.name, str(result["version"]), median, q1, q3, str(result["note"])))

    reins_median = next(r[2] for r in rows if r[0] == "reins")
    print(f"\nPer-round overhead, {args.runs} runs x 10 rounds, median (interquartile range)\n")
    print("| harness | version | µs/round | IQR | × reins |")
    print("|---|---|---:|---:|---:|")
    for name, version, median, q1, q3, _ in rows:
        ratio = median / reins_median
        print(f"| {name} | {version} | {median:.0f} | {q1:.0f}–{q3:.0f} | {ratio:.2f} |")
    peers = [r for r in rows if not r[0].startswith("reins")]
    if peers:
        fastest = min(peers, key=lambda r: r[2])
        # The guard rail is read where the harness's own work shows: the log on tmpfs, beside
        # the floor (what its events alone cost).
        for row in rows:
            if row[0].startswith("reins") and ("/dev/shm" in row[0] or "floor" in row[0]):
                print(
                    f"\n{row[0]} = {row[2] / fastest[2]:.3f} × the fastest peer "
                    f"({fastest[0]}, {fastest[2]:.0f} µs)"
                )
        print(
            f"\nA guard rail, not a target: a change may not make the tmpfs row more than "
            f"{RAIL:.2f} × what it was (compare in one invocation, paired)."
        )
    print("\nNotes:")
    for name, _, _, _, _, note in rows:
        print(f"- {name}: {note}")

    print(f"\nStart-up, median of {args.repeat} fresh processes\n")
    print("| what | seconds |")
    print("|---|---:|")
    startup = {}
    for name, module in IMPORTS.items():
        startup[name] = import_time(module, args.repeat)
        print(f"| `import {module}` ({name}) | {startup[name]:.3f} |")
    help_s = wall_times([str(BIN / "reins"), "--help"], args.repeat)
    python_s = wall_times([sys.executable, "-c", "pass"], args.repeat)
    print(f"| `reins --help`, wall | {help_s:.3f} |")
    print(f"| `python -c pass`, wall (for scale) | {python_s:.3f} |")
    ok = max(startup["reins"], startup["reins, the API loaded"], help_s) <= GOAL_STARTUP_S
    print(f"\nimport reins and reins --help ≤ {GOAL_STARTUP_S} s: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
