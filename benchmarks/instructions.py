"""CPU instructions per round of reins beside the fastest peer, counted by valgrind (callgrind).

The same drivers and workload as `run.py`, but counted, not timed: an instruction count does not
move with the machine's speed, so a change of a few percent shows (timed, these machines drift by
more than that within a minute). Each driver is counted at two run counts; the difference divided
by the runs between them is what one run costs, start-up and warm-up cancelled out. Instructions
are not time (a cache miss or a system call costs more than its instructions): `run.py` gives the
figures the goal is read on.

python benchmarks/instructions.py [--all]   (needs valgrind: apt-get install valgrind)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUNDS = 10
FEW, MANY = 10, 110
DRIVERS = [
    ("reins, log on /dev/shm", [HERE / "reins_driver.py", "--dir", "/dev/shm"]),
    ("smolagents", [HERE / "peers" / "smolagents_driver.py"]),
    # What the event log alone costs a round: the part of reins' figure the loop cannot cut.
    ("reins' events alone (the floor)", [HERE / "floor_driver.py", "--dir", "/dev/shm"]),
]
OTHERS = [
    ("pydantic-ai", [HERE / "peers" / "pydantic_ai_driver.py"]),
    ("openai-agents", [HERE / "peers" / "openai_agents_driver.py"]),
]


def instructions(argv: list[str | Path], runs: int) -> int:
    """Instructions valgrind counted for a whole driver process making `runs` runs."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            *map(str, argv),
            "--runs",
            str(runs),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every time
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(done.stderr.strip().splitlines()[-1:])
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--all", action="store_true", help="the slower peers too (minutes each)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind); skipped")
        return
    rows = []
    for name, argv in DRIVERS + (OTHERS if args.all else []):
        print(f"counting {name} ...", file=sys.stderr)
        try:
            per_run = (instructions(argv, MANY) - instructions(argv, FEW)) / (MANY - FEW)
        except RuntimeError as exc:
            print(f"  {name}: failed {exc}", file=sys.stderr)
            continue
        rows.append((name, per_run / ROUNDS))
    if not rows or not rows[0][0].startswith("reins"):
        sys.exit("instructions: reins could not be counted")
    reins = rows[0][1]
    print(f"\nInstructions per round (runs {FEW + 1}–{MANY} of each driver, {ROUNDS} rounds a run)")
    print()
    print("| harness | instructions/round | × reins |")
    print("|---|---:|---:|")
    for name, per_round in rows:
        print(f"| {name} | {per_round:,.0f} | {per_round / reins:.2f} |")


if __name__ == "__main__":
    main()
