"""What a client sends: the bodies of the API's requests, checked by pydantic (a bad field is
a 422 naming it)."""

from __future__ import annotations

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field

TEXT = 100_000
"""The longest goal, steer or answer taken, in characters."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is said, not ignored


class RunRequest(_Body):
    """A run to start: its goal, the session it continues (else a new one), and what it runs
    on where the server's defaults are not wanted."""

    goal: str = Field(min_length=1, max_length=TEXT)
    session_id: str | None = None
    model: str | None = Field(default=None, min_length=1, max_length=500)
    """A model string (`openai:gpt-4o-mini`, `local`, ...); none: the server's."""
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    """A folder inside the server's workspace (relative to it, or absolute under it); none:
    the server's workspace itself."""
    mode: str | None = Field(default=None, min_length=1, max_length=40)
    """`explore`, `plan`, `write-test` or `write-no-test`; none: no mode."""
    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    """At most the server's own cap."""
    time_budget: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    """Seconds."""
    webhook: AnyHttpUrl | None = None
    """Told (a POST of the run's view, signed) when the run finishes or waits."""


class ResumeRequest(_Body):
    """A run to go on: new caps (totals for the run; none: the one that stopped it grows by
    as much again), and answers to what it waits on."""

    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    time_budget: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    token_budget: int | None = Field(default=None, ge=1)
    cost_budget: float | None = Field(default=None, gt=0)
    approvals: dict[str, bool] = Field(default_factory=dict[str, bool])
    """Call id → allowed, for the approvals it waits on."""
    answers: dict[str, str | None] = Field(default_factory=dict[str, str | None])
    """Call id → answer (none: dismissed), for its questions."""


class Started(BaseModel):
    run_id: str
    session_id: str


class SteerRequest(_Body):
    text: str = Field(min_length=1, max_length=TEXT)


class ApprovalAnswer(_Body):
    approve: bool
    always: bool = False
    """Allow what the request names for the rest of the session (not for a write to a file
    that runs code later: only this call)."""


class QuestionAnswer(_Body):
    text: str | None = Field(default=None, max_length=TEXT)
    """The answer; none (or blank): dismissed, the model goes on with its default."""
