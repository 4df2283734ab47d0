"""Tab completion and help, as a shell meets them: the script for the shell named, the
protocol each shell's script speaks (a real `reins` process asked as the script asks it), and
bash, zsh and fish themselves running the script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reins import Agent, SQLiteLog
from reins.testing import ScriptedModel

REINS = [sys.executable, "-m", "reins"]


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment with a `reins` command on PATH (these sources), as a user's shell has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "reins"
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m reins "$@"\n')
    command.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REINS_", "_REINS"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["COLUMNS"] = "200"
    return env


def asked(env: dict[str, str], shell: str, line: str) -> subprocess.CompletedProcess[str]:
    """`reins` asked for the completions of `line` (the cursor at its end) as `shell`'s
    script asks: bash by COMP_WORDS and COMP_CWORD, zsh and fish by the line."""
    words = line.split()
    if line.endswith(" "):
        words.append("")
    extra = {
        "bash": {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1)},
        "zsh": {"_TYPER_COMPLETE_ARGS": line},
        "fish": {"_TYPER_COMPLETE_ARGS": line, "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
    }[shell]
    return subprocess.run(
        ["reins"],
        env={**env, **extra, "_REINS_COMPLETE": f"complete_{shell}"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def offered(env: dict[str, str], shell: str, line: str) -> list[str]:
    done = asked(env, shell, line)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    if shell == "bash":
        return done.stdout.split()
    if shell == "fish":
        return [row.split("\t")[0] for row in done.stdout.splitlines() if row]
    # zsh: _arguments '*: :(("value":"help" ...))', one value a line; else _files
    if done.stdout.strip() == "_files":
        return []
    body = done.stdout.strip().removeprefix("_arguments '*: :((").removesuffix("))'")
    return [row.split('":"')[0].strip('"').replace("\\\\:", ":") for row in body.splitlines()]


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F _reins_completion reins"),
        ("zsh", "#compdef reins"),
        ("fish", "complete --command reins"),
    ],
)
def test_show_completion_prints_the_script_of_the_shell_named(
    on_path: dict[str, str], shell: str, marker: str
) -> None:
    done = subprocess.run(
        ["reins", "--show-completion", shell], env=on_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout
    assert f"_REINS_COMPLETE=complete_{shell}" in done.stdout
    for other in {"bash", "zsh", "fish"} - {shell}:
        assert f"complete_{other}" not in done.stdout


def test_an_unknown_shell_is_one_clear_error(on_path: dict[str, str], tmp_path: Path) -> None:
    for flag in ("--show-completion", "--install-completion"):
        done = subprocess.run(
            ["reins", flag, "tcsh"], env=on_path, capture_output=True, text=True, cwd=tmp_path
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "error: reins completes in bash, zsh, fish, powershell, pwsh, not 'tcsh': name one "
            "of them\n"
        )


def test_install_completion_writes_the_script_for_the_shell_named(
    on_path: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**on_path, "HOME": str(home)}
    done = subprocess.run(
        ["reins", "--install-completion", "fish"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    installed = home / ".config" / "fish" / "completions" / "reins.fish"
    assert "complete --command reins" in installed.read_text()
    assert not (home / ".bashrc").exists()
    assert not (home / ".zshrc").exists()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_option_values_complete_in_each_shell(on_path: dict[str, str], shell: str) -> None:
    assert offered(on_path, shell, "reins run --mode ") == [
        "explore",
        "plan",
        "write-test",
        "write-no-test",
    ]
    assert offered(on_path, shell, "reins run --sandbox w") == ["workspace-write"]
    assert offered(on_path, shell, "reins chat --sandbox ") == [
        "read-only",
        "workspace-write",
        "danger-full-access",
    ]
    assert offered(on_path, shell, "reins resume x --no-guard lo") == ["loop"]
    assert offered(on_path, shell, "reins run --guard one") == ["one-call"]
    models = offered(on_path, shell, "reins run --model ")
    assert {"local", "openai:gpt-4o-mini", "anthropic:claude-sonnet-4", "script:"} <= set(models)
    assert offered(on_path, shell, "reins run -m anthropic:claude-s") == [
        "anthropic:claude-sonnet-4"
    ]
    assert offered(on_path, shell, "reins --show-completion z") == ["zsh"]


@pytest.fixture
async def store(tmp_path: Path) -> tuple[Path, list[str], list[str]]:
    """A log with two sessions, the first of two runs: (its folder, run ids, session ids)."""
    (tmp_path / "ws").mkdir()
    log = SQLiteLog(tmp_path / "store")
    agent = Agent(model=ScriptedModel(["one", "two", "three"]), workspace=tmp_path / "ws", log=log)
    first = await agent.run("first goal")
    second = await agent.run("second goal", session_id=first.session_id)
    third = await agent.run("third goal")
    await log.close()
    runs = [first.run_id, second.run_id, third.run_id]
    return tmp_path / "store", runs, [first.session_id, third.session_id]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_run_and_session_ids_complete_from_the_log(
    on_path: dict[str, str], store: tuple[Path, list[str], list[str]], shell: str
) -> None:
    folder, runs, sessions = store
    shown = [i[:7] for i in runs]  # each id's shortest unique prefix
    for command in ("show", "replay", "resume"):
        line = f"reins {command} --store {folder} "
        assert offered(on_path, shell, line) == ["last", *reversed(shown)]  # the latest first
    # a prefix only the second run has (ids are random: two may share their first characters)
    typed = next(runs[1][:n] for n in range(3, 8) if [r[:n] for r in runs].count(runs[1][:n]) == 1)
    assert offered(on_path, shell, f"reins show --store {folder} {typed}") == [shown[1]]
    by_env = {**on_path, "REINS_STORE": str(folder)}
    assert offered(by_env, shell, "reins compact ") == ["last", sessions[1][:7], sessions[0][:7]]
    assert offered(by_env, shell, "reins run go -s ") == ["last", sessions[1][:7], sessions[0][:7]]
    assert offered(by_env, shell, "reins sessions rm x ") == [
        "last",
        sessions[1][:7],
        sessions[0][:7],
    ]
    assert offered(by_env, shell, "reins show s") == []  # a run is asked for: no session


def test_completion_offers_nothing_rather_than_fail(
    on_path: dict[str, str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "reins.db").write_bytes(b"not a database, " * 100)
    unreadable = tmp_path / "unreadable"
    unreadable.mkdir()
    for line in (
        f"reins show --store {broken} ",
        f"reins show --store {tmp_path / 'none'} ",
        f"reins compact --store {unreadable} ",
        "reins show ",  # the current folder's log: there is none
    ):
        for shell in ("bash", "zsh", "fish"):
            done = asked(on_path, shell, line)
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
            assert "Traceback" not in done.stdout
    assert not (tmp_path / "none").exists()  # completion made no log


def _script(env: dict[str, str], shell: str) -> str:
    done = subprocess.run(
        ["reins", "--show-completion", shell], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_bash_runs_the_script_and_completes(on_path: dict[str, str], tmp_path: Path) -> None:
    """The script bash sources: registered for `reins`, and its function, called as bash calls
    it at a Tab, fills COMPREPLY."""
    script = tmp_path / "reins.bash"
    script.write_text(_script(on_path, "bash"))
    probe = f"""
source {script}
complete -p reins
tab() {{ COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _reins_completion reins
         echo "[${{COMPREPLY[*]}}]"; }}
tab reins run --mode w
tab reins run --sandbox ''
tab reins --show-completion f
tab reins sess
tab reins run --model anthropic : claude-so
tab reins run --model openai :
"""
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        env=on_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "complete -o default -F _reins_completion reins",
        "[write-test write-no-test]",
        "[read-only workspace-write danger-full-access]",
        "[fish]",
        "[sessions]",
        # bash splits `anthropic:claude-so` at the colon (COMP_WORDBREAKS) and replaces only
        # the word after it; `openai:` alone is the word `:`.
        "[claude-sonnet-4]",
        "[:gpt-4o :gpt-4o-mini :gpt-4.1 :gpt-5 :o3 :o4-mini]",
    ]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (make system)")
def test_zsh_runs_the_script_and_completes(on_path: dict[str, str], tmp_path: Path) -> None:
    """zsh sources the script (compdef registers it) and its function, called with the words
    zsh gives it, hands _arguments the values to offer."""
    script = tmp_path / "_reins"
    script.write_text(_script(on_path, "zsh"))
    probe = f"""
compdef() {{ print "compdef $*" }}
_arguments() {{ print -r -- "$@" }}
source {script}
words=(reins run --sandbox r); CURRENT=4; _reins_completion
"""
    done = subprocess.run(
        ["zsh", "-f", "-c", probe], env=on_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "compdef _reins_completion reins",
        '*: :(("read-only":"commands read the workspace, write nothing"))',
    ]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (make system)")
def test_fish_runs_the_script_and_completes(on_path: dict[str, str], tmp_path: Path) -> None:
    """fish itself completes a command line (`complete -C`) with the script loaded."""
    script = tmp_path / "reins.fish"
    script.write_text(_script(on_path, "fish"))
    probe = f"source {script}; complete -C 'reins run --mode pl'; complete -C 'reins chat --sa'"
    done = subprocess.run(
        ["fish", "--no-config", "-c", probe],
        env={**on_path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plan, sandbox = done.stdout.splitlines()
    assert plan == "plan\tread-only"
    assert sandbox.startswith("--sandbox\tWhat commands may do")


COMMANDS = [
    [],
    *(
        [name]
        for name in (
            "run",
            "resume",
            "show",
            "fork",
            "compact",
            "replay",
            "doctor",
            "chat",
            "serve",
            "acp",
            "eval",
        )
    ),
    ["sessions"],
    ["sessions", "rm"],
    ["sessions", "prune"],
    ["mcp"],
    ["mcp", "list"],
    ["mcp", "serve"],
]


def test_help_names_what_each_option_takes_without_type_noise(on_path: dict[str, str]) -> None:
    for command in COMMANDS:
        done = subprocess.run(
            ["reins", *command, "--help"], env=on_path, capture_output=True, text=True
        )
        assert done.returncode == 0, (command, done.stderr)
        for noise in ("<bool>", "<str>", "<path>", "<int", "<float>", "<list"):
            assert noise not in done.stdout, (command, noise, done.stdout)
    run = subprocess.run(["reins", "run", "--help"], env=on_path, capture_output=True, text=True)
    lines = [" ".join(line.strip("│ ").split()) for line in run.stdout.splitlines()]
    assert any(line.startswith("--model -m MODEL ") for line in lines), run.stdout
    assert any(line.startswith("--mode MODE explore/plan") for line in lines), run.stdout
    assert any(line.startswith("--store DIR|URL ") for line in lines), run.stdout
    assert any(line.startswith("--max-steps N ") for line in lines), run.stdout
    assert any(line.startswith("--yes -y Approve") for line in lines), run.stdout
    assert any(line.startswith("* GOAL What the agent") for line in lines), run.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make system)")
def test_bash_at_a_terminal_completes_on_tab(on_path: dict[str, str], tmp_path: Path) -> None:
    """An interactive bash in a terminal, the script sourced: Tab completes as a user sees it
    (a model's name after its provider's colon too, which bash splits the word at)."""
    from .terminal import Terminal

    script = tmp_path / "reins.bash"
    script.write_text(_script(on_path, "bash"))
    bash = ["env", f"PATH={on_path['PATH']}", "bash", "--norc", "--noprofile"]
    terminal = Terminal(tmp_path, bash)
    try:
        terminal.line(f"source {script}; echo SOURCED")
        terminal.wait_for("SOURCED", count=2)  # the line typed, then its output
        terminal.type("-l", "reins run --model anthropic:claude-so")
        terminal.type("Tab")
        terminal.wait_for("reins run --model anthropic:claude-sonnet-4", timeout=60)
        terminal.type("C-u")
        terminal.type("-l", "reins run --sandbox da")
        terminal.type("Tab")
        terminal.wait_for("reins run --sandbox danger-full-access", timeout=60)
    finally:
        terminal.close()
