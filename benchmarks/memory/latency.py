"""What recall costs at 10,000 facts: the "What you remember" section's query (the facts
matching the goal, then the newest) and a `memory_search`, on real SQLite with FTS5. Goal
(issue 32): ≤ 5 ms a recall. Also what a capture writes: an add, and an update (the old fact
closed, the new one added, in one transaction). With recall by meaning, the nearest facts
by cosine similarity to a query's vector (`--dims`: 768 is nomic-embed-text's, 1536 OpenAI's
text-embedding-3-small), every fact embedded (random unit vectors: the cost does not depend on
what they mean). Medians of `--runs` calls.

    python benchmarks/memory/latency.py [--facts 10000] [--runs 200] [--dims 768]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from reins.memory import Memories
from reins.memory._recall import by_words

WORDS = [
    "python",
    "tabs",
    "spaces",
    "pytest",
    "deploy",
    "staging",
    "production",
    "database",
    "port",
    "editor",
    "vim",
    "emacs",
    "branch",
    "release",
    "docker",
    "kubernetes",
    "postgres",
    "redis",
    "api",
    "url",
    "timezone",
    "name",
    "language",
    "coffee",
    "lint",
    "ruff",
    "black",
    "mypy",
    "make",
    "uv",
    "poetry",
    "npm",
    "yarn",
    "commit",
    "style",
    "review",
    "ci",
    "github",
    "gitlab",
]


def timed(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--dims", type=int, default=768)
    args = parser.parse_args()
    rng = random.Random(32)
    with tempfile.TemporaryDirectory(prefix="reins-memory-") as folder:
        root = Path(folder)
        memories = Memories(root / "memory.db", root / "user.db")
        owners = [f"/src/project{n}" for n in range(20)]
        start = time.perf_counter()
        for n in range(args.facts):
            text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" fact {n}."
            if n % 10 == 0:
                memories.add(text, scope="user", owner="")
            else:
                memories.add(text, scope="project", owner=rng.choice(owners))
        filled = time.perf_counter() - start
        scopes = [("user", ""), ("project", owners[0]), ("session", "s-now")]
        goals = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(args.runs)]
        it = iter(goals * 2)
        section = timed(lambda: by_words(memories, next(it), scopes), args.runs)
        search = timed(lambda: memories.search(next(it), scopes=scopes, limit=10), args.runs)
        facts = memories.current(scopes=scopes, limit=None)
        picks = iter(rng.sample(facts, k=args.runs))
        add = timed(
            lambda: memories.add("The user likes tea.", scope="project", owner=owners[0]),
            args.runs,
        )
        update = timed(lambda: memories.replace(next(picks), "A newer version."), args.runs)
        vectors = np.random.default_rng(32).standard_normal((args.facts * 2, args.dims))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        every = [("user", ""), *(("project", o) for o in owners)]
        missing = memories.unembedded("bench", scopes=every, limit=args.facts * 2)
        rows = [(i, v.tobytes()) for (i, _), v in zip(missing, vectors, strict=False)]
        memories.put_vectors("bench", rows)
        queries = iter(vectors[: args.runs])
        nearest = timed(
            lambda: memories.nearest(next(queries).tobytes(), "bench", scopes=scopes, limit=12),
            args.runs,
        )
        read = len(memories.current(scopes=scopes))
    print(f"{args.facts} facts ({filled:.1f} s to add them), medians of {args.runs}:")
    print(f"  recall for a prompt (matching, then newest): {section:.2f} ms (goal ≤ 5 ms)")
    print(f"  memory_search, 10 results:                   {search:.2f} ms")
    print(f"  add a fact:                                  {add:.2f} ms")
    print(f"  update a fact (close + add):                 {update:.2f} ms")
    print(f"  nearest 12 by meaning ({read} facts read, {args.dims} dims): {nearest:.2f} ms")


if __name__ == "__main__":
    main()
