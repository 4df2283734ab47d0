"""`reins` on a pseudo-terminal, answering its prompts as a person would."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

from .test_cli import REINS, _env


def run_in_terminal(
    project: Path, args: list[str], answers: list[bytes], *, prompt: bytes, think: float = 0
) -> tuple[int, str]:
    """`reins ARGS` on a pseudo-terminal; each answer is typed `think` seconds after `prompt`
    shows (once more than there are answers: the child is killed). Returns the exit code and
    the screen, its colours taken out."""
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [*REINS, *args], cwd=project, stdin=follower, stdout=follower, stderr=follower, env=_env()
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
