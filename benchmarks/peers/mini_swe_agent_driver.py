"""mini-swe-agent on the overhead workload: a zero-latency scripted model, a no-op tool, 10 rounds
per run (9 no-op bash actions, then a 10th action that submits), no network.

The model is `minisweagent.models.test_models.DeterministicModel`; the agent is `DefaultAgent`
with the templates of the shipped `config/default.yaml`. mini-swe-agent's only tool is a bash
action, and it finishes when a command's output starts with COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT.
  --env local      (default) `LocalEnvironment`: every action is a real `sh -c` subprocess
                   (`echo ok`), so each round includes a process spawn.
  --env inprocess  a `LocalEnvironment` subclass whose execute() returns the same outputs without
                   a subprocess: harness overhead only (mostly jinja2 recompiling the
                   observation template every round, plus serialize() after every step).
Importing minisweagent writes a config dir and prints a banner to stdout, so MSWEA_GLOBAL_CONFIG_DIR
points to a temp dir and MSWEA_SILENT_STARTUP is set first.

python benchmarks/peers/mini_swe_agent_driver.py --runs N [--env local|inprocess]   -> one JSON line
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pathlib import Path

from _report import report, turn

ROUNDS = 10
WARMUP = 5
NOOP = "echo ok"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo done"


def measure(runs: int, env_kind: str, workdir: str) -> list[float]:
    import yaml
    from minisweagent import package_dir
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel, make_output

    class InProcessEnvironment(LocalEnvironment):
        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            text = {NOOP: "ok\n", SUBMIT: "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndone\n"}
            output = {"output": text[action["command"]], "returncode": 0, "exception_info": ""}
            self._check_finished(output)  # raises Submitted on the final round
            return output

    config = yaml.safe_load((Path(package_dir) / "config" / "default.yaml").read_text())
    env_class = InProcessEnvironment if env_kind == "inprocess" else LocalEnvironment
    env = env_class(cwd=workdir, **config["environment"])
    outputs = [
        make_output("THOUGHT: no-op", [{"command": NOOP}], cost=0.0) for _ in range(ROUNDS - 1)
    ]
    outputs.append(make_output("THOUGHT: done", [{"command": SUBMIT}], cost=0.0))
    observation_template = config["model"]["observation_template"]
    samples: list[float] = []
    for index in range(runs + WARMUP):
        turn(index)  # run.py interleaves the harnesses
        model = DeterministicModel(outputs=outputs, observation_template=observation_template)
        agent = DefaultAgent(model, env, **config["agent"])
        start = time.perf_counter()
        result = agent.run("benchmark")
        elapsed = time.perf_counter() - start
        raw = [m.get("extra", {}).get("raw_output") for m in agent.messages]
        done = (result.get("exit_status"), result.get("submission")) == ("Submitted", "done\n")
        if agent.n_calls != ROUNDS or raw.count("ok\n") != ROUNDS - 1 or not done:
            sys.exit(f"mini-swe-agent run did not do {ROUNDS} rounds: {agent.n_calls=} {result=}")
        if index >= WARMUP:
            samples.append(elapsed / ROUNDS * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--env", choices=["local", "inprocess"], default="local")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MSWEA_GLOBAL_CONFIG_DIR"] = tmp
        os.environ["MSWEA_SILENT_STARTUP"] = "1"
        start = time.perf_counter()
        try:
            import minisweagent.agents.default
            import minisweagent.environments.local  # noqa: F401
        except ImportError as exc:
            sys.exit(f"mini-swe-agent is not installed (pip install mini-swe-agent): {exc}")
        import_s = time.perf_counter() - start
        samples = measure(args.runs, args.env, tmp)

    tool = (
        f"LocalEnvironment: each action a `sh -c '{NOOP}'` subprocess"
        if args.env == "local"
        else f"in-process LocalEnvironment subclass returning the output of `{NOOP}`, no subprocess"
    )
    note = (
        f"DeterministicModel (text actions), DefaultAgent with config/default.yaml templates; "
        f"tool = bash action via {tool}; 10th action echoes COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; "
        "fresh model+agent per run (built outside the timer), env reused; import_s covers "
        "minisweagent.agents.default + environments.local"
    )
    name = "mini-swe-agent" if args.env == "local" else "mini-swe-agent (in-process env)"
    report(name, "mini-swe-agent", import_s, samples, note)


if __name__ == "__main__":
    main()
