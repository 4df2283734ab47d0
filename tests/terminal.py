"""`reins` on a pseudo-terminal, answering its prompts as a person would; or in tmux, whose
screen (scrollback too) is what a person sees."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

from .test_cli import REINS, _env


def run_in_terminal(
    project: Path,
    args: list[str],
    answers: list[bytes],
    *,
    prompt: bytes,
    think: float = 0,
    program: list[str] = REINS,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """`reins ARGS` (or `program ARGS`, with `env` added) on a pseudo-terminal; each answer
    is typed `think` seconds after `prompt` shows (once more than there are answers: the child
    is killed). Returns the exit code and the screen, its colours taken out."""
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [*program, *args],
        cwd=project,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**_env(), **(env or {})},
    )
    os.close(follower)
    seen = b""
    prompts = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if seen.count(prompt) > prompts:
                if prompts == len(answers):  # asked once more than the test expects
                    child.kill()
                    break
                time.sleep(think)  # what the screen does meanwhile is read next
                os.write(leader, answers[prompts])
                prompts += 1
        elif child.poll() is not None:
            break
    os.close(leader)
    screen = re.sub(r"\x1b\[[0-9;]*m", "", seen.decode(errors="replace"))
    return child.wait(timeout=10), screen


class Terminal:
    """A tmux server of the test's own, running one command in an 120x50 window."""

    def __init__(self, cwd: Path, command: list[str]) -> None:
        self.socket = f"reins-test-{os.getpid()}-{time.monotonic_ns()}"
        shell = " ".join(_quote(part) for part in command)
        self._tmux(
            "new-session", "-d", "-s", "t", "-x", "120", "-y", "50", "-c", str(cwd),
            f"{shell}; echo EXITED $?; sleep 60",
        )  # fmt: skip

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=_env(),
            check=True,
            timeout=10,
        )
        return done.stdout

    def type(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def line(self, text: str) -> None:
        self.type("-l", text)
        self.type("Enter")

    def screen(self, history: bool = True) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t", *(["-S", "-500"] if history else []))

    def wait_for(self, text: str, count: int = 1, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} (x{count}) never showed:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def _quote(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"
