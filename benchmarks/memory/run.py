"""The recall suite: does a later session know what earlier ones were told?

Each scenario of `scenarios.yaml` is a few earlier sessions (user turns, each answered
"Noted." by a scripted assistant, in project folder a or b, on a day of a timeline), then a
question in a later session answered by the default embedded model (Qwen2.5-Coder 1.5B),
whose answer is scored (`expect`: any of these; `forbid`: none of these; for another
project's fact and for a secret, only that it does not come out, and a secret must not be in
the memory's files either). Configurations:

- `off`: no memory (the baseline: what the model guesses);
- `scripted`: captures by an oracle extractor that proposes exactly the scenario's facts (the
  harness still judges them: evidence, secrets, duplicates), so the score is the harness's
  storage, reconciliation, scoping and recall;
- `model`: captures by the default model itself, grammar-constrained;
- `mem0`: mem0 (`mem0ai`) with its LLM and embedder on a local llama.cpp server of the same
  model; what it returns for the question is put in the prompt as "What you remember", where
  it runs (`mem0_peer.py`).

Printed: passed/total by kind and configuration, capture tokens per turn, and seconds.

    python benchmarks/memory/run.py [--configs off,scripted,model] [--only ID ...] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from reins import Agent, Budgets
from reins.core._messages import AssistantMessage, Message, ToolCall, ToolSpec
from reins.core._model import Model
from reins.events import MemoryUpdated
from reins.memory import Memories, Memory, _capture
from reins.store import SQLiteLog
from reins.testing import FunctionModel, ScriptedModel

HERE = Path(__file__).parent
CONFIGS = ("off", "scripted", "model", "mem0")
START = datetime(2026, 1, 1, 12, tzinfo=UTC)


def day(n: int) -> datetime:
    return START + timedelta(days=n - 1)


def oracle(scenario: dict[str, Any]) -> FunctionModel:
    """An extractor that finds the facts the scenario lists for the turns it is shown, and
    reconciles each as the scenario says (an update of the kept fact holding `replaces`)."""
    facts = [f for s in scenario["sessions"] for t in s["turns"] for f in t.get("facts", ())]
    turns = [t for s in scenario["sessions"] for t in s["turns"] if t.get("facts")]

    def extract(messages: list[Message], tools: list[ToolSpec]) -> Any:
        prompt = messages[-1].content
        if tools[0].name == "reconcile":
            decisions: list[dict[str, Any]] = []
            replaces = None
            for line in prompt.splitlines():
                if line.startswith("New fact "):
                    number, _, text = line.removeprefix("New fact ").partition(": ")
                    replaces = next((f.get("replaces") for f in facts if f["fact"] == text), None)
                    decisions.append({"fact": int(number), "op": "new", "kept": 0})
                elif line.startswith("  Kept ") and replaces and replaces.lower() in line.lower():
                    decisions[-1].update(op="update", kept=int(line.split()[1].rstrip(":")))
            call = ToolCall(id="m2", name="reconcile", arguments={"decisions": decisions})
            return AssistantMessage(text="", tool_calls=(call,))
        conversation = prompt.partition("The conversation:\n")[2]
        found = [
            {"evidence": fact["evidence"], "fact": fact["fact"]}
            for turn in turns
            if turn["say"] in conversation
            for fact in turn["facts"]
        ]
        call = ToolCall(id="m1", name="remember", arguments={"facts": found})
        return AssistantMessage(text="", tool_calls=(call,))

    return FunctionModel(extract, name="oracle")


class Suite:
    def __init__(self, answerer: Model, peer: Any = None) -> None:
        self.answerer = answerer
        self.peer = peer

    async def scenario(self, scenario: dict[str, Any], config: str, root: Path) -> dict[str, Any]:
        store, user = root / "store", root / "user.db"
        projects = {name: root / name for name in ("a", "b")}
        for folder in projects.values():
            folder.mkdir(parents=True, exist_ok=True)
        scope = scenario.get("scope", "project")
        started = time.perf_counter()
        if config == "mem0":
            self.peer.reset()
        for session in scenario["sessions"] if config != "off" else ():
            project = session.get("project", "a")
            when = day(session["day"])  # the session's day on the timeline
            _capture._now = lambda when=when: when  # type: ignore[misc]
            if config == "mem0":
                for turn in session["turns"]:
                    owner = "user" if scope == "user" else f"project-{project}"
                    self.peer.add(turn["say"], user_id=owner)
                continue
            extractor = oracle(scenario) if config == "scripted" else self.answerer
            agent = Agent(
                model=ScriptedModel(["Noted."] * len(session["turns"])),
                tools=[],
                workspace=projects[project],
                log=SQLiteLog(store),
                memory=Memory(
                    recall="off",
                    capture=scope,
                    model=extractor,
                    path=store / "memory.db",
                    user_path=user,
                ),
                checkpoints=False,
            )
            session_id = None
            for turn in session["turns"]:
                result = await agent.run(turn["say"], session_id=session_id)
                session_id = result.session_id
        captured = time.perf_counter() - started
        question = scenario["question"]
        project = question.get("project", "a")
        memory = None
        instructions = ""
        found: list[str] = []
        if config in ("scripted", "model"):
            memory = Memory(recall="all", capture="off", path=store / "memory.db", user_path=user)
            owners = [("user", ""), *(("project", str(p)) for p in projects.values())]
            kept = Memories(store / "memory.db", user).current(scopes=owners)
            found = [f"{f.scope} {Path(f.owner).name}: {f.text}" for f in kept]
        elif config == "mem0":
            found = [
                *self.peer.search(question["ask"], user_id=f"project-{project}"),
                *self.peer.search(question["ask"], user_id="user"),
            ]
            if found:
                lines = "\n".join(f"- {text}" for text in found[:20])
                instructions = f"## What you remember\nFacts kept from earlier sessions.\n{lines}"
        agent = Agent(
            model=self.answerer,
            tools=[],
            workspace=projects[project],
            log=SQLiteLog(store),
            memory=memory,
            instructions=instructions,
            budgets=Budgets(max_steps=4),
            checkpoints=False,
        )
        asked = time.perf_counter()
        result = await agent.run(question["ask"])
        answer = (result.final_answer or "").strip()
        passed = scored(scenario, answer, [store / "memory.db", user])
        log = SQLiteLog(store) if store.exists() else None
        captures = []
        if log is not None:
            for run in await log.runs():
                captures += [
                    e for e in await log.events(run.run_id) if isinstance(e, MemoryUpdated)
                ]
        return {
            "id": scenario["id"],
            "kind": scenario["kind"],
            "config": config,
            "passed": passed,
            "answer": answer,
            "captures": len(captures),
            "capture_in": [c.usage.input_tokens for c in captures],
            "capture_out": [c.usage.output_tokens for c in captures],
            "left_out": [why for c in captures for why in c.left_out],
            "memory": found,
            "seconds_capture": round(captured, 2),
            "seconds_answer": round(time.perf_counter() - asked, 2),
        }


LEAKS = ("project_isolation", "secret")
"""Kinds scored on what must not come out: another project's fact, a secret (whether the
model then says it does not know, or guesses, is its own matter)."""


def scored(scenario: dict[str, Any], answer: str, files: list[Path]) -> bool:
    question = scenario["question"]
    lowered = answer.lower()
    leaked = any(f.lower() in lowered for f in question.get("forbid", ()))
    if scenario["kind"] in LEAKS:
        kept = b"".join(f.read_bytes() for f in files if f.exists())
        stored = any(f.encode() in kept for f in question["forbid"])
        return not leaked and not (scenario["kind"] == "secret" and stored)
    return not leaked and any(e.lower() in lowered for e in question["expect"])


def table(results: list[dict[str, Any]], configs: list[str]) -> str:
    kinds = sorted({r["kind"] for r in results})
    cell: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in results:
        cell[r["kind"], r["config"]].append(r["passed"])
        cell["all", r["config"]].append(r["passed"])
    rows = [f"| kind | {' | '.join(configs)} |", "|---" * (len(configs) + 1) + "|"]
    for kind in [*kinds, "all"]:
        cells = []
        for config in configs:
            got = cell.get((kind, config), [])
            cells.append(f"{sum(got)}/{len(got)}" if got else "–")
        name = f"**{kind}**" if kind == "all" else kind
        rows.append(f"| {name} | {' | '.join(cells)} |")
    for config in configs:
        mine = [r for r in results if r["config"] == config]
        ins = [t for r in mine for t in r["capture_in"]]
        outs = [t for r in mine for t in r["capture_out"]]
        if ins:
            rows.append(
                f"\n{config}: {len(ins)} captures, tokens per capture median in "
                f"{statistics.median(ins):.0f} / out {statistics.median(outs):.0f}"
            )
    return "\n".join(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="off,scripted,model")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--model", default="local", help="The answerer (and model extractor).")
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    unknown = set(configs) - set(CONFIGS)
    if unknown:
        sys.exit(f"unknown configs {sorted(unknown)}: choose from {', '.join(CONFIGS)}")
    scenarios = yaml.safe_load((HERE / "scenarios.yaml").read_text())
    if args.only:
        scenarios = [s for s in scenarios if s["id"] in args.only]
    from reins.agent._resolve import resolve_model

    answerer = resolve_model(args.model)
    peer = None
    if "mem0" in configs:
        from mem0_peer import Mem0Peer  # type: ignore[import-not-found]

        peer = Mem0Peer.for_benchmark()
        peer.__enter__()
    suite = Suite(answerer, peer)
    results: list[dict[str, Any]] = []
    try:
        for config in configs:
            for scenario in scenarios:
                with tempfile.TemporaryDirectory(prefix="reins-memory-") as folder:
                    result = await suite.scenario(scenario, config, Path(folder))
                results.append(result)
                mark = "pass" if result["passed"] else "FAIL"
                print(
                    f"{config:8} {scenario['id']:40} {mark}  {result['answer'][:70]!r}",
                    flush=True,
                )
                if args.json:
                    args.json.write_text(json.dumps(results, indent=1))
    finally:
        if peer is not None:
            peer.__exit__(None, None, None)
    print()
    print(table(results, configs))


if __name__ == "__main__":
    asyncio.run(main())
