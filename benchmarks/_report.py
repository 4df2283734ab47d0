"""What every overhead driver shares: taking turns with the other drivers (`turn`), and one JSON
line on stdout at the end (read by run.py), a median on stderr (for a person)."""

from __future__ import annotations

import json
import os
import statistics
import sys
from importlib.metadata import version

TURN_RUNS = 10
"""Runs a driver makes per turn when run.py interleaves the drivers (REINS_BENCH_TURNS=1)."""
_TAKING_TURNS = os.environ.get("REINS_BENCH_TURNS") == "1"


def turn(index: int) -> None:
    """Before run `index`: every TURN_RUNS runs, hand over to the next driver and wait to be
    told to go on. These machines drift in speed over seconds; harnesses measured in turns of
    a few runs meet the same drift, and each still runs all its runs in one process."""
    if not _TAKING_TURNS or index % TURN_RUNS:
        return
    if index:
        print("turn", flush=True)
    sys.stdin.readline()


def report(name: str, package: str, import_s: float, samples: list[float], note: str) -> None:
    record = {
        "name": name,
        "version": version(package),
        "import_s": import_s,
        "us_per_round": samples,
        "note": note,
    }
    print(json.dumps(record), flush=True)
    print(f"{name} median {statistics.median(samples):.0f} us/round", file=sys.stderr)
