"""Memory's error types, in the project's tree (`reins.core._errors`)::

    ReinsError
    ├── RunError
    │   └── MemoryStoreError  the memory file cannot be read or written (locked past the
    │                         timeout, damaged, unreadable, from a newer reins)
    └── UsageError
        └── FactError         an id that matches no fact or several; a change a fact cannot
                              take (closing a closed one); a fact that is not well formed

A store that fails stops what asked for it: the user must act (wait, free the file, move it
aside), so its error is a `RunError`, never an observation the model could fix. A wrong id or
a closed fact is the caller's mistake: the tool that gets one passes it on to the model.
"""

from __future__ import annotations

from ..core._errors import RunError, UsageError


class MemoryStoreError(RunError):
    """The memory store cannot be read or written; the message names the file and says what
    to do."""


class FactError(UsageError):
    """No fact or several match an id, a fact cannot take a change, or one is not well formed."""
