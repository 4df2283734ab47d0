"""Capture: a turn's new messages read for facts worth keeping, in two model calls: one
extracts what was said or observed (`remember`), without the kept facts in view (a small model
shown them proposes them again); one reconciles each new fact with the kept facts most like it
(`reconcile`: new, update, invalidate, or the same), made only when some are alike.

The model proposes; the harness decides. A fact is kept only if the words it quotes as its
evidence are what the user said or a tool showed (no inference), it holds no secret, and it is
not a fact kept already; a change names only a kept fact shown with it. What was kept, and why
the rest was not, is what the loop records as `memory_updated`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..context._compaction import clip, render
from ..core._catalog import price, served_at
from ..core._events import MemoryChange
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ..core._model import Model, ModelSettings
from ..core._state import RunState
from ._fact import Fact, Scope
from ._facts import STOPWORDS as _STOPWORDS
from ._memories import Memories
from ._secrets import secret_in
from ._vectors import Embeddings, hybrid

REMEMBER, RECONCILE = "remember", "reconcile"
CONVERSATION_CHARS = 6000
MESSAGE_CHARS = 800
TOOL_CHARS = 300
ALIKE = 3
"""Kept facts shown with each new one to reconcile it with."""
MAX_FACTS = 4
"""Facts a capture may find: also what the embedded model's grammar holds the call to (a list
of long strings repeated many times makes llama.cpp's grammar sampler crawl)."""
EVIDENCE_CHARS, FACT_CHARS = 120, 160
EXTRACT_TOKENS, RECONCILE_TOKENS = 400, 200

EXTRACT = """\
You keep an AI agent's long-term memory: facts about the user and the project that will be \
worth knowing in a later conversation.
Read the conversation and call remember with each fact the user said or a tool result showed, \
short and self-contained, as it is now. Only what was said or observed: no guesses, nothing \
about how this task went, no greetings, no passwords, keys or tokens. In evidence, copy the \
exact words of the conversation the fact rests on. Nothing worth keeping: call remember with \
no facts.

Example. The conversation:
user: I switched to emacs last week. Our CI runs on GitHub Actions. Can you fix the failing \
test? Thanks!
The call (the request to fix a test is this task's, not a fact):
{"name": "remember", "arguments": {"facts": [\
{"evidence": "I switched to emacs", "fact": "The user's editor is emacs."}, \
{"evidence": "Our CI runs on GitHub Actions", "fact": "The project's CI runs on GitHub \
Actions."}]}}"""

RECONCILE_PROMPT = """\
You keep an AI agent's long-term memory. Each new fact below comes with the kept facts most \
like it. Call reconcile with one decision for each new fact:
- new: it is about something else; keep it beside them (kept: 0).
- update: it is about the same thing as kept fact N, which has changed: N is replaced by it.
- invalidate: it says kept fact N is no longer true, and gives nothing in its place.
- same: kept fact N says the same already.

Example.
New fact 1: The user's editor is emacs.
  Kept 1: The user's editor is vim.
  Kept 2: The user's shell is zsh.
New fact 2: The project's CI runs on GitHub Actions.
  Kept 3: The project deploys on Fridays.
The call:
{"name": "reconcile", "arguments": {"decisions": [{"fact": 1, "op": "update", "kept": 1}, \
{"fact": 2, "op": "new", "kept": 0}]}}"""


class _Found(BaseModel):
    model_config = ConfigDict(extra="ignore")

    evidence: str = ""
    fact: str = ""


class _Remember(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[_Found] = Field(default_factory=list[_Found])


class _Decided(BaseModel):
    model_config = ConfigDict(extra="ignore")

    fact: int
    op: Literal["new", "update", "invalidate", "same"]
    kept: int = 0


class _Reconcile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    decisions: list[_Decided] = Field(default_factory=list[_Decided])


REMEMBER_SPEC = ToolSpec(
    name=REMEMBER,
    description="Record the facts worth keeping across sessions.",
    parameters={
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "evidence": {
                            "type": "string",
                            "maxLength": EVIDENCE_CHARS,
                            "description": "The exact words of the conversation it rests on.",
                        },
                        "fact": {
                            "type": "string",
                            "maxLength": FACT_CHARS,
                            "description": "The fact, short and self-contained, as it is now.",
                        },
                    },
                    "required": ["evidence", "fact"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    },
)
RECONCILE_SPEC = ToolSpec(
    name=RECONCILE,
    description="Say what each new fact does to the kept facts like it.",
    parameters={
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "fact": {"type": "integer", "description": "The new fact's number."},
                        "op": {"type": "string", "enum": ["new", "update", "invalidate", "same"]},
                        "kept": {
                            "type": "integer",
                            "description": "The kept fact's number; 0 for new.",
                        },
                    },
                    "required": ["fact", "op", "kept"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    },
)


@dataclass(kw_only=True)
class Capture:
    """The loop's `Remembers`: reads a run's new messages with `model` and writes what it
    finds to `scope` (whose: `owner`) in `memories`; the kept facts like each new one are
    found by words, and by meaning with `embeddings`."""

    memories: Memories
    model: Callable[[], Model]
    """The extractor, made when first needed."""
    scope: Scope
    owner: str
    redact: Sequence[str] = ()
    embeddings: Embeddings | None = None

    async def capture(self, state: RunState, *, trigger: str) -> dict[str, Any] | None:
        new = [m for m in state.messages[state.remembered :] if not isinstance(m, SystemMessage)]
        if not new:
            return None
        conversation = clip(
            render(new, message_chars=MESSAGE_CHARS, tool_chars=TOOL_CHARS), CONVERSATION_CHARS
        )
        model = self.model()
        settings = ModelSettings(tool_choice="required", temperature=0.0)
        response = await model.request(
            _extract_prompt(conversation),
            [REMEMBER_SPEC],
            replace(settings, max_tokens=EXTRACT_TOKENS),
        )
        usage = response.usage
        found = _parsed(_Remember, response.message, REMEMBER).facts
        # Evidence is what the user said or a tool showed: the agent's own words are no fact.
        heard = "\n".join(m.content for m in new if isinstance(m, UserMessage | ToolResultMessage))
        decided = _Decision(heard, self.redact)
        candidates = [c for c in found[:MAX_FACTS] if decided.admitted(c)]
        alike = [await self._alike(c.fact) for c in candidates]
        decisions: list[_Decided] = []
        if any(alike):
            shown = _reconcile_prompt(candidates, alike)
            answer = await model.request(
                [SystemMessage(content=RECONCILE_PROMPT), UserMessage(content=shown)],
                [RECONCILE_SPEC],
                replace(settings, max_tokens=RECONCILE_TOKENS),
            )
            usage = usage + answer.usage
            decisions = _parsed(_Reconcile, answer.message, RECONCILE).decisions
        decided.reconcile(candidates, alike, decisions)
        applied = await asyncio.to_thread(self._apply, decided.kept, state)
        return {
            "through": len(state.messages),
            "changes": tuple(applied),
            "left_out": tuple(decided.left_out),
            "usage": usage,
            "cost": price(response.model_name, usage, at=served_at(model)),
            "model": response.model_name,
        }

    async def _alike(self, text: str) -> list[Fact]:
        """The kept facts of the capture's scope most like `text` (a failing embedder: by
        words alone, as a recall's)."""
        scopes = [(self.scope, self.owner)]
        facts, _ = await hybrid(self.memories, self.embeddings, text, scopes=scopes, limit=ALIKE)
        return facts

    def _apply(
        self, kept: list[tuple[_Change, Fact | None]], state: RunState
    ) -> list[MemoryChange]:
        """Write the kept changes; the source of each is the event that will record them."""
        source = {"session_id": state.session_id, "run_id": state.run_id, "seq": state.next_seq}
        now = _now()
        changes: list[MemoryChange] = []
        for change, old in kept:
            reason = f'"{change.evidence}"'
            replaced = None
            match change.op:
                case "add":
                    fact = self.memories.add(
                        change.fact,
                        scope=self.scope,
                        owner=self.owner,
                        valid_at=now,
                        reason=reason,
                        **source,
                    )
                case "update":
                    assert old is not None
                    closed, fact = self.memories.replace(
                        old, change.fact, valid_at=now, reason=reason, **source
                    )
                    replaced = closed.id
                case "invalidate":
                    assert old is not None
                    fact = self.memories.close(old, invalid_at=now, reason=reason)
            changes.append(
                MemoryChange(
                    op=change.op,
                    fact=fact.id,
                    text=fact.text,
                    scope=self.scope,
                    replaced=replaced,
                    evidence=change.evidence,
                )
            )
        return changes


@dataclass(frozen=True)
class _Change:
    op: Literal["add", "update", "invalidate"]
    evidence: str
    fact: str


class _Decision:
    """Which found facts are kept, and how, and why the others are not."""

    def __init__(self, heard: str, redact: Sequence[str]) -> None:
        self.words = _words(heard)
        self.heard = " ".join(self.words)
        self.redact = redact
        self.kept: list[tuple[_Change, Fact | None]] = []
        self.left_out: list[str] = []
        self._texts: set[str] = set()

    def admitted(self, found: _Found) -> bool:
        """Whether a found fact may be kept at all (else `left_out` says why)."""
        text = " ".join(found.fact.split())
        if (kind := secret_in(f"{found.fact}\n{found.evidence}", self.redact)) is not None:
            why = f"a secret ({kind})"
        elif not self._evident(found.evidence):
            why = "its evidence is not what the user said or a tool showed"
        elif not set(_words(found.evidence)) - _FILLER:
            why = "its evidence holds nothing to keep"
        elif _REPORTED.match(text):
            why = "it tells of the conversation, not a fact"
        elif not text:
            why = "no fact given"
        elif _normal(text) in self._texts:
            why = "found twice"
        else:
            self._texts.add(_normal(text))
            return True
        self.left_out.append(why)
        return False

    def reconcile(
        self,
        candidates: Sequence[_Found],
        alike: Sequence[Sequence[Fact]],
        decisions: Sequence[_Decided],
    ) -> None:
        """Each admitted fact as the reconciliation says, within what it was shown: an
        update or invalidation of a kept fact not shown with it keeps the news as a new fact."""
        numbered = _numbered(alike)
        said = {d.fact: d for d in reversed(decisions)}  # a fact decided twice: the first
        touched: set[str] = set()
        for n, (found, facts) in enumerate(zip(candidates, alike, strict=True), 1):
            text = " ".join(found.fact.split())
            if any(_normal(f.text) == _normal(text) for f in facts):
                self.left_out.append("known already")
                continue
            decision = said.get(n)
            old = numbered.get(decision.kept) if decision is not None else None
            if decision is None or old not in facts or decision.op == "new":
                self.kept.append((_Change("add", found.evidence, text), None))
                continue
            assert old is not None
            if decision.op != "same" and _unfounded(decision.op, text, old.text):
                self.kept.append((_Change("add", found.evidence, text), None))
            elif decision.op == "same":
                self.left_out.append("known already")
            elif old.id in touched:
                self.left_out.append(
                    f"{decision.op}: kept fact {decision.kept} was changed already"
                )
            else:
                touched.add(old.id)
                self.kept.append((_Change(decision.op, found.evidence, text), old))

    def _evident(self, evidence: str) -> bool:
        """The quoted words are what was heard: verbatim (spacing and case aside), or all but
        a few of them, for a model that quotes loosely."""
        words = _words(evidence)
        if not words:
            return False
        if " ".join(words) in self.heard:
            return True
        present = set(self.words)
        return len(words) >= 3 and sum(w in present for w in words) >= 0.8 * len(words)


def _numbered(alike: Sequence[Sequence[Fact]]) -> dict[int, Fact]:
    """The kept facts shown, by their numbers in the reconcile prompt (one number a fact)."""
    numbered: dict[int, Fact] = {}
    ids: dict[str, int] = {}
    for facts in alike:
        for fact in facts:
            if fact.id not in ids:
                ids[fact.id] = len(ids) + 1
                numbered[ids[fact.id]] = fact
    return numbered


def _reconcile_prompt(candidates: Sequence[_Found], alike: Sequence[Sequence[Fact]]) -> str:
    number = {f.id: n for n, f in _numbered(alike).items()}
    lines: list[str] = []
    for n, (found, facts) in enumerate(zip(candidates, alike, strict=True), 1):
        lines.append(f"New fact {n}: {' '.join(found.fact.split())}")
        lines += [f"  Kept {number[f.id]}: {f.text}" for f in facts] or ["  (no kept fact)"]
    return "\n".join(lines)


def _extract_prompt(conversation: str) -> list[Message]:
    return [
        SystemMessage(content=EXTRACT),
        UserMessage(content=f"The conversation:\n{conversation}"),
    ]


Call = TypeVar("Call", _Remember, _Reconcile)


def _parsed(kind: type[Call], message: AssistantMessage, name: str) -> Call:
    """The arguments of the extractor's call `name` (or of its reply, if it wrote the call as
    JSON text); raises if it made none, or they are malformed."""
    arguments: object = next((c.arguments for c in message.tool_calls if c.name == name), None)
    if arguments is None:
        try:
            arguments = json.loads(message.text)
        except ValueError:
            raise ValueError(
                f"the extractor did not call {name}: {clip(message.text, 200)!r}"
            ) from None
        if isinstance(arguments, dict) and "arguments" in arguments:
            arguments = arguments["arguments"]
    try:
        return kind.model_validate(arguments)
    except ValidationError as exc:
        raise ValueError(
            f"the extractor's {name} call is malformed: {exc.errors()[0]['msg']}"
        ) from None


def _now() -> datetime:
    """When the facts of a capture became true (a benchmark's timeline puts its own)."""
    return datetime.now(UTC)


_WORD = re.compile(r"\w+")
_FILLER = _STOPWORDS | frozenset(
    """ok okay thanks thank next yes yeah no sure great hi hello hey bye please cool fine good
    done continue go ahead today s let lets right alright nice perfect got later see yep yup
    nope k thx""".split()  # noqa: SIM905
)
"""Words that carry nothing to keep: evidence of only these ("Ok, next.") is chatter."""
_TOKEN = re.compile(r"[\w/.:@#+-]*[\w/]")


def _unfounded(op: str, new: str, old: str) -> bool:
    """Whether a small model's change of `old` by `new` lacks what it needs (`new` is then kept
    beside `old`): `new` must be about the same thing (a word in common: "the tool handles
    Unicode" does not replace "the product codename is Bluefin Lantern"); and where `old` holds
    values, an update needs one of its own ("the API was migrated" does not replace "the API's
    host is api.old.dev"), an invalidation one of `old`'s (it says which is no longer true)."""
    if not _subject(new) & _subject(old):
        return True
    was, now = _specifics(old), _specifics(new)
    return bool(was) and not (now - was if op == "update" else now & was)


def _subject(text: str) -> set[str]:
    """A fact's words that say what it is about (not whose: "user", "project")."""
    return set(_words(text)) - _STOPWORDS - _WHOSE


_WHOSE = frozenset({"user", "users", "project", "projects", "s", "now", "new"})


def _specifics(text: str) -> set[str]:
    """The values a fact holds: numbers, versions, ports, and paths, hosts, handles (a word
    with / . : @ # in it)."""
    return {
        t.casefold() for t in _TOKEN.findall(text) if any(c.isdigit() or c in "/.:@#" for c in t)
    }


_REPORTED = re.compile(
    r"(the )?user (has |had )?(just )?(asked|requested|acknowledged|thanked|committed|greeted|"
    r"agreed)\b",
    re.IGNORECASE,
)
"""A "fact" that tells what the user did in the conversation ("The user asked to install the
date library"): how this task went, which a small model proposes though told not to. (What
the user "said" or "mentioned" is kept: "The user mentioned the invoice job runs at 03:40".)"""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _normal(text: str) -> str:
    return " ".join(_words(text))
