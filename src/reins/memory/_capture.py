"""Capture: a turn's new messages read for facts worth keeping, in one model call that both
extracts them and reconciles each with the similar facts kept (add, update, invalidate; what
it leaves out is a no-op).

The model proposes; the harness decides. A change is kept only if the words it quotes as its
evidence are in the conversation (only what was said or observed, no inference), it holds no
secret, and it is not a fact kept already. What was kept, and why the rest was not, is what
the loop records as `memory_updated`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..context._compaction import clip, render
from ..core._catalog import price, served_at
from ..core._events import MemoryChange
from ..core._messages import (
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ..core._model import Model, ModelSettings
from ..core._state import RunState
from ._fact import Fact, Scope
from ._memories import Memories
from ._secrets import secret_in

REMEMBER = "remember"
CONVERSATION_CHARS = 6000
MESSAGE_CHARS = 800
TOOL_CHARS = 300
KNOWN_FACTS = 10
MAX_CHANGES = 4
"""Changes a capture may make: also what the embedded model's grammar holds the call to (a
list of long strings repeated many times makes llama.cpp's grammar sampler crawl)."""
EVIDENCE_CHARS, FACT_CHARS = 120, 160
EXTRACT_TOKENS = 400

EXTRACT = """\
You keep an AI agent's long-term memory: facts about the user and the project that will be \
worth knowing in a later conversation.
Read the conversation and call remember with the changes to the facts kept:
- add: a new fact the user said or a tool result showed, short and self-contained.
- update: a kept fact (give its number) the conversation shows has changed; write the fact \
as it is now.
- invalidate: a kept fact (give its number) the conversation shows is no longer true.
Only what was said or observed: no guesses, nothing about how this task went, no greetings, \
no passwords, keys or tokens. In evidence, copy the exact words of the conversation the \
change rests on. For add, number is 0. Nothing worth keeping: call remember with no changes.

Example. Facts kept now:
1. The user's editor is vim.
The conversation:
user: I switched to emacs last week. Our CI runs on GitHub Actions. Thanks!
The call:
{"name": "remember", "arguments": {"changes": [\
{"op": "update", "number": 1, "evidence": "I switched to emacs", \
"fact": "The user's editor is emacs."}, \
{"op": "add", "number": 0, "evidence": "Our CI runs on GitHub Actions", \
"fact": "The project's CI runs on GitHub Actions."}]}}"""


class _Proposed(BaseModel):
    model_config = ConfigDict(extra="ignore")

    op: Literal["add", "update", "invalidate"]
    number: int = 0
    evidence: str = ""
    fact: str = ""


class _Remember(BaseModel):
    model_config = ConfigDict(extra="ignore")

    changes: list[_Proposed] = Field(default_factory=list[_Proposed])


REMEMBER_SPEC = ToolSpec(
    name=REMEMBER,
    description="Record the changes to the facts kept across sessions.",
    parameters={
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "maxItems": MAX_CHANGES,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": ["add", "update", "invalidate"]},
                        "number": {
                            "type": "integer",
                            "description": "The kept fact's number; 0 for add.",
                        },
                        "evidence": {
                            "type": "string",
                            "maxLength": EVIDENCE_CHARS,
                            "description": "The exact words of the conversation it rests on.",
                        },
                        "fact": {
                            "type": "string",
                            "maxLength": FACT_CHARS,
                            "description": "The fact, as it is now (for add and update).",
                        },
                    },
                    "required": ["op", "number", "evidence", "fact"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["changes"],
        "additionalProperties": False,
    },
)


@dataclass(kw_only=True)
class Capture:
    """The loop's `Remembers`: reads a run's new messages with `model` and writes what it
    finds to `scope` (whose: `owner`) in `memories`."""

    memories: Memories
    model: Callable[[], Model]
    """The extractor, made when first needed."""
    scope: Scope
    owner: str
    redact: Sequence[str] = ()

    async def capture(self, state: RunState, *, trigger: str) -> dict[str, Any] | None:
        new = [m for m in state.messages[state.remembered :] if not isinstance(m, SystemMessage)]
        if not new:
            return None
        conversation = clip(
            render(new, message_chars=MESSAGE_CHARS, tool_chars=TOOL_CHARS), CONVERSATION_CHARS
        )
        said = " ".join(m.content for m in new if isinstance(m, UserMessage))
        scopes = [(self.scope, self.owner)]
        known = await asyncio.to_thread(
            self.memories.search, said or conversation, scopes=scopes, limit=KNOWN_FACTS
        )
        model = self.model()
        response = await model.request(
            _prompt(known, conversation),
            [REMEMBER_SPEC],
            ModelSettings(tool_choice="required", temperature=0.0, max_tokens=EXTRACT_TOKENS),
        )
        proposed = _proposed(response.message.tool_calls, response.message.text)
        # Evidence is what the user said or a tool showed: the agent's own words are no fact.
        heard = "\n".join(m.content for m in new if isinstance(m, UserMessage | ToolResultMessage))
        decided = _Decision(known, heard, self.redact)
        for change in proposed:
            decided.judge(change)
        applied = await asyncio.to_thread(self._apply, decided.kept, state)
        return {
            "through": len(state.messages),
            "changes": tuple(applied),
            "left_out": tuple(decided.left_out),
            "usage": response.usage,
            "cost": price(response.model_name, response.usage, at=served_at(model)),
            "model": response.model_name,
        }

    def _apply(
        self, kept: list[tuple[_Proposed, Fact | None]], state: RunState
    ) -> list[MemoryChange]:
        """Write the kept changes; the source of each is the event that will record them."""
        source = {"session_id": state.session_id, "run_id": state.run_id, "seq": state.next_seq}
        now = _now()
        changes: list[MemoryChange] = []
        for proposed, old in kept:
            reason = f'"{proposed.evidence}"'
            replaced = None
            match proposed.op:
                case "add":
                    fact = self.memories.add(
                        proposed.fact,
                        scope=self.scope,
                        owner=self.owner,
                        valid_at=now,
                        reason=reason,
                        **source,
                    )
                case "update":
                    assert old is not None
                    closed, fact = self.memories.replace(
                        old, proposed.fact, valid_at=now, reason=reason, **source
                    )
                    replaced = closed.id
                case "invalidate":
                    assert old is not None
                    fact = self.memories.close(old, invalid_at=now, reason=reason)
            changes.append(
                MemoryChange(
                    op=proposed.op,
                    fact=fact.id,
                    text=fact.text,
                    scope=self.scope,
                    replaced=replaced,
                    evidence=proposed.evidence,
                )
            )
        return changes


class _Decision:
    """Which proposed changes are kept, and why the others are not."""

    def __init__(self, known: list[Fact], conversation: str, redact: Sequence[str]) -> None:
        self.known = known
        self.words = _words(conversation)
        self.conversation = " ".join(self.words)
        self.redact = redact
        self.kept: list[tuple[_Proposed, Fact | None]] = []
        self.left_out: list[str] = []
        self._texts = {_normal(f.text) for f in known}
        self._touched: set[str] = set()

    def judge(self, change: _Proposed) -> None:
        """Keep `change`, or say why not (in `left_out`)."""
        old = self.known[change.number - 1] if 1 <= change.number <= len(self.known) else None
        if change.op == "update" and old is None:  # what changed is unknown; the news is not
            change = change.model_copy(update={"op": "add", "number": 0})
        text = " ".join(change.fact.split())
        if (why := self._refusal(change, old, text)) is not None:
            self.left_out.append(why)
            return
        if change.op != "invalidate":
            change = change.model_copy(update={"fact": text})
            self._texts.add(_normal(text))
        if old is not None and change.op != "add":
            self._touched.add(old.id)
        self.kept.append((change, old if change.op != "add" else None))

    def _refusal(self, change: _Proposed, old: Fact | None, text: str) -> str | None:
        if (kind := secret_in(f"{change.fact}\n{change.evidence}", self.redact)) is not None:
            return f"a secret ({kind})"
        if not self._evident(change.evidence):
            return f"{change.op}: its evidence is not what the user said or a tool showed"
        if change.op != "add":
            if old is None:
                return f"{change.op}: no kept fact numbered {change.number}"
            if old.id in self._touched:
                return f"{change.op}: fact {change.number} was changed already"
        if change.op != "invalidate":
            if not text:
                return f"{change.op}: no fact given"
            if _normal(text) in self._texts:
                return "known already"
        return None

    def _evident(self, evidence: str) -> bool:
        """The quoted words are the conversation's: verbatim (spacing and case aside), or
        all but a few of them, for a model that quotes loosely."""
        words = _words(evidence)
        if not words:
            return False
        if " ".join(words) in self.conversation:
            return True
        present = set(self.words)
        return len(words) >= 3 and sum(w in present for w in words) >= 0.8 * len(words)


def _prompt(known: list[Fact], conversation: str) -> list[Message]:
    kept = "\n".join(f"{n}. {f.text}" for n, f in enumerate(known, 1)) or "(none)"
    return [
        SystemMessage(content=EXTRACT),
        UserMessage(content=f"Facts kept now:\n{kept}\n\nThe conversation:\n{conversation}"),
    ]


def _proposed(calls: Sequence[ToolCall], text: str) -> list[_Proposed]:
    """The changes of the extractor's `remember` call (or of its reply, if it wrote the call
    as JSON text); raises if it made none."""
    arguments: object = next((c.arguments for c in calls if c.name == REMEMBER), None)
    if arguments is None:
        try:
            arguments = json.loads(text)
        except ValueError:
            raise ValueError(
                f"the extractor did not call {REMEMBER}: {clip(text, 200)!r}"
            ) from None
        if isinstance(arguments, dict) and "arguments" in arguments:
            arguments = arguments["arguments"]
    try:
        return _Remember.model_validate(arguments).changes[:MAX_CHANGES]
    except ValidationError as exc:
        raise ValueError(
            f"the extractor's {REMEMBER} call is malformed: {exc.errors()[0]['msg']}"
        ) from None


def _now() -> datetime:
    """When the facts of a capture became true (a benchmark's timeline puts its own)."""
    return datetime.now(UTC)


_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _normal(text: str) -> str:
    return " ".join(_words(text))
