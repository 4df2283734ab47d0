"""Runs a scripted agent in a child process and kills itself with SIGKILL at a chosen point.

python -m tests.crash_driver STORE WORKSPACE KILL_AT   (KILL_AT: the seq of the event after
which to die, 0 for never, -1 inside a tool that writes)
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from reins import Agent, SQLiteLog, tool
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS

from .helpers import call, reply

KILL_IN_TOOL = -1

SCRIPT = [
    reply("Write it.", call("write_file", "w1", path="a.txt", content="A\n")),
    reply(
        "Look three ways at once.",
        call("read_file", "r1", path="a.txt"),
        call("list_files", "r2"),
        call("grep", "r3", pattern="A"),
    ),
    reply("Edit.", call("edit_file", "e1", path="a.txt", old="A", new="AA")),
    reply("Note progress.", call("checkpoint", "c1")),
    reply("", call("final_answer", "f1", answer="a.txt says AA")),
]


def make_agent(store: str, workspace: str, kill_at: int = 0) -> Agent:
    @tool
    def checkpoint() -> str:
        """Note progress in a file."""
        with open(os.path.join(workspace, "progress.txt"), "a") as f:
            f.write("checked\n")
        if kill_at == KILL_IN_TOOL:
            os.kill(os.getpid(), signal.SIGKILL)
        return "checked"

    return Agent(
        model=ScriptedModel(SCRIPT),
        tools=[*BUILTIN_TOOLS, checkpoint],
        workspace=workspace,
        log=SQLiteLog(store),
    )


async def main(store: str, workspace: str, kill_at: int) -> None:
    agent = make_agent(store, workspace, kill_at)
    async for event in agent.iter("make a.txt say AA"):
        if event.seq == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    await agent.log.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
