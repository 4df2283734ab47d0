"""Compaction as a user meets it on the command line: `reins run --context-window`, `reins show`
(the whole history, `--view` what the model sees), `reins compact`, the config's `[context]`.
Each command runs as a real process on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reins import Agent, ContextSettings, UsageError
from reins.context._compaction import SUMMARY_HEADER
from reins.context._tokens import estimate
from reins.core._events import ContextCompacted
from reins.core._state import RunState
from reins.store import SQLiteLog
from reins.testing import ScriptedModel

from .helpers import call, reply
from .test_cli import reins, script
from .test_store_cli import one_line_error, run_ids, session_of


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    report = "".join(f"row {i:04d}: a line of a long report, read in parts\n" for i in range(400))
    (tmp_path / "ws" / "report.txt").write_text(report)
    return tmp_path


def reads(n: int, *, parts: bool = False) -> list[object]:
    """A script that reads the report from `n` places 50 lines apart to its end (or, `parts`,
    50 lines each: never whole, as a part read again after a whole read is answered from that
    read), then answers."""
    calls = [
        {
            "tool_calls": [
                {
                    "name": "read_file",
                    "arguments": {
                        "path": "report.txt",
                        "start_line": 1 + 50 * (k % 8),
                        **({"end_line": 50 + 50 * (k % 8)} if parts else {}),
                    },
                }
            ]
        }
        for k in range(n)
    ]
    return [*calls, "FINAL_ANSWER: read"]


def test_a_run_past_its_window_is_compacted_and_show_tells_both_views(project: Path) -> None:
    model = script(project / "s.json", reads(8))
    args = ["-m", model, "-w", "ws", "--tools", "read_file", "--context-window", "3400"]
    done = reins("run", "read the report", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "context compacted" in done.stdout
    run = run_ids(project)["read the report"]
    shown = reins("show", run, cwd=project)
    assert shown.returncode == 0
    assert "compacted" in shown.stdout
    assert "reins show --view" in shown.stdout
    whole = json.loads(reins("show", run, "--json", cwd=project).stdout)
    results = [m["content"] for m in whole if m["role"] == "tool"]
    assert len(results) == 8
    last = "row 0399: a line of a long report, read in parts\n\n[400 lines in all]"
    assert all(r.endswith(last) for r in results)
    view = json.loads(reins("show", run, "--view", "--json", cwd=project).stdout)
    assert any(m.get("content", "").startswith(SUMMARY_HEADER) for m in view)
    assert len(view) < len(whole)


def test_reins_compact_summarizes_a_session_for_its_next_turn(project: Path) -> None:
    model = script(project / "s.json", reads(10, parts=True))
    first = reins("run", "read the report", "-m", model, "-w", "ws", cwd=project)
    assert first.returncode == 0, first.stderr
    session = session_of(project, run_ids(project)["read the report"])
    done = reins("compact", session[:8], cwd=project)
    assert done.returncode == 0, done.stderr
    assert "context compacted" in done.stdout
    assert "digested (no model)" in done.stdout  # a scripted model summarizes nothing
    more = script(project / "more.json", [*reads(10, parts=True), "second turn"])
    turn = reins("run", "and again", "-m", more, "-w", "ws", "-s", session, cwd=project)
    assert turn.returncode == 0, turn.stderr
    sent = json.loads(reins("show", run_ids(project)["and again"], "--json", cwd=project).stdout)
    assert sum(m.get("content", "").startswith(SUMMARY_HEADER) for m in sent) == 1
    assert sent[-1]["text"] == "second turn"  # the script went on where the session was


async def test_compact_counts_before_and_after_alike(tmp_path: Path) -> None:
    """Both sides are the same count of a request, the tools' schemas in both: the count the
    model gave of the last request (a script's leaves the tools out) once made 20 short
    messages look like 471 tokens and the 10 after them like 2,329."""
    replies = [
        reply("", call("read_file", f"c{k}", path="r.txt", start_line=k + 1)) for k in range(8)
    ]
    (tmp_path / "r.txt").write_text("".join(f"line {k}\n" for k in range(8)))
    log = SQLiteLog(tmp_path / "log")
    agent = Agent(model=ScriptedModel([*replies, "FINAL_ANSWER: ok"]), workspace=tmp_path, log=log)
    result = await agent.run("read it often")
    before = RunState.fold(await log.events(result.run_id))
    event = await agent.compact(result.session_id)
    after = RunState.fold(await log.events(result.run_id))
    specs = [t.spec for t in agent._tools() if t.name in before.config.tools]
    assert len(specs) > 5  # the builtin tools: their schemas weigh more than the messages
    assert event.tokens_before == estimate(before.view(), specs)
    assert event.tokens_after == estimate(after.view(), specs)
    assert (event.messages_before, event.messages_after) == (20, 10)


def test_reins_compact_says_when_there_is_nothing_to_compact(project: Path) -> None:
    model = script(project / "s.json", reads(1))
    assert reins("run", "read", "-m", model, "-w", "ws", cwd=project).returncode == 0
    refused = reins("compact", "last", cwd=project)
    assert refused.returncode == 2
    assert "nothing to compact in session" in one_line_error(refused)
    missing = reins("compact", "nosuchsession", cwd=project)
    assert "no session matches 'nosuchsession'" in one_line_error(missing)


def test_the_config_sets_the_window_and_a_project_may_not_pick_the_summarizer(
    project: Path,
) -> None:
    model = script(project / "s.json", reads(8))
    (project / "reins.toml").write_text("[context]\nwindow = 3000\nkeep_recent = 2\n")
    done = reins("run", "read", "-m", model, "-w", "ws", "--tools", "read_file", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "context compacted" in done.stdout
    (project / "reins.toml").write_text('[context]\ncompaction_model = "openai:gpt-4o"\n')
    refused = reins("run", "read", "-m", model, "-w", "ws", cwd=project)
    assert "context.compaction_model: a project's file may not choose" in one_line_error(refused)
    (project / "reins.toml").write_text("[context]\nthreshold = 3\n")
    bad = reins("run", "read", "-m", model, "-w", "ws", cwd=project)
    assert "context.threshold" in one_line_error(bad)


async def test_agent_compact_is_recorded_and_says_when_nothing_is_left(tmp_path: Path) -> None:
    replies = [
        reply("", call("read_file", f"c{k}", path="r.txt", start_line=k + 1)) for k in range(8)
    ]
    (tmp_path / "r.txt").write_text("".join(f"line {k}\n" for k in range(8)))
    log = SQLiteLog(tmp_path / "log")
    agent = Agent(model=ScriptedModel([*replies, "FINAL_ANSWER: ok"]), workspace=tmp_path, log=log)
    result = await agent.run("read it often")
    event = await agent.compact(result.session_id)
    assert isinstance(event, ContextCompacted)
    assert event.forced
    assert event.messages_after < event.messages_before
    assert (await log.events(result.run_id))[-1] == event
    again = Agent(model=ScriptedModel(replies), workspace=tmp_path, log=log)
    with pytest.raises(UsageError, match="nothing to compact"):
        await again.compact(result.session_id)  # the view is already compacted
    keep_fewer = Agent(
        model=ScriptedModel(replies),
        workspace=tmp_path,
        log=log,
        context=ContextSettings(keep_recent=2),
    )
    with pytest.raises(UsageError, match="nothing to compact"):
        await keep_fewer.compact(result.session_id)  # the run's own settings, not the agent's


def test_profiles_are_chosen_by_name_or_inferred_from_the_goal(project: Path) -> None:
    model = script(project / "s.json", reads(3))
    (project / "reins.toml").write_text(
        '[profiles.coding]\nmax_steps = 2\nmode = "plan"\n'
        '[profiles.research]\ninstructions = "Cite every file you read."\n'
    )

    def started(goal: str) -> dict[str, object]:
        run = run_ids(project)[goal]
        first = reins("replay", run, "--json", cwd=project).stdout.splitlines()[0]
        return json.loads(first)  # type: ignore[no-any-return]

    coding = reins("run", "fix the failing test in app.py", "-m", model, "-w", "ws", cwd=project)
    assert coding.returncode == 3, coding.stderr  # the coding profile's cap of 2 steps
    assert (  # said in the header: the user did not choose it
        "profile coding (inferred from the goal; --profile NAME chooses one) · at most 2 steps · "
        "tools: read_file, write_file, edit_file, list_files, find_files, grep, run_command, "
        "final_answer, calculate · "  # plan mode refuses commands: calculate is what computes
        "mode plan"
    ) in coding.stdout
    event = started("fix the failing test in app.py")
    assert event["config"]["profile"] == "coding"  # type: ignore[index]
    assert event["config"]["profile_inferred"] is True  # type: ignore[index]
    assert event["config"]["mode"] == "plan"  # type: ignore[index]
    assert "Mode: plan." in event["messages"][0]["content"]  # type: ignore[index]

    chosen = reins("run", "fix it", "-m", model, "-w", "ws", "--profile", "research", cwd=project)
    assert chosen.returncode == 0, chosen.stderr
    event = started("fix it")
    assert event["config"]["profile"] == "research"  # type: ignore[index]
    assert event["config"]["profile_inferred"] is False  # type: ignore[index]
    assert "profile research · at most 30 steps · tools:" in chosen.stdout
    assert "Cite every file you read." in event["messages"][0]["content"]  # type: ignore[index]

    plain = reins("run", "hello there", "-m", model, "-w", "ws", cwd=project)
    assert plain.returncode == 0
    assert started("hello there")["config"]["profile"] is None  # type: ignore[index]
    assert "profile " not in plain.stdout

    unknown = reins("run", "x", "-m", model, "--profile", "nope", cwd=project)
    assert one_line_error(unknown) == (
        "error: no profile 'nope' in the config (its profiles: coding, research)"
    )
    (project / "reins.toml").write_text('[profiles.coding]\nmodel = "openai:gpt-4o"\n')
    refused = reins("run", "x", "-m", model, cwd=project)
    assert "profiles.coding.model: a project's file may not choose" in one_line_error(refused)
