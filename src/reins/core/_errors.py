"""The project's error types.

Every error reins raises derives from `ReinsError`, split by who must act::

    ReinsError
    ├── ToolError            retry-to-model: becomes an observation the model can act on
    │   └── SandboxUnavailable  no OS sandbox here for commands (says how to get one)
    ├── RunError             stop-the-run: the run ends with stop reason `error`, resumable
    │   ├── ContextTooLarge  the next request cannot fit the model's window, even compacted
    │   ├── ModelError       the model call failed
    │   │   ├── ModelHTTPError        the server answered with an error status
    │   │   ├── ModelConnectionError  no answer: refused, reset, dropped
    │   │   └── ModelTimeout          no first chunk, or a stalled stream
    │   └── StoreError       the event log cannot be read or written (disk full, read-only)
    │       ├── LogCorrupted a database or journal failed its checks (`reins doctor`)
    │       ├── LogUnverified  a session not signed with the user's key: read, never continued
    │       └── SessionBusy  another run of the session is going on, here or elsewhere
    └── UsageError           developer misuse: bad configuration or input, fix and retry
        ├── UnknownModel     a model string no provider understands
        ├── ScriptError      a malformed `script:` file
        ├── WorkspaceError   a missing or unusable workspace
        └── RunNotFound      no run or session matches an id
"""

from __future__ import annotations


class ReinsError(Exception):
    """Base of every error raised by reins."""


class ToolError(ReinsError):
    """A tool failed in a way the model can fix; the message is its observation."""


class SandboxUnavailable(ToolError):
    """Commands are refused: this machine has no usable OS sandbox and the policy asks for one."""


class RunError(ReinsError):
    """The run cannot go on; it stops with reason `error` and can be resumed."""


class ContextTooLarge(RunError):
    """The next request cannot fit the model's context window, even after compaction."""


class ModelError(RunError):
    """The model call failed."""

    @property
    def transient(self) -> bool:
        """Worth retrying: the same request may well succeed a moment later."""
        return False


class ModelHTTPError(ModelError):
    """The model's server answered with an error status."""

    def __init__(self, status: int, body: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body
        self.retry_after = retry_after
        """Seconds the server asked us to wait (Retry-After), if it said."""

    @property
    def transient(self) -> bool:
        return self.status in (408, 409, 429) or self.status >= 500


class ModelConnectionError(ModelError):
    """The connection to the model's server failed or was dropped."""

    @property
    def transient(self) -> bool:
        return True


class ModelTimeout(ModelError):
    """The model sent no first chunk in time, or its stream stalled; the stream was closed."""

    @property
    def transient(self) -> bool:
        return True


class StoreError(RunError):
    """The event log could not be read or written."""


class LogCorrupted(StoreError):
    """The database or a JSONL mirror failed an integrity check."""


class LogUnverified(StoreError):
    """A session's journal is not signed with the user's key (written before logs were
    signed, or in another store, or by another user): it can be read, not continued."""


class SessionBusy(StoreError):
    """A session takes one turn at a time: another run of it is going on."""


class UsageError(ReinsError):
    """The caller passed something unusable; the message says what and how to fix it."""


class UnknownModel(UsageError):
    """No provider understands the model string."""


class ScriptError(UsageError):
    """A scripted-model file is missing or malformed."""


class WorkspaceError(UsageError):
    """The workspace does not exist or is not a directory."""


class RunNotFound(UsageError):
    """No run or session matches the id given."""
