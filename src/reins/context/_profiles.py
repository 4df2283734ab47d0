"""Which profile a goal calls for, when none is chosen: a small deterministic classifier.

Each kind of work has its words; the kind whose words the goal uses most wins (ties go to the
earlier kind), and a goal that uses none of them infers nothing. A profile chosen by name always
wins over this guess.
"""

from __future__ import annotations

import re

KINDS: dict[str, tuple[str, ...]] = {
    "coding": (
        "code", "function", "class", "method", "bug", "fix", "test", "tests", "refactor",
        "implement", "compile", "build", "lint", "type", "exception", "traceback", "stack",
        "api", "module", "package", "script", "python", "javascript", "typescript", "rust",
        "repo", "repository", "commit", "pr", "debug", "failing", "error",
    ),
    "research": (
        "research", "investigate", "find out", "compare", "comparison", "survey", "sources",
        "evidence", "why", "what is", "how does", "explain", "analyze", "analyse", "study",
        "look up", "learn", "overview", "pros and cons",
    ),
    "writing": (
        "write", "draft", "rewrite", "essay", "article", "blog", "post", "email", "letter",
        "story", "poem", "proofread", "edit the text", "tone", "summary", "summarize",
        "announcement", "copy", "prose",
    ),
    "ops": (
        "deploy", "deployment", "server", "docker", "container", "kubernetes", "install",
        "configure", "config", "service", "logs", "disk", "cron", "backup", "nginx",
        "ssl", "dns", "monitoring", "restart",
    ),
}  # fmt: skip
_PATTERNS = {
    kind: re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)
    for kind, words in KINDS.items()
}
_FILES = re.compile(r"(?<![\w/.-])[/.-]*+\w[\w/.-]*\.(?:py|js|ts|rs|go|java|c|cpp|h|rb|sh)\b")
"""A path naming a source file, tried from the path's start only: `\\b[\\w/.-]+` was tried from
each `\\b` in it, and each `.` of `a.a.a…` began a try to its end (quadratic)."""


def infer_profile(goal: str) -> str | None:
    """The kind of work `goal` asks for (`coding`, `research`, `writing`, `ops`), or None."""
    scores = {kind: len(pattern.findall(goal)) for kind, pattern in _PATTERNS.items()}
    scores["coding"] += 2 * len(_FILES.findall(goal))  # a source file named: coding
    best = max(scores, key=lambda kind: scores[kind])  # the first of equals
    return best if scores[best] else None
