"""Compaction on the real embedded model, in a small window: a long run goes on instead of
failing on the model's context."""

from __future__ import annotations

from pathlib import Path

import pytest

from reins import Agent, Budgets, Checks, RunState, StopReason
from reins.context import ContextBuilder, ContextSettings
from reins.events import ContextCompacted, ModelRequested, Notice
from reins.models import LocalModel
from reins.policies import Guards
from reins.store import MemoryLog
from reins.tools import list_files, read_file

WINDOW = 2560
STEPS = 40


@pytest.mark.real_model
async def test_a_40_step_run_in_a_2560_token_window_is_compacted_not_failed(
    workspace: Path,
) -> None:
    for k in range(1, STEPS + 1):
        (workspace / f"part{k:02d}.txt").write_text(f"Part {k} of the log.\n" * 40)
    model = LocalModel(embedded="smollm2", n_ctx=WINDOW)  # the cheapest: no quality judged
    counts: list[int] = []
    log = MemoryLog()

    def not_yet(state: RunState, answer: str) -> str | None:
        # Keeps the run going to its cap, whatever the small model thinks: the test is the
        # window, not the model's judgement.
        return None if state.step >= STEPS else "Not yet: read the next part file."

    agent = Agent(
        model=model,
        tools=[read_file, list_files],
        workspace=workspace,
        log=log,
        budgets=Budgets(max_steps=STEPS),
        checks=Checks(stop_hooks=[not_yet], max_rejections=STEPS),
        guards=Guards(loop=False, repeat_cache=False, goal_anchor=0, done_check=False),
    )
    run = agent.iter("Read part01.txt, then part02.txt, and so on up to part40.txt.")
    specs = [t.spec for t in agent._tools()]  # calculate too: the agent adds it
    builder = ContextBuilder(model=model, settings=ContextSettings(), tools=specs)
    async for event in run:
        if isinstance(event, ModelRequested):
            counts.append(builder.tokens(run.state))  # the request, counted exactly
    state = run.state
    assert state.finished is not None
    assert state.finished.stop_reason in (StopReason.MAX_STEPS, StopReason.END_TURN), (
        state.finished.detail
    )
    assert state.step >= 30
    events = await log.events(state.run_id)
    compactions = [e for e in events if isinstance(e, ContextCompacted)]
    assert len(compactions) >= 3
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    assert len(counts) == state.step
    assert max(counts) <= WINDOW - WINDOW // 4  # every request left room for its answer
    assert not [e for e in events if isinstance(e, Notice) and "too large" in e.text]
