"""`reins` with more tools, two of which never return, for test_runaway:

python -m tests.hostile.stuck_tools ARGS...   (the arguments of `reins`)

spin: Python code in a loop, which lets the GIL go between bytecodes (the event loop runs on);
hold: a backtracking match of Python's `re`, in C, holding the GIL (nothing else runs);
quick: returns at once;
nap: waits, the event loop free (an async tool).
Each times out after $STUCK_TIMEOUT seconds; the watchdog's grace is $STUCK_GRACE seconds.
"""

from __future__ import annotations

import asyncio
import os
import re

from reins import tool
from reins.core import _threads
from reins.tools import _builtin

TIMEOUT = float(os.environ.get("STUCK_TIMEOUT", "1"))


@tool(read_only=True, timeout=TIMEOUT)
def spin() -> str:
    """Compute for ever."""
    n = 0
    while True:
        n += 1


@tool(read_only=True, timeout=TIMEOUT)
def hold() -> str:
    """Match a regular expression that backtracks for ever."""
    return str(re.match(r"(a*)*b", "a" * 40))


@tool(read_only=True, timeout=TIMEOUT)
def quick() -> str:
    """Return at once."""
    return "done"


@tool(read_only=True)
async def nap(seconds: float) -> str:
    """Wait."""
    await asyncio.sleep(seconds)
    return "rested"


_builtin.BUILTIN_TOOLS = (*_builtin.BUILTIN_TOOLS, spin, hold, quick, nap)
_threads.GRACE = float(os.environ.get("STUCK_GRACE", "1"))

if __name__ == "__main__":
    from reins.cli import main

    main()
