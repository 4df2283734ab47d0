"""Skills: SKILL.md folders discovered, listed in the system prompt, loaded with load_skill,
their files read and their scripts run through the usual tools; a project's skills only once
the project is trusted (headless: left out with a note; "always" at the terminal records it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reins import Agent, Message, SystemMessage, ToolSpec
from reins.events import Notice
from reins.skills import Skill, discover, read_skill
from reins.skills._skill import SkillError
from reins.testing import FunctionModel, ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply
from .terminal import run_in_terminal
from .test_cli import reins, script
from .test_mcp import results

REPORT = """---
name: weekly-report
description: >-
  Writes the weekly status report from the notes
  in notes/, in the team's format.
---
# Weekly report

1. Read `template.md` of this skill.
2. Run `scripts/count.sh` on the notes folder.
"""


def make_skill(root: Path, folder: str, text: str, files: dict[str, str] | None = None) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    for name, content in (files or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    return path


def test_a_skill_is_its_front_matter_and_body(tmp_path: Path) -> None:
    folder = make_skill(tmp_path, "report", REPORT)
    skill = read_skill(folder)
    assert skill == Skill(
        name="weekly-report",
        description="Writes the weekly status report from the notes in notes/, in the team's "
        "format.",
        folder=folder,
    )
    assert skill.body().startswith("# Weekly report\n\n1. Read `template.md`")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("# no front-matter\n", "no front-matter"),
        ("---\nname: [unclosed\n---\nbody\n", "the front-matter is not valid YAML (line 3)"),
        ("---\nname: Bad Name\ndescription: d\n---\n", "`name` must be 1 to 64 lowercase"),
        ("---\nname: ok\n---\n", "`description` must say what the skill is for"),
        ("---\n- a list\n---\n", "must be a mapping"),
        ("---\n" + "[" * 5000 + "\n---\n", "the front-matter is nested too deep to read"),
    ],
)
def test_bad_front_matter_is_a_note_naming_the_file(tmp_path: Path, text: str, error: str) -> None:
    folder = make_skill(tmp_path / "skills", "bad", text)
    make_skill(tmp_path / "skills", "good", REPORT)
    skills, notes = discover([tmp_path / "skills"])
    assert [s.name for s in skills] == ["weekly-report"]
    assert len(notes) == 1
    assert notes[0].startswith(f"skill left out: {folder.resolve() / 'SKILL.md'}: ")
    assert error in notes[0]
    with pytest.raises(SkillError, match=error.split(" (")[0]):
        read_skill(folder)


def test_the_first_place_wins_a_name(tmp_path: Path) -> None:
    first = make_skill(tmp_path / "project", "report", REPORT)
    make_skill(tmp_path / "user", "report", REPORT)
    skills, notes = discover([first, tmp_path / "user", tmp_path / "missing"])
    assert [s.folder for s in skills] == [first.resolve()]
    assert notes == [
        f"skill left out: {(tmp_path / 'user' / 'report').resolve() / 'SKILL.md'}: the name "
        f"'weekly-report' is taken by {first.resolve() / 'SKILL.md'}"
    ]


async def test_the_model_sees_the_list_loads_one_reads_its_files_and_runs_its_script(
    tmp_path: Path, workspace: Path
) -> None:
    user = tmp_path / "user-skills"  # outside the workspace, as ~/.config/reins/skills is
    make_skill(
        user,
        "report",
        REPORT,
        {"template.md": "## Status\n", "scripts/count.sh": 'ls "$1" | wc -l\n'},
    )
    make_skill(user, "broken", "no front-matter\n")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "mon.md").write_text("shipped")
    template = (user / "report" / "template.md").resolve()
    script_path = (user / "report" / "scripts" / "count.sh").resolve()
    seen: list[tuple[str, set[str]]] = []

    def model(messages: list[Message], tools: list[ToolSpec]) -> object:
        system = messages[0]
        assert isinstance(system, SystemMessage)
        seen.append((system.content, {t.name for t in tools}))
        turn = sum(1 for m in messages if m.role == "assistant")
        return [
            reply("", call("load_skill", "c1", name="weekly-report")),
            reply("", call("read_file", "c2", path=str(template))),
            reply("", call("run_command", "c3", command=f"sh {script_path} notes")),
            "FINAL_ANSWER: done",
        ][turn]

    agent = Agent(
        model=FunctionModel(model),  # type: ignore[arg-type]
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        skills=[user],
        approval="allow",
    )
    events = [e async for e in agent.iter("write the weekly report")]
    system, tools = seen[0]
    assert "load_skill" in tools
    assert "- weekly-report: Writes the weekly status report from the notes in notes/" in system
    assert "A skill's files may lie outside the workspace" in system
    assert "broken" not in system
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any(t.startswith("skill left out: ") and "broken/SKILL.md" in t for t in notices)
    found = results(events)
    loaded = found["c1"][0]
    assert loaded.startswith("# Skill: weekly-report\n\n# Weekly report\n\n1. Read")
    assert f"- {template}\n" in loaded
    assert f"- {script_path}\n" in loaded
    assert found["c2"] == ("1\t## Status", False) or "## Status" in found["c2"][0]
    assert not found["c2"][1]
    assert not found["c3"][1]
    assert found["c3"][0].strip().splitlines()[-1].strip() == "1"


async def test_an_unknown_skill_is_an_observation_and_no_skills_no_tool(workspace: Path) -> None:
    folder = make_skill(workspace / ".agents" / "skills", "report", REPORT)
    agent = Agent(
        model=ScriptedModel([reply("", call("load_skill", "c1", name="nope")), "done"]),
        tools=[],
        workspace=workspace,
        skills=[folder],
    )
    content, is_error = results([e async for e in agent.iter("go")])["c1"]
    assert is_error
    assert content == "no skill named 'nope'; the skills are: weekly-report"
    plain = Agent(model=ScriptedModel(["done"]), tools=[], workspace=workspace)
    assert "load_skill" not in [t.name for t in plain._tools()]


# The command line: user skills always, a project's once trusted ---------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = (tmp_path / "repo").resolve()
    (folder / "ws").mkdir(parents=True)
    make_skill(folder / ".agents" / "skills", "report", REPORT)
    make_skill(
        tmp_path / "config" / "reins" / "skills",
        "mine",
        REPORT.replace("weekly-report", "my-skill"),
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return folder


def system_prompt(project: Path) -> str:
    shown = reins("show", "last", "--json", cwd=project)
    return json.loads(shown.stdout)[0]["content"]


def test_headless_the_projects_skills_are_left_out_and_the_users_stand(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    done = reins("run", "go", "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"The project's skills are not offered: {project} is not trusted" in done.stderr
    prompt = system_prompt(project)
    assert "- my-skill: " in prompt
    assert "weekly-report" not in prompt
    done = reins("run", "go", "-m", model, "-w", "ws", "--trust-project", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "- weekly-report: " in system_prompt(project)


def test_always_at_the_terminal_records_the_trust(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: done"])
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [b"a\n"], prompt=b"Use them?"
    )
    assert code == 0, screen
    assert f"{project} sets skills: instructions the model is offered" in screen
    recorded = project.parent / "config" / "reins" / "trusted_projects.json"
    assert json.loads(recorded.read_text()) == {"trusted_projects": [str(project)]}
    # Asked once: the next run trusts the folder without a word.
    code, screen = run_in_terminal(
        project, ["run", "go", "-m", model, "-w", "ws"], [], prompt=b"Use them?"
    )
    assert code == 0, screen
    assert "Use them?" not in screen
    assert "- weekly-report: " in system_prompt(project)


async def test_a_skill_under_the_hidden_config_folder_runs_and_the_rest_stays_hidden(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """~/.config/reins is hidden from commands (it may hold keys); a skill's folder in it is
    shown to them read-only, and nothing else of it."""
    home = tmp_path / "home"
    config = home / ".config" / "reins"
    folder = make_skill(config / "skills", "report", REPORT, {"scripts/hi.sh": "echo hi from $0\n"})
    (config / "config.toml").parent.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('api_key = "sk-secret"\n')
    monkeypatch.setenv("HOME", str(home))
    script_path = (folder / "scripts" / "hi.sh").resolve()
    commands = [
        f"sh {script_path}",
        f"cat {config.resolve() / 'config.toml'}",
        f"echo x > {script_path}",
    ]
    agent = Agent(
        model=ScriptedModel(
            [
                reply(
                    "", *(call("run_command", f"c{i}", command=c) for i, c in enumerate(commands))
                ),
                "done",
            ]
        ),
        tools=BUILTIN_TOOLS,
        workspace=workspace,
        skills=[config / "skills"],
        approval="allow",
    )
    found = results([e async for e in agent.iter("go")])
    assert f"hi from {script_path}" in found["c0"][0]
    assert "No such file" in found["c1"][0]
    assert "sk-secret" not in found["c1"][0]
    assert "Read-only file system" in found["c2"][0]
    assert script_path.read_text() == "echo hi from $0\n"
