"""What a run may remember, and where: the policy of the deployment, never the model's.

Three scopes: the user's facts (theirs, in every project), a project's (the repository's) and a
session's. Which a run reads (`recall`) and which it writes (`capture`) come from the config; a
project's `reins.toml` can only narrow what the user's config allows (`narrowed`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, get_args

from ..core._errors import UsageError

if TYPE_CHECKING:
    from ..core._model import Model
    from ._fact import Scope
    from ._vectors import Embeddings

Recall = Literal["all", "writable", "off"]
Capture = Literal["project", "user", "off"]
RECALLS: tuple[Recall, ...] = get_args(Recall)
"""Widest first: a narrowing moves right."""
CAPTURES: tuple[Capture, ...] = ("user", "project", "off")
"""Widest first: the user's facts reach every project, a project's only its own."""
DEFAULT_BUDGET = 400


@dataclass(frozen=True, kw_only=True)
class Memory:
    """Memory across sessions: facts captured from each turn's messages when it ends, recalled
    at the start of a new session ("What you remember") and by the `memory_search` tool.

        Agent(model="local", memory=Memory(capture="project"))
    """

    recall: Recall = "all"
    """Which scopes a run reads: all (the user's, the project's, the session's), writable
    (those it may write: the capture's scope and the session's), or off."""
    capture: Capture = "project"
    """Where the facts of a turn go: the project's scope, the user's, or nowhere (off: no
    model call at a turn's end)."""
    model: str | Model | None = None
    """What extracts the facts: None, the run's model (a hosted one's cheapest sibling, as
    for summaries)."""
    embeddings: str | Embeddings | None = None
    """Recall by meaning besides words: an OpenAI-compatible embedding model (`Embeddings`,
    or a string the agent resolves: `openai:NAME`, `ollama:NAME`, `ENDPOINT:NAME`,
    `http(s)://HOST/v1`); None: by words alone (BM25)."""
    budget: int = DEFAULT_BUDGET
    """Tokens the "What you remember" section may take."""
    redact: tuple[str, ...] = ()
    """Your redaction rules (RE2 regexes): a fact that matches one is never kept, besides
    the keys, tokens and passwords found by pattern."""
    timeout: float = 5.0
    """Seconds to wait for the memory's database when another process holds it."""
    path: Path | None = None
    """The file of the project's and sessions' facts; None: `memory.db` in the log's folder."""
    user_path: Path | None = None
    """The file of the user's facts; None: `memory.db` in the user's data folder."""

    def __post_init__(self) -> None:
        if self.recall not in RECALLS:
            raise UsageError(f"memory recall={self.recall!r}: say {', '.join(RECALLS)}")
        if self.capture not in CAPTURES:
            raise UsageError(f"memory capture={self.capture!r}: say project, user or off")
        if self.budget < 0:
            raise UsageError(f"memory budget={self.budget!r}: a number of tokens, 0 or more")
        if not self.timeout > 0:
            raise UsageError(f"memory timeout={self.timeout!r}: seconds above 0")

    def narrowed(self, *, recall: str | None = None, capture: str | None = None) -> Memory:
        """These settings with a project's asks applied as far as they narrow them: a project
        cannot read or write more than its user allows, so a wider ask is ignored."""
        if recall is not None and recall not in RECALLS:
            raise UsageError(f"memory recall={recall!r}: say {', '.join(RECALLS)}")
        if capture is not None and capture not in CAPTURES:
            raise UsageError(f"memory capture={capture!r}: say project, user or off")
        return replace(
            self,
            recall=narrower(RECALLS, self.recall, recall),
            capture=narrower(CAPTURES, self.capture, capture),
        )

    def written(self, project: str) -> tuple[Scope, str] | None:
        """The scope a capture writes to, and whose it is; None: captures are off."""
        match self.capture:
            case "user":
                return ("user", "")
            case "project":
                return ("project", project)
            case "off":
                return None

    def readable(self, project: str, session: str | None) -> list[tuple[Scope, str]]:
        """The scopes a run of `session` in `project` reads, and whose each is."""
        own: list[tuple[Scope, str]] = [("session", session)] if session else []
        match self.recall:
            case "off":
                return []
            case "writable":
                written = self.written(project)
                return [*([written] if written else []), *own]
            case "all":
                return [("user", ""), ("project", project), *own]


T = TypeVar("T", bound=str)


def narrower(options: tuple[T, ...], have: T, asked: str | None) -> T:
    """`asked` if it is narrower than `have` (further right in `options`), else `have`."""
    for option in options[options.index(have) + 1 :]:
        if option == asked:
            return option
    return have
