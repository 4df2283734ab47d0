"""What every overhead driver prints: one JSON line on stdout (read by run.py), a median on
stderr (for a person)."""

from __future__ import annotations

import json
import statistics
import sys
from importlib.metadata import version


def report(name: str, package: str, import_s: float, samples: list[float], note: str) -> None:
    record = {
        "name": name,
        "version": version(package),
        "import_s": import_s,
        "us_per_round": samples,
        "note": note,
    }
    print(json.dumps(record))
    print(f"{name} median {statistics.median(samples):.0f} us/round", file=sys.stderr)
