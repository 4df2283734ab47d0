"""A project's checks and stop hooks run only once the user trusts the project: by
--trust-project, in their own config, or by answering yes at the terminal; headless, refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .terminal import run_in_terminal
from .test_cli import reins, script
from .test_store_cli import one_line_error

PROJECT_COMMANDS = 'checks = ["touch checked"]\n[[stop_hooks]]\ncommand = "touch hooked"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository with a reins.toml that sets commands; the user's config is empty."""
    folder = (tmp_path / "repo").resolve()
    (folder / "ws").mkdir(parents=True)
    (folder / "reins.toml").write_text(PROJECT_COMMANDS)
    script(folder / "s.json", ["FINAL_ANSWER: done"])
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the child's user config
    return folder


def user_config(project: Path, text: str) -> Path:
    path = project.parent / "config" / "reins" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


RUN = ("run", "go", "-m", "script:s.json", "-w", "ws")


def ran(project: Path) -> set[str]:
    return {p.name for p in (project / "ws").iterdir()}


def test_untrusted_project_commands_are_refused_headless_and_nothing_runs(project: Path) -> None:
    done = reins(*RUN, cwd=project)
    assert done.returncode == 2, done.stdout
    config = project.parent / "config" / "reins" / "config.toml"
    assert one_line_error(done) == (
        f"error: {project / 'reins.toml'} sets commands that run when the agent says it is done "
        "(check `touch checked`; stop hook `touch hooked`), and this project is not trusted: "
        f'to run them, pass --trust-project, or add "{project}" to trusted_projects in {config}'
    )
    assert done.stdout == ""
    assert ran(project) == set()
    assert not (project / ".reins").exists()  # refused before the log is opened


def test_trust_project_runs_them(project: Path) -> None:
    done = reins(*RUN, "--trust-project", cwd=project)
    assert done.returncode == 0, done.stderr
    assert ran(project) == {"checked", "hooked"}
    assert "check `touch checked` passed" in done.stdout


def test_the_users_config_trusts_a_project_by_its_folder(project: Path) -> None:
    user_config(project, f"trusted_projects = [{json.dumps(str(project.parent))}]\n")
    assert reins(*RUN, cwd=project).returncode == 2  # the folder above is another folder

    user_config(project, f"trusted_projects = [{json.dumps(str(project))}]\n")
    done = reins(*RUN, cwd=project)
    assert done.returncode == 0, done.stderr
    assert ran(project) == {"checked", "hooked"}


def test_commands_from_the_command_line_and_the_users_config_need_no_trust(
    project: Path,
) -> None:
    (project / "reins.toml").write_text("stop_max_rejections = 1\n")  # no commands
    user_config(project, 'checks = ["touch mine"]\n[[stop_hooks]]\ncommand = "touch my-hook"\n')
    done = reins(*RUN, "--check", "touch flag", cwd=project)
    assert done.returncode == 0, done.stderr
    assert ran(project) == {"mine", "flag", "my-hook"}


@pytest.mark.parametrize(
    "toml",
    [
        'trusted_projects = ["."]\n',
        "trusted_projects = []\n",
        'project_commands = {path = "reins.toml"}\n',
    ],
)
def test_a_project_file_cannot_trust_itself(project: Path, toml: str) -> None:
    (project / "reins.toml").write_text(toml + PROJECT_COMMANDS)
    done = reins(*RUN, cwd=project)
    assert done.returncode == 2
    error = one_line_error(done)
    if "trusted_projects" in toml:
        assert error == (
            f"error: {project / 'reins.toml'}: trusted_projects: a project file cannot trust "
            f"itself (or any project); trust a project in "
            f"{project.parent / 'config' / 'reins' / 'config.toml'}, or pass --trust-project"
        )
    else:
        assert "project_commands: Extra inputs are not permitted" in error
    assert ran(project) == set()


def test_resume_asks_for_trust_of_the_stop_hooks_only(project: Path) -> None:
    (project / "reins.toml").write_text(
        "stop_max_rejections = 0\n"
        + PROJECT_COMMANDS
        + '[[stop_hooks]]\ncommand = "test -f ok || { echo make ok >&2; exit 2; }"\n'
    )
    done = reins(*RUN, "--trust-project", cwd=project)
    assert done.returncode == 9, done.stderr  # missing_evidence: the second hook rejected
    (project / "ws" / "ok").write_text("")
    refused = reins("resume", "last", cwd=project)
    assert refused.returncode == 2
    error = one_line_error(refused)
    assert "(stop hook `touch hooked`; stop hook `test -f ok" in error  # a run's checks: its log
    done = reins("resume", "last", "--trust-project", cwd=project)
    assert done.returncode == 0, done.stderr


def test_what_is_shown_is_what_runs(project: Path) -> None:
    (project / "reins.toml").write_text('checks = ["true\\u001b[2K\\rrm -rf ~", "a\\nb"]\n')
    done = reins(*RUN, cwd=project)
    assert done.returncode == 2
    assert "(check `true\\x1b[2K\\rrm -rf ~`; check `a\\nb`)" in one_line_error(done)


PROMPT = b"Run them?"


def test_the_terminal_shows_the_commands_and_yes_runs_them(project: Path) -> None:
    code, screen = run_in_terminal(project, list(RUN), [b"y\n"], prompt=PROMPT)
    assert code == 0, screen
    assert f"{project / 'reins.toml'} sets commands that run, unasked" in screen
    assert "  check      touch checked\r\n  stop hook  touch hooked\r\n" in screen
    assert f'for good, add "{project}" to trusted_projects' in screen
    assert screen.count("Run them?") == 1
    assert ran(project) == {"checked", "hooked"}


def test_the_terminal_answering_no_runs_without_them(project: Path) -> None:
    user_config(project, 'checks = ["touch mine"]\n')
    code, screen = run_in_terminal(project, list(RUN), [b"maybe\n", b"n\n"], prompt=PROMPT)
    assert code == 0, screen
    assert screen.count("Run them?") == 2  # an unknown answer is asked again
    assert "Running without the project's checks and stop hooks." in screen
    assert ran(project) == {"mine"}  # the user's own check still stands


def test_the_terminal_closed_at_the_prompt_is_a_refusal(project: Path) -> None:
    code, screen = run_in_terminal(project, list(RUN), [b"\x04"], prompt=PROMPT)
    assert code == 2, screen
    assert "this project is not trusted" in screen
    assert ran(project) == set()
    assert not (project / ".reins").exists()
