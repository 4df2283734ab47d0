"""The system prompt's sections and the project's AGENTS.md files, on a real nested git
repository, through the public API."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from reins import Agent, ContextSettings, Message, StopReason, SystemMessage, ToolResultMessage
from reins.context import PromptContext, PromptSection
from reins.context._prompt import base_prompt
from reins.context._sections import COMPUTE_WITH_COMMANDS, FILES_WITH_COMMANDS
from reins.events import Notice
from reins.store import MemoryLog
from reins.testing import ScriptedModel

from .helpers import call, reply


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """repo/ (git) with AGENTS.md; repo/pkg with AGENTS.md and its override; repo/pkg/sub and
    repo/pkg/sub/deep with their own; repo/other with one."""
    root = tmp_path / "repo"
    (root / "pkg" / "sub" / "deep").mkdir(parents=True)
    (root / "other").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text("Root rule: use tabs.\n")
    (root / "pkg" / "AGENTS.md").write_text("Pkg rule: never shown, the override wins.\n")
    (root / "pkg" / "AGENTS.override.md").write_text("Pkg override: use spaces.\n")
    (root / "pkg" / "sub" / "AGENTS.md").write_text("Sub rule: tests first.\n")
    (root / "pkg" / "sub" / "deep" / "AGENTS.md").write_text("Deep rule: no globals.\n")
    (root / "pkg" / "sub" / "deep" / "x.py").write_text("x = 1\n")
    (root / "pkg" / "sub" / "y.py").write_text("y = 2\n")
    (root / "other" / "AGENTS.md").write_text("Other rule: not on the way.\n")
    return root


class Recording(ScriptedModel):
    def __init__(self, replies: list[object]) -> None:
        super().__init__(replies)  # type: ignore[arg-type]
        self.requests: list[list[Message]] = []

    async def request(self, messages, tools, settings):  # type: ignore[no-untyped-def]
        self.requests.append(list(messages))
        return await super().request(messages, tools, settings)


def system_text(model: Recording) -> str:
    first = model.requests[0][0]
    assert isinstance(first, SystemMessage)
    return first.content


async def test_agents_files_from_the_git_root_down_to_the_workspace(repo: Path) -> None:
    model = Recording(["FINAL_ANSWER: ok"])
    await Agent(model=model, workspace=repo / "pkg").run("tidy up")
    prompt = system_text(model)
    root_at, pkg_at = prompt.index("Root rule: use tabs."), prompt.index("Pkg override")
    assert root_at < pkg_at  # the closer file comes later, and the prompt says it wins
    assert "the later one wins" in prompt
    assert "## AGENTS.md" in prompt
    assert "## pkg/AGENTS.override.md" in prompt
    for absent in ("never shown", "Sub rule", "Deep rule", "Other rule"):
        assert absent not in prompt


async def test_a_folder_below_the_workspace_is_told_once_when_a_tool_touches_it(
    repo: Path,
) -> None:
    replies = [
        reply("", call("read_file", "a", path="sub/deep/x.py")),
        reply("", call("read_file", "b", path="sub/y.py")),
        reply("", call("list_files", "c", path="sub/deep")),
        "FINAL_ANSWER: ok",
    ]
    result = await Agent(model=Recording(replies), workspace=repo / "pkg").run("read")
    results = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert results[0].startswith("x = 1\n")
    assert "[Instructions for the files under pkg/sub/, from pkg/sub/AGENTS.md:]" in results[0]
    assert "Sub rule: tests first." in results[0]
    assert "Deep rule: no globals." in results[0]
    assert results[0].index("Sub rule") < results[0].index("Deep rule")
    assert "Sub rule" not in results[1]
    assert "Deep rule" not in results[2]


async def test_a_next_turn_does_not_attach_a_folder_file_again(repo: Path) -> None:
    log = MemoryLog()
    first = Agent(
        model=Recording([reply("", call("read_file", "a", path="sub/y.py")), "FINAL_ANSWER: 1"]),
        workspace=repo / "pkg",
        log=log,
    )
    done = await first.run("read")
    later = Recording(
        [
            reply("", call("read_file", "a", path="sub/y.py")),
            "FINAL_ANSWER: 1",
            reply("", call("read_file", "b", path="sub/deep/x.py")),
            "FINAL_ANSWER: 2",
        ]
    )
    again = Agent(model=later, workspace=repo / "pkg", log=log)
    result = await again.run("read more", session_id=done.session_id)
    last = result.messages[-2]
    assert isinstance(last, ToolResultMessage)
    assert "Deep rule" in last.content
    assert "Sub rule" not in last.content  # told in the first turn


async def test_the_cap_and_the_fallback_names(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("R" * 30_000 + "\n")
    (repo / "pkg" / "AGENTS.override.md").unlink()
    (repo / "pkg" / "AGENTS.md").unlink()
    (repo / "pkg" / "CLAUDE.md").write_text("C" * 5_000 + "\n")
    log = MemoryLog()
    model = Recording(["FINAL_ANSWER: ok"])
    agent = Agent(
        model=model,
        workspace=repo / "pkg",
        log=log,
        instruction_files=("AGENTS.md", "CLAUDE.md"),
        context=ContextSettings(window=100_000),  # 32 KiB of instructions: about 11k tokens
    )
    result = await agent.run("x")
    prompt = system_text(model)
    assert prompt.count("R") >= 30_000
    assert prompt.count("C" * 100) > 0
    assert "C" * 5_000 not in prompt
    notices = [e.text for e in await log.events(result.run_id) if isinstance(e, Notice)]
    assert notices == ["instruction file pkg/CLAUDE.md cut to 2767 bytes (cap 32768)"]
    plain = Recording(["FINAL_ANSWER: ok"])
    wide = ContextSettings(window=100_000)
    await Agent(model=plain, workspace=repo / "pkg", context=wide).run("x")
    assert "CCCC" not in system_text(plain)  # CLAUDE.md only when named
    none = Recording(["FINAL_ANSWER: ok"])
    await Agent(model=none, workspace=repo / "pkg", instruction_files=()).run("x")
    assert "RRRR" not in system_text(none)


async def test_prompt_sections_fail_open_and_keep_to_their_budget(tmp_path: Path) -> None:
    def broken(context: PromptContext) -> str:
        raise RuntimeError("no memory store")

    sections = [
        PromptSection(name="memory", render=broken),
        PromptSection(name="team", render=lambda c: f"Team rule for {c.goal!r}. " * 200, budget=50),
    ]
    log = MemoryLog()
    model = Recording(["FINAL_ANSWER: ok"])
    agent = Agent(
        model=model,
        workspace=tmp_path,
        log=log,
        system_prompt="You are a careful release manager.",
        instructions="Answer in French.",
        prompt_sections=sections,
    )
    result = await agent.run("ship it")
    assert result.stop_reason is StopReason.END_TURN
    prompt = system_text(model)
    opening = "You are a careful release manager.\n\nAnswer in French.\n\n"
    tools = f"{COMPUTE_WITH_COMMANDS}\n{FILES_WITH_COMMANDS}\n\n"  # the tool notes (run_command)
    assert prompt.startswith(f"{opening}{tools}Team rule")
    assert "autonomous agent" not in prompt  # the base prompt was replaced
    assert len(prompt) < 400 + len(tools)
    notices = [e.text for e in await log.events(result.run_id) if isinstance(e, Notice)]
    assert notices == [
        "prompt section 'memory' failed and was left out: RuntimeError: no memory store",
        "prompt section 'team' cut to 50 tokens",
    ]


def test_the_base_prompt_gives_no_file_name_a_model_could_copy() -> None:
    # The default model read, edited and wrote `src/app.py`, the example path it was given,
    # in tasks about calc.py and app/main.py.
    for approvals in (False, True):
        assert re.findall(r"`[\w./-]+\.\w+`", base_prompt(approvals=approvals)) == []
