"""Compaction: the middle of a long history replaced by a summary of it.

What stays verbatim: the system messages, the last few messages (the cut never separates a tool
result from the call that asked for it), and what must not be lost whatever its age: the run's
goal, the user's steering, the latest failure. What goes is rendered as a transcript and
summarized by a model; without one (offline, or it failed) a deterministic digest takes its
place, so compaction never blocks the loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..core._model import Model, ModelSettings
from ..core._state import STEER_PREFIX

SUMMARY_HEADER = "[Context compacted — summary of the earlier conversation]"
REPLACES = "(In place of your first {replies} replies and what they led to.)"
"""The summary's second line; `reins.testing`'s scripted model reads its count back."""
FAILURE_HEADER = "[Latest failure, from the compacted part of the conversation]"

DIGEST_TOOL_CHARS = 300
DIGEST_MESSAGE_CHARS = 500
DIGEST_CHARS = 4000
TRANSCRIPT_TOOL_CHARS = 1000
TRANSCRIPT_MESSAGE_CHARS = 1500
FAILURE_CHARS = 1000
SUMMARY_TOKENS = 512

SUMMARIZE = """\
You summarize the earlier part of an AI agent's work so that it can go on without it.
Write plain text, at most 250 words, and keep: the user's goal; what was done and decided; the
files created, changed or read that matter; the commands run and what they showed; what failed
and why; what is still open. Do not invent anything the conversation does not say."""

SUMMARIZERS = {"openai": "openai:gpt-4.1-nano", "anthropic": "anthropic:claude-3-5-haiku-latest"}
"""The cheapest catalogued model of each hosted provider: what summarizes for its runs."""
BASE_URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


@dataclass(frozen=True, kw_only=True)
class Cut:
    """Where a view is cut: `view[:system]` are its system messages, `view[system:at]` goes
    (but `pinned`, kept verbatim, and the latest `failure`, told as a note), `view[at:]`
    stays."""

    system: int
    at: int
    pinned: tuple[Message, ...]
    failure: UserMessage | None
    dropped: tuple[Message, ...]


def plan(view: Sequence[Message], *, keep: int, goal: str, kept_before: int) -> Cut | None:
    """The cut that keeps the last `keep` messages, or None: nothing to compact.
    `kept_before`: the first messages of the view that are an earlier compaction's (the cut
    falls after them, or a compaction would only summarize a summary)."""
    system = 0
    while system < len(view) and isinstance(view[system], SystemMessage):
        system += 1
    at = max(len(view) - keep, system)
    while at > system and isinstance(view[at], ToolResultMessage):
        at -= 1  # a result stays with the call that asked for it
    if at <= max(system, kept_before):
        return None
    middle = view[system:at]
    goal_at = next(
        (i for i, m in enumerate(middle) if isinstance(m, UserMessage) and m.content == goal), -1
    )
    kept = {
        i
        for i, m in enumerate(middle)
        if i == goal_at or (isinstance(m, UserMessage) and m.content.startswith(STEER_PREFIX))
    }
    dropped = tuple(m for i, m in enumerate(middle) if i not in kept)
    if not dropped:
        return None
    pinned = tuple(middle[i] for i in sorted(kept))
    failure = _latest_failure(middle)
    return Cut(system=system, at=at, pinned=pinned, failure=failure, dropped=dropped)


def _latest_failure(middle: Sequence[Message]) -> UserMessage | None:
    """The last failed tool call of the compacted part (or the note of an earlier
    compaction's), told as a note: the result alone, without its call, may not be sent."""
    for message in reversed(middle):
        if isinstance(message, ToolResultMessage) and message.is_error:
            content = clip(message.content, FAILURE_CHARS)
            return UserMessage(content=f"{FAILURE_HEADER}\n{message.name}: {content}")
        if isinstance(message, UserMessage) and message.content.startswith(FAILURE_HEADER):
            return message
    return None


def clip(text: str, limit: int, *, note: str = "[… {} characters cut …]", per: int = 1) -> str:
    """`text` cut to about `limit` characters: its head (two thirds) and its tail, with `note`
    saying how much went (in characters, or in units of `per` characters)."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    head = max(limit - tail, 0)
    cut = len(text) - head - tail
    return f"{text[:head]}\n{note.format(-(-cut // per))}\n{text[-tail:]}"


def render(messages: Sequence[Message], *, message_chars: int, tool_chars: int) -> str:
    """Messages as a plain-text transcript, one entry each, each clipped."""
    entries: list[str] = []
    for m in messages:
        match m:
            case AssistantMessage():
                calls = [f"{c.name}({json.dumps(c.arguments)})" for c in m.tool_calls]
                said = clip(m.text, message_chars) if m.text else ""
                calls_text = f" [calls: {'; '.join(calls)}]" if calls else ""
                entries.append(f"assistant: {said}{clip(calls_text, message_chars)}")
            case ToolResultMessage():
                label = "error" if m.is_error else "result"
                entries.append(f"{m.name} {label}: {clip(m.content, tool_chars)}")
            case UserMessage() if m.content.startswith(SUMMARY_HEADER):
                earlier = m.content.split("\n", 2)[-1]  # without its header lines
                entries.append(f"summary of earlier work: {clip(earlier, message_chars)}")
            case _:
                entries.append(f"{m.role}: {clip(m.content, message_chars)}")
    return "\n".join(entries)


def digest(messages: Sequence[Message], limit: int = DIGEST_CHARS) -> str:
    """A summary that needs no model: each message clipped, the whole clipped to `limit`."""
    text = render(messages, message_chars=DIGEST_MESSAGE_CHARS, tool_chars=DIGEST_TOOL_CHARS)
    return clip(text, limit)


def transcript(messages: Sequence[Message], limit: int) -> str:
    text = render(
        messages, message_chars=TRANSCRIPT_MESSAGE_CHARS, tool_chars=TRANSCRIPT_TOOL_CHARS
    )
    return clip(text, limit)


@dataclass(frozen=True, kw_only=True)
class Summary:
    text: str
    usage: Usage
    model: str


async def summarize(model: Model, text: str, max_tokens: int = SUMMARY_TOKENS) -> Summary:
    """The summarizer's summary of a transcript; raises whatever the model raises."""
    settings = ModelSettings(max_tokens=max_tokens, temperature=0.0, tool_choice="none")
    messages: list[Message] = [
        SystemMessage(content=SUMMARIZE),
        UserMessage(content=f"The conversation to summarize:\n\n{text}"),
    ]
    response = await model.request(messages, (), settings)
    summary = response.message.text.strip()
    if not summary:
        raise ValueError("the summarizer answered with no text")
    return Summary(text=summary, usage=response.usage, model=response.model_name)


def summarizer_for(model: str) -> str | None:
    """The model string that summarizes a run of `model` by default: the cheapest catalogued
    model of its hosted provider (not when a base URL points the provider elsewhere); None:
    the run's own model."""
    provider = model.partition(":")[0]
    if provider not in SUMMARIZERS or os.environ.get(BASE_URL_VARIABLES[provider]):
        return None
    return SUMMARIZERS[provider]
