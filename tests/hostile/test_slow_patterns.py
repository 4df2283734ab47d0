"""reins's own patterns and scans, run on what a model, a tool or a cloned project wrote, take
time linear in it (issue 26): Python's `re` runs in C with the GIL held, so a pattern that
backtracks quadratically held the event loop, deaf to timeouts and signals, for as long as it
took. Each case below took the old code ten seconds or more (times measured on the same input);
each bound is far above what the code takes now, so a slow machine passes."""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from reins import (
    Agent,
    Message,
    ModelSettings,
    StreamItem,
    TextChunk,
    ToolResultMessage,
    ToolSpec,
    UsageError,
)
from reins.context import infer_profile
from reins.context._instructions import HINT, FolderHints
from reins.core._actions import ActionError, parse_action
from reins.core._repetition import collapse_repeats
from reins.events import ToolCallFinished
from reins.mcp import MCPServerConfig, servers_from_json
from reins.models._text_calls import recover
from reins.policies._guards import strip_markup
from reins.testing import ScriptedModel

from ..helpers import call, reply
from ..test_mcp import results
from ..test_planning import Planner, planning_agent

BOUND = 2.0
"""Seconds: each case below takes milliseconds now."""


class OneDelta(ScriptedModel):
    """Streams a reply as one delta: word by word, the test double alone takes a second over a
    reply of a few hundred thousand characters."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        response = await self.request(messages, tools, settings)
        yield TextChunk(response.message.text)
        yield response


@contextmanager
def quick() -> Iterator[None]:
    start = time.monotonic()
    yield
    assert time.monotonic() - start < BOUND


def test_a_tool_result_of_hint_like_text_is_read_in_linear_time(workspace: Path) -> None:
    """A folder's instruction file is attached to a tool's result under a `HINT` line, which a
    resumed session finds again; the pattern for it took quadratic time on a line of many
    `/, from ` (a second at the 30,000 characters a result is cut to; 12 s at 120,000)."""
    line = "[Instructions for the files under " + "/, from " * 15_000 + "x"
    hints = FolderHints(workspace=workspace)
    with quick():
        hints.seed([ToolResultMessage(call_id="c", name="read_file", content=line)])
    assert hints.attached == set()
    attached = HINT.format(folder="src/app", file="src/app/AGENTS.md")
    tricky = HINT.format(folder="a/b, from c", file="a/b, from c/AGENTS.md")
    content = f"1: import os\n{attached}\nUse tabs.\n\n{tricky}\nNo.\n[Instructions for x:]"
    hints.seed([ToolResultMessage(call_id="c", name="read_file", content=content)])
    assert hints.attached == {workspace / "src/app/AGENTS.md", workspace / "a/b, from c/AGENTS.md"}


async def test_a_planner_reply_of_open_braces_is_refused_at_once(workspace: Path) -> None:
    """`\\{.*\\}` tried each `{` to the end of a reply with no `}`: 7 s for each of the two
    replies of 120,000 `{`."""
    planner = Planner(["{" * 120_000, "{" * 120_000])
    agent = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    with quick():
        events = [e async for e in agent.iter("go") if isinstance(e, ToolCallFinished)]
    content, is_error = results(events)["p1"]
    assert is_error
    assert content.startswith("the planner did not reply with a usable plan")
    analysis = {"task": "t", "goal": "g", "complexity": "simple"}
    steps = {"steps": [{"step": "do it {now}", "executor": "SELF"}]}
    planner = Planner([f"Sure:\n```json\n{json.dumps(analysis)}\n```", json.dumps(steps)])
    agent = planning_agent(workspace, planner, reply("", call("plan", "p1")), "done")
    events = [e async for e in agent.iter("go") if isinstance(e, ToolCallFinished)]
    content, is_error = results(events)["p1"]
    assert not is_error
    assert "1. do it {now}" in content


async def test_a_final_answer_of_unclosed_tags_is_stripped_in_linear_time(
    workspace: Path,
) -> None:
    """A tag's `[^>]*` ran from each `<parameter ` to the end of an answer that had no `>`:
    14 s for 30,000 of them (500,000 characters)."""
    answer = "Done. " + "".join(f"<parameter {n} " for n in range(30_000))
    agent = Agent(model=OneDelta([answer]), workspace=workspace)
    with quick():
        result = await agent.run("go")
    assert result.final_answer == answer.strip()
    leaked = 'The answer is 4.</thought>\n<parameter name="path">a.py</parameter> done <tools'
    assert strip_markup(leaked) == "The answer is 4.\na.py done <tools"
    assert strip_markup('<thought>\nhm</thought>It is 4. <invoke name="x">') == "It is 4."


SPEC = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def test_a_reply_with_an_unclosed_fence_is_read_in_linear_time() -> None:
    """After an opening fence, `[ \\t]*` gave its blanks back one at a time, each a new try at
    the rest of the reply: 15 s for a fence, 13 s more for a fence in a `<tool_call>`, each
    followed by 40,000 spaces and never closed; the strict JSON contract's parse, 15 s."""
    blanks = " " * 40_000 + "x"
    with quick():
        assert recover("```" + blanks, [SPEC]) is None
    with quick():
        assert recover("<tool_call>```" + blanks + "</tool_call>", [SPEC]) is None
    with quick(), pytest.raises(ActionError):
        parse_action("```" + blanks, [SPEC])
    call_ = '{"name": "read_file", "arguments": {"path": "a.py"}}'
    for text in (f"```json \t\n{call_}\n```", f"<tool_call>```json  \n{call_}```</tool_call>"):
        found = recover(text, [SPEC])
        assert found is not None
        assert [(c.name, c.arguments) for c in found.calls] == [("read_file", {"path": "a.py"})]
    action = parse_action(f"```json  \n{call_}\n```", [SPEC])
    assert (action.name, action.arguments) == ("read_file", {"path": "a.py"})


def test_a_goal_of_dotted_words_is_profiled_in_linear_time() -> None:
    """Each `.` in a word began a new try of `\\b[\\w/.-]+\\.py\\b` to the word's end: 13 s
    for a goal (a pasted issue, say) of 40,000 characters `a.a.a…`."""
    with quick():
        assert infer_profile("a." * 20_000) is None
    assert infer_profile("look at src/app/parse.py, /x/y.rs and ../z.go") == "coding"
    assert infer_profile("write a blog post") == "writing"
    assert infer_profile("a.pyc a.py_ x.cs") is None
    assert infer_profile("deploy a.sh: a.b.c, d.py") == "coding"  # 2 files outweigh 1 word


def test_a_project_mcp_value_of_open_variables_is_read_in_linear_time(tmp_path: Path) -> None:
    """`${NAME:-` with no `}` after it: the default's `[^}]*` ran to the end of the value from
    each, 24 s for a project's header or argument of 100,000 characters."""
    value = "${A:-" * 20_000
    file = tmp_path / ".mcp.json"
    server = {"url": "https://example.test", "headers": {"Authorization": value}}
    file.write_text(json.dumps({"mcpServers": {"s": server}}))
    with quick(), pytest.raises(UsageError, match="holds a key in a project file"):
        servers_from_json(file, project=True)
    with quick():
        assert MCPServerConfig(name="s", command="x", args=(value,)).expanded().args == (value,)
    fine = {"url": "https://example.test", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    file.write_text(json.dumps({"mcpServers": {"s": fine}}))
    assert list(servers_from_json(file, project=True)) == ["s"]
    config = MCPServerConfig(name="s", command="x", args=("${NOT_SET_HERE:-a}}b", "${X"))
    assert config.expanded().args == ("a}b", "${X")


def near_copies(period: int, words: int) -> str:
    """Three copies of a unit of `period` words, then copies with one word changed each."""
    unit = [str(n) for n in range(period)]
    out = unit * 3
    while len(out) < words:
        copy = list(unit)
        copy[len(out) // period % period] = f"x{len(out)}"
        out += copy
    return " ".join(out)


def many_periods(words: int, periods: int) -> str:
    """For each of `periods` long distances, a pair of words four times at that distance."""
    slots: dict[int, str] = {}
    rng = random.Random(1)
    placed = tried = 0
    while placed < periods and 1500 + tried < words // 3 - 1:
        period, tried = 1500 + tried, tried + 1
        first = rng.randrange(1, words - 3 * period - 1)
        places = [first + k * period for k in range(4)]
        if not any(at - 1 in slots or at in slots for at in places):
            for at in places:
                slots[at - 1], slots[at] = f"y{period}", f"x{period}"
            placed += 1
    return " ".join(slots.get(n, f"w{n}") for n in range(words))


@pytest.mark.parametrize(
    "text",
    [
        # two copies and all but a word of a third: each word of the second copy measured
        # the whole stretch again (17 s at 183,000 characters)
        " ".join([str(n) for n in range(12_000)] * 2 + [str(n) for n in range(11_999)]),
        # near copies of a long unit: each compared whole (12 s at 610,000 characters)
        near_copies(12_000, 120_000),
        # many long periods, each checked over the whole text (8 s at 395,000 characters)
        many_periods(60_000, 3000),
    ],
    ids=["two copies and most of a third", "near copies", "many periods"],
)
async def test_a_reply_of_near_repetitions_is_collapsed_in_linear_time(
    workspace: Path, text: str
) -> None:
    """A reply's repeated text is collapsed in the history, in the fold of every reply (and
    of a whole session on resume); a long unit repeated not quite three times, or nearly the
    same many times, took time as the text's length times the unit's."""
    agent = Agent(model=OneDelta([text]), workspace=workspace)
    with quick():
        result = await agent.run("go")
    assert result.final_answer == text  # nothing to collapse
    unit = " ".join(f"Step {n} is to read the file and check it." for n in range(40))
    assert collapse_repeats(f"First. {unit} {unit} {unit} Last.") == (
        f"First. {unit} [… repeated 3 times] Last."
    )
    changed = unit.replace("Step 7 ", "Step 8 ")
    for alike in (f"{unit} {unit} {changed} {unit}", f"{unit} {unit} {unit[:-9]}"):
        assert collapse_repeats(alike) is alike
    text = "I will read the file. " * 3 + "Then " + "check the list of items again now " * 4
    assert collapse_repeats(text) == (
        "I will read the file. [… repeated 3 times] Then check the list of items again now "
        "[… repeated 4 times] "
    )
