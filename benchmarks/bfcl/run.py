"""BFCL accuracy and seconds per case of reins and peer harnesses on embedded models.

Categories `simple_python` and `multiple`, scored by BFCL's AST checker. Configurations, all in
one invocation: reins' embedded models (`--models`: the default, Qwen2.5-Coder-1.5B, beside
SmolLM2-135M; strict JSON actions, grammar-constrained, then not), then llama-cpp-python's
OpenAI-compatible server on SmolLM2 (started and stopped here) behind reins' OpenAI provider,
pydantic-ai and openai-agents. A harness error on a case counts as a wrong answer and in the
errors column; the run goes on.

python benchmarks/bfcl/run.py [--limit N] [--models NAME,...] [--only CONFIG,...]
                              [--details FILE.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from cases import CATEGORIES, Case, load, score, without_java_and_js_parsers
from harnesses import (
    SERVED_MODEL,
    Harness,
    OpenAIAgents,
    PydanticAI,
    ReinsLocal,
    ReinsServer,
    Reply,
)
from served import LlamaServer

from reins.models._embedded import DEFAULT_EMBEDDED

CASE_TIMEOUT_S = 60.0
"""A reply that takes longer is a runaway (see served.py): an error, and the server restarts."""
SERVED: list[type[ReinsServer | PydanticAI | OpenAIAgents]] = [
    ReinsServer,
    PydanticAI,
    OpenAIAgents,
]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    config: str
    case: str
    category: str
    correct: bool
    seconds: float
    error: str | None = None
    reply: Reply | None = None


async def attempt(harness: Harness, case: Case) -> Outcome:
    start = time.perf_counter()
    reply: Reply | None = None
    error: str | None = None
    correct = False
    try:
        reply = await asyncio.wait_for(harness.reply(case), CASE_TIMEOUT_S)
        correct = score(case, reply.calls)
    except TimeoutError:
        error = f"timed out after {CASE_TIMEOUT_S:.0f} s"
    except Exception as exc:  # a harness failure is a wrong answer, never the end of the run
        error = f"{type(exc).__name__}: {exc}"[:300]
    return Outcome(
        config=harness.name,
        case=case.id,
        category=case.category,
        correct=correct,
        seconds=time.perf_counter() - start,
        error=error,
        reply=reply,
    )


async def run_all(
    harnesses: list[Harness], cases: list[Case], server: LlamaServer | None = None
) -> list[Outcome]:
    """Every case through every harness, the harnesses in turns (rotated per case), so that a
    busy spell of this shared machine slows them all alike rather than one phase of the run.
    After a timed-out request the server restarts, so the next harness does not wait for it."""

    async def turn(harness: Harness, case: Case) -> Outcome:
        outcome = await attempt(harness, case)
        timed_out = outcome.error is not None and outcome.error.startswith("timed out")
        if timed_out and server is not None and not isinstance(harness, ReinsLocal):
            server.restart()
        return outcome

    for harness in harnesses:
        await turn(harness, cases[0])  # warm-up: model load, lazy imports, first connection
    outcomes: list[Outcome] = []
    for index, case in enumerate(cases):
        shift = index % len(harnesses)
        for harness in harnesses[shift:] + harnesses[:shift]:
            outcomes.append(await turn(harness, case))
        if (index + 1) % 10 == 0:
            print(f"  {index + 1}/{len(cases)} cases", file=sys.stderr)
    for harness in harnesses:
        await harness.aclose()
    return outcomes


def row(config: str, category: str, outcomes: list[Outcome]) -> list[str]:
    n = len(outcomes)
    replies = [o.reply for o in outcomes if o.reply is not None]
    valid = sum(bool(r.calls) and all(c.arguments is not None for c in r.calls) for r in replies)
    rates = [r.decode_tps for r in replies if r.decode_tps is not None]
    return [
        config,
        category,
        str(n),
        f"{100 * sum(o.correct for o in outcomes) / n:.1f}",
        str(sum(o.error is not None for o in outcomes)),
        f"{statistics.median(o.seconds for o in outcomes):.2f}",
        f"{100 * valid / n:.1f}",
        f"{statistics.median(rates):.1f}" if rates else "—",
    ]


HEADER = [
    "harness / config",
    "category",
    "cases",
    "accuracy %",
    "errors",
    "s/case (median)",
    "valid action %",
    "decode tok/s (median)",
]


def table(outcomes: list[Outcome]) -> str:
    configs = list(dict.fromkeys(o.config for o in outcomes))
    rows = [
        row(config, category, group)
        for config in configs
        for category in CATEGORIES
        if (group := [o for o in outcomes if o.config == config and o.category == category])
    ]
    lines = [HEADER, ["---"] * len(HEADER), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def errors(outcomes: list[Outcome]) -> str:
    """A few distinct error messages per config, to say how a harness fails."""
    seen: dict[str, list[str]] = {}
    for o in outcomes:
        if o.error is not None and o.error not in (shown := seen.setdefault(o.config, [])):
            shown.append(o.error)
    return "\n".join(
        f"- {config} ({len(messages)} distinct): " + " | ".join(m[:160] for m in messages[:3])
        for config, messages in seen.items()
        if messages
    )


async def main_async(args: argparse.Namespace) -> list[Outcome]:
    without_java_and_js_parsers()  # before bfcl_eval is imported: see cases.py
    from bfcl_eval.eval_checker.ast_eval import ast_checker  # noqa: F401  (6 s import, untimed)

    from reins.models._embedded import embedded_gguf

    cases = [case for category in CATEGORIES for case in load(category, args.limit)]
    wanted = set(args.only.split(",")) if args.only else None
    local = [
        ReinsLocal(embedded=name, constrained=constrained)
        for name in args.models.split(",")
        for constrained in (True, False)
    ]
    local = [harness for harness in local if wanted is None or harness.name in wanted]
    served = [make for make in SERVED if wanted is None or make.name in wanted]
    if not served:
        return await run_all(local, cases)
    with LlamaServer(embedded_gguf(SERVED_MODEL)) as server:
        peers = [make(server.base_url) for make in served]
        return await run_all([*local, *peers], cases, server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=25, help="cases per category; 0 = all")
    parser.add_argument(
        "--models",
        default=f"{DEFAULT_EMBEDDED},smollm2",
        help="the embedded models reins runs, by name (default: the default, then smollm2)",
    )
    parser.add_argument(
        "--only", help="comma-separated config names, e.g. 'reins local:smollm2,pydantic-ai'"
    )
    parser.add_argument("--details", help="write one JSON line per case to this file")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"BFCL, {args.limit or 'all'} cases per category:", file=sys.stderr)
    outcomes = asyncio.run(main_async(args))
    if args.details:
        with open(args.details, "w") as out:
            for o in outcomes:
                out.write(json.dumps(asdict(o), default=str) + "\n")
    print(table(outcomes))
    if failures := errors(outcomes):
        print(f"\nErrors:\n{failures}")
    print(f"\nTotal {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
