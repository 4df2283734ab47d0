"""`ContextBuilder`: the request each round, inside the model's window.

The view is a fold of the run's events (`RunState.view`); what the builder adds on the way out is
deterministic (a message over its budget cut in the request only), so a resume or a replay sends
exactly what the run sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core._catalog import price, served_at
from ..core._context_settings import ContextSettings
from ..core._errors import ContextTooLarge, StoreError
from ..core._messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    unseen,
)
from ..core._model import Model, takes_media
from ..core._state import RunState
from ._compaction import (
    DIGEST_CHARS,
    REPLACES,
    SUMMARY_HEADER,
    SUMMARY_TOKENS,
    clip,
    digest,
    plan,
    summarize,
    summarizer_for,
    transcript,
)
from ._tokens import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    Counter,
    counter_of,
    estimate,
    media_tokens,
    message_text,
    text_tokens,
    window_of,
)

__all__ = ["ContextBuilder", "ContextTooLarge"]


@dataclass(kw_only=True)
class ContextBuilder:
    """Builds each request from the run's state inside the model's window: long messages cut,
    the output cap fitted, and the history compacted past the threshold."""

    model: Model
    settings: ContextSettings
    tools: Sequence[ToolSpec]
    summarizer: Callable[[], Model] | None = None
    """Makes the model that summarizes a compaction; None: the digest, always."""
    window: int = field(init=False)
    _count: Counter | None = field(init=False, repr=False)
    _listing: tuple[tuple[int, ...], int] = field(default=((), 0), init=False, repr=False)
    """The tools last listed (by identity: the executor changes its list in place) and the
    estimated tokens of their schemas, sent with every request."""
    _double: bool = field(init=False, repr=False)
    _fits: _Fitted | None = field(default=None, init=False, repr=False)
    """The view as last sent: the history only grows between compactions, so a round fits
    and counts only its new messages."""
    _measured: tuple[RunState, int, list[Message], int] | None = field(
        default=None, init=False, repr=False
    )
    """The last request and its tokens, by the state and its next seq: asked twice a round."""

    def __post_init__(self) -> None:
        self.window = window_of(self.model, self.settings)
        self._count = counter_of(self.model)
        self._double = bool(getattr(self.model, "offline", False))
        self._blind = not takes_media(self.model)
        """Its images and documents become notes (`unseen`), counted as such."""

    @classmethod
    def for_run(
        cls,
        model: Model,
        model_id: str,
        settings: ContextSettings,
        tools: Sequence[ToolSpec],
        *,
        resolve: Callable[[str], Model],
    ) -> ContextBuilder:
        """The builder of a run of `model` (named `model_id` in its log): summaries by the
        settings' `compaction_model`, else the cheapest model of its hosted provider, else the
        model itself; a test double's compactions are digests, unless a model is named.
        `resolve` makes the model a name says, called when a compaction first needs one: the
        layer above hands it in (`reins.agent` reads the config files for it)."""
        spec = settings.compaction_model or summarizer_for(model_id)

        def summarizer() -> Model:
            if spec is None or spec == model_id:
                return model
            return resolve(spec)

        double = spec is None and getattr(model, "offline", False)
        return cls(
            model=model,
            settings=settings,
            tools=tools,
            summarizer=None if double else summarizer,
        )

    @property
    def message_budget(self) -> int:
        """Tokens of one message sent as it is."""
        return self.settings.message_token_budget or max(64, self.window // 6)

    def request(self, state: RunState) -> list[Message]:
        """The messages the next model call sends."""
        return self.measure(state)[0]

    def tokens(self, state: RunState) -> int:
        """The tokens of the next request: counted by the model if it can, else the provider's
        count of the last request plus an estimate of what came since."""
        return self.measure(state)[1]

    def measure(self, state: RunState) -> tuple[list[Message], int]:
        """The next request, and its tokens."""
        last = self._measured
        if last is not None and last[0] is state and last[1] == state.next_seq:
            return last[2], last[3]
        fits = self._fit(state)
        messages, totals = fits.messages, fits.totals
        if self._count is not None:
            tokens = self._count(messages, self.tools)
        elif state.prompt_tokens is not None and state.prompt_messages <= len(messages):
            added = totals[-1] - totals[state.prompt_messages]
            tokens = state.prompt_tokens + round(added * state.token_ratio)
        else:
            tokens = round((self._listed + totals[-1]) * state.token_ratio)
        self._measured = (state, state.next_seq, messages, tokens)
        return messages, tokens

    @property
    def _listed(self) -> int:
        ids = tuple(map(id, self.tools))
        if ids != self._listing[0]:
            self._listing = (ids, estimate((), self.tools))
        return self._listing[1]

    def estimated(self, state: RunState) -> int | None:
        """The characters estimate of the next request, before calibration, for the provider's
        count of it to calibrate (`RunState.token_ratio`); None where there is nothing to
        calibrate: the model counts exactly, or is a test double (its counts are guesses)."""
        if self._count is not None or self._double:
            return None
        return self._listed + self._fit(state).totals[-1]

    def counted(self, state: RunState, messages: Sequence[Message]) -> int:
        """Tokens of a request of `messages` with the tools: the model's count, else the
        estimate as the run's calibration corrects it."""
        if self._count is not None:
            return self._count(messages, self.tools)
        return round(estimate(messages, self.tools) * state.token_ratio)

    def room(self, max_output: int | None) -> int:
        """Tokens kept free for the answer: the output cap, up to a quarter of the window."""
        return min(max_output or self.window // 4, self.window // 4)

    def due(self, tokens: int, max_output: int | None) -> bool:
        """Past the compaction threshold, or too close to the window to answer."""
        limit = min(self.settings.threshold * self.window, self.window - self.room(max_output))
        return self.settings.compaction and tokens > limit

    def check(self, tokens: int, max_output: int | None) -> None:
        """Raise `ContextTooLarge` if a request of `tokens` leaves no room to answer."""
        room = self.room(max_output)
        if tokens + room > self.window:
            compacted = "" if self.settings.compaction else " (compaction is off)"
            raise ContextTooLarge(
                f"context too large: the next request is about {tokens} tokens and the "
                f"model's window is {self.window}, with {room} kept for the answer{compacted}; "
                "start a new session, give the model's real window (--context-window, "
                "[context] window) if it is larger, or lower keep_recent / message_token_budget"
            )

    def output_cap(self, tokens: int, max_output: int | None) -> int | None:
        """The output cap, lowered so that the request and its answer fit the window."""
        room = self.window - tokens
        return room if max_output is None or max_output > room else max_output

    async def compact(self, state: RunState, *, forced: bool = False) -> dict[str, Any] | None:
        """The fields of a `context_compacted` event, or None: nothing to compact."""
        view = state.view()
        # Before and after counted alike, the tools' schemas in both: the provider's count of
        # the last request would measure the one side by another rule than the other.
        before = self.counted(state, self._fit(state).messages)
        cut = plan(
            view,
            keep=self._keep(view),
            goal=state.goal,
            kept_before=len(state.view_prefix or ()),
        )
        if cut is None:
            return None
        text, method, detail = "", "digest", "no summarizer"
        usage: dict[str, Any] = {}
        if self.summarizer is not None:
            try:
                model = self.summarizer()
                # In a small window, a shorter transcript and summary (the summarizer is often
                # the run's own model, with the same window).
                limit = min(self.settings.summary_chars, self.window * CHARS_PER_TOKEN // 2)
                most = min(SUMMARY_TOKENS, self.window // 8)
                summary = await summarize(model, transcript(cut.dropped, limit), most)
            except StoreError:
                raise
            except Exception as exc:  # offline, refused, empty: the digest instead
                detail = f"the summarizer failed: {type(exc).__name__}: {exc}"
            else:
                text, method, detail = summary.text, "summary", ""
                cost = price(summary.model, summary.usage, at=served_at(model))
                usage = {"usage": summary.usage, "model": summary.model, "cost": cost}
        if method == "digest":
            text = digest(cut.dropped, min(DIGEST_CHARS, self.window * CHARS_PER_TOKEN // 8))
        start = len(state.view_prefix) if state.view_prefix is not None else 0
        at = state.view_from + cut.at - start  # in the whole history
        replies = sum(isinstance(m, AssistantMessage) for m in state.messages[:at])
        header = SUMMARY_HEADER + "\n" + REPLACES.format(replies=replies)
        prefix = (
            *view[: cut.system],
            *cut.pinned,
            UserMessage(content=f"{header}\n{text}"),
            *([cut.failure] if cut.failure is not None else []),
        )
        after = self._fitted([*prefix, *view[cut.at :]])
        return {
            "prefix": prefix,
            "cut": at,
            "method": method,
            "tokens_before": before,
            "tokens_after": self.counted(state, after),
            "messages_before": len(view),
            "messages_after": len(after),
            "forced": forced,
            "detail": detail,
            **usage,
        }

    def _keep(self, view: Sequence[Message]) -> int:
        """`keep_recent`, or fewer: the kept messages may take half of what the threshold
        allows at most, or the compacted view would be due again at once."""
        keep = self.settings.keep_recent
        room = self.settings.threshold * self.window / 2
        while keep > 1 and estimate(self._fitted(view[-keep:])) > room:
            keep -= 1
        return keep

    def _fit(self, state: RunState) -> _Fitted:
        """The state's view, fitted and counted; the part done last time is reused."""
        view, compaction = state.view(), state.view_prefix
        fits = self._fits
        if (
            fits is None
            or fits.state is not state
            or fits.compaction is not compaction
            or fits.length > len(view)
        ):
            fits = self._fits = _Fitted(state, compaction)
        if fits.length == len(view):
            return fits
        budget = self.message_budget
        messages = fits.messages[:]  # a new list: a model may keep the one it was sent
        totals = fits.totals
        total = totals[-1]
        for message in view[fits.length :]:
            message = _cut_to(message, budget, self._blind)
            messages.append(message)
            total += text_tokens(message_text(message)) + MESSAGE_OVERHEAD
            total += media_tokens(message)
            totals.append(total)
        fits.messages, fits.length = messages, len(view)
        return fits

    def _fitted(self, messages: Sequence[Message]) -> list[Message]:
        budget = self.message_budget
        return [_cut_to(m, budget, self._blind) for m in messages]


@dataclass(slots=True)
class _Fitted:
    """A view fitted to the message budget, and its estimated tokens."""

    state: RunState
    compaction: object
    """The state's `view_prefix` it was fitted under: a compaction starts a new one."""
    length: int = 0
    """How many messages of the view it holds."""
    messages: list[Message] = field(default_factory=list[Message])
    totals: list[int] = field(default_factory=lambda: [0])
    """`totals[i]`: the estimated tokens of `messages[:i]`."""


def _cut_to(message: Message, budget: int, blind: bool = False) -> Message:
    """A tool result, a reply's text or a call's string argument (the content of a file it
    wrote, say) over `budget` tokens, cut to its head and tail: the call has run, and what it
    was is still plain. With `blind`, images and documents become notes (`unseen`)."""
    chars = budget * CHARS_PER_TOKEN
    # By exact type: `isinstance` with a pydantic class is slow when it misses.
    if blind and (type(message) is UserMessage or type(message) is ToolResultMessage):
        message = unseen(message) if message.media else message
    if type(message) is ToolResultMessage:
        if len(message.content) <= chars:
            return message
        return message.model_copy(update={"content": _head_and_tail(message.content, chars)})
    if type(message) is not AssistantMessage:
        return message
    long_text = len(message.text) > chars
    long_args = any(
        isinstance(v, str) and len(v) > chars
        for c in message.tool_calls
        for v in c.arguments.values()
    )
    if not (long_text or long_args):
        return message
    calls = tuple(
        c.model_copy(
            update={
                "arguments": {
                    k: _head_and_tail(v, chars) if isinstance(v, str) and len(v) > chars else v
                    for k, v in c.arguments.items()
                }
            }
        )
        for c in message.tool_calls
    )
    text = _head_and_tail(message.text, chars) if long_text else message.text
    return message.model_copy(update={"text": text, "tool_calls": calls})


def _head_and_tail(text: str, chars: int) -> str:
    return clip(text, chars, note="[… {} tokens truncated …]", per=CHARS_PER_TOKEN)
