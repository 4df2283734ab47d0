"""Amazon Bedrock's Converse API through `boto3` (`ConverseStream`): one request shape for every
model Bedrock hosts (Claude, Nova, Llama, Mistral, ...), with tool use, reasoning and usage;
retries and stream guards are ours, as for the other providers.

boto3 blocks, so each call and each read of the event stream runs in a thread of our own; closing
the stream (a stall, a cancel) closes the connection, which ends the read."""

from __future__ import annotations

import asyncio
import base64
import importlib
import os
import re
from collections.abc import AsyncGenerator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..core._errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelTimeout,
    UsageError,
)
from ..core._events import FinishReason
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from ..core._model import (
    ALIVE,
    Alive,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ThinkingChunk,
)
from ._media_wire import bedrock_block
from ._provider import (
    SDKModel,
    Turns,
    assistant_message,
    cached_apart,
    system_prompt,
    tool_call,
    unfinished,
)
from ._resilience import Retried

FINISH: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
}
"""Converse's stop reasons; the malformed ones end the turn (the guards take it from there)."""
STREAM_ERRORS = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelStreamErrorException": 502,  # "retry your request"
    "validationException": 400,
}
"""Exceptions the event stream carries in place of an event, as the HTTP statuses they are
when the API answers with them at once (so they are retried, or not, alike)."""

VISION = re.compile(r"claude|nova-(lite|pro|premier)|llama3-2-(11|90)b|llama4|pixtral")
"""Bedrock model ids of the families that take images (and, through Converse, documents)."""

_WORKERS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="reins-bedrock")
"""The threads that wait on Bedrock, each for one stream at a time: asyncio's default pool
(cores + 4) would hold parallel runs' streams in a queue until their first-chunk timeouts."""


@dataclass(kw_only=True)
class BedrockModel(Retried, SDKModel):
    """A model on Amazon Bedrock through the Converse API (`boto3`, `pip install
    'reins[bedrock]'`). Credentials and region are boto3's: AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_BEARER_TOKEN_BEDROCK, a role; AWS_REGION."""

    model: str
    """A model id or inference profile (`us.anthropic.claude-sonnet-4-20250514-v1:0`) or ARN."""
    region: str | None = None
    """Defaults to AWS_REGION, then boto3's (AWS_DEFAULT_REGION, the profile's)."""
    endpoint_url: str | None = None
    """Defaults to boto3's (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, then Bedrock's own)."""
    provider: str = "bedrock"
    vision: bool | None = None
    """Whether it takes images and documents; None: it does if its id names a family that
    does (Claude, Nova but Micro, Llama 3.2 11B/90B and 4, Pixtral), else as the catalog says."""
    prompt_cache: bool | None = None
    """Mark the tools, the system prompt and the latest turns as cacheable (`cachePoint`
    blocks), as for Anthropic; None: for the models Bedrock caches for (those genai-prices
    prices cache reads of: Claude 3.5 Haiku and later, Nova), as others refuse the blocks."""

    def __post_init__(self) -> None:
        if self.vision is None and VISION.search(self.model):
            self.vision = True
        if self.prompt_cache is None:
            self.prompt_cache = _caches(self.model)

    @property
    def served_at(self) -> str | None:
        """The endpoint the requests go to; None: Bedrock's own (the catalog prices by it)."""
        return self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or None

    def _connect(self) -> Any:
        boto3, config = _sdk("boto3"), _sdk("botocore.config")
        # No retries of boto3's own and no read timeout short of ours: the resilience layer
        # retries, and its stream guards time the call.
        settings = config.Config(
            retries={"total_max_attempts": 1}, read_timeout=3600, connect_timeout=30
        )
        with _errors(self):
            # A session of its own: boto3's default one keeps the credentials it found first.
            return boto3.session.Session().client(
                "bedrock-runtime",
                # boto3 reads AWS_DEFAULT_REGION; AWS_REGION is what the other SDKs read
                region_name=self.region or os.environ.get("AWS_REGION") or None,
                endpoint_url=self.endpoint_url,
                config=settings,
            )

    async def _disconnect(self, client: Any) -> None:
        client.close()  # boto3's client is not async

    async def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        reply = _Reply()
        with _errors(self):
            client = self.client()
            params = _params(self.model, messages, tools, settings, cache=bool(self.prompt_cache))
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(_WORKERS, lambda: client.converse_stream(**params))
            stream = answer["stream"]
            events = iter(stream)
            try:
                while (
                    event := await loop.run_in_executor(_WORKERS, next, events, None)
                ) is not None:
                    yield ALIVE
                    chunk = reply.add(event)
                    if chunk is not None:
                        yield chunk
            finally:
                stream.close()
        if reply.stop is None:
            raise unfinished()
        yield reply.response(self.name)


class _Reply:
    """A reply assembled from Converse's stream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage = Usage(requests=1)
        self.stop: str | None = None

    def block(self, index: int) -> dict[str, Any]:
        new = {"kind": "text", "text": "", "id": "", "name": "", "signature": "", "redacted": b""}
        return self.blocks.setdefault(index, new)

    def add(self, event: dict[str, Any]) -> StreamItem | None:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start.get("start", {}).get("toolUse")
            if tool is not None:
                block = self.block(start["contentBlockIndex"])
                block.update(kind="tool", id=tool["toolUseId"], name=tool["name"])
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            return _delta(self.block(delta["contentBlockIndex"]), delta["delta"])
        elif "messageStop" in event:
            self.stop = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            self.usage = _usage(event["metadata"].get("usage", {}))
        return None

    def response(self, model_name: str) -> ModelResponse:
        text, calls, thinking = [], [], []
        for _, block in sorted(self.blocks.items()):
            match block["kind"]:
                case "text":
                    text.append(block["text"])
                case "reasoning":
                    redacted = base64.b64encode(block["redacted"]).decode()
                    thinking.append(
                        ThinkingBlock(
                            text=block["text"], signature=block["signature"], redacted=redacted
                        )
                    )
                case "tool":
                    calls.append(tool_call(block["id"], block["name"], block["text"]))
        finish = FINISH.get(self.stop or "", "end_turn")
        return ModelResponse(
            message=assistant_message(text, calls, thinking),
            usage=self.usage,
            finish=finish,
            model_name=model_name,
        )


def _delta(block: dict[str, Any], delta: dict[str, Any]) -> StreamItem | None:
    if "text" in delta:
        block["text"] += delta["text"]
        return TextChunk(delta["text"])
    if "toolUse" in delta:
        block["text"] += delta["toolUse"].get("input", "")
    elif "reasoningContent" in delta:
        block["kind"] = "reasoning"
        reasoning = delta["reasoningContent"]
        block["signature"] += reasoning.get("signature", "")
        block["redacted"] += reasoning.get("redactedContent", b"")
        if reasoning.get("text"):
            block["text"] += reasoning["text"]
            return ThinkingChunk(reasoning["text"])
    return None


def _usage(usage: dict[str, Any]) -> Usage:
    """Like Anthropic's, Converse counts the prompt's cached tokens apart from `inputTokens`;
    reins counts them all as input, the cached ones among them."""
    return cached_apart(
        usage.get("inputTokens", 0),
        usage.get("outputTokens", 0),
        usage.get("cacheReadInputTokens", 0),
        usage.get("cacheWriteInputTokens", 0),
    )


def _params(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    settings: ModelSettings,
    *,
    cache: bool = False,
) -> dict[str, Any]:
    system = system_prompt(messages)
    params: dict[str, Any] = {"modelId": model, "messages": _wire(messages)}
    if system:
        params["system"] = [{"text": system}]
    inference: dict[str, Any] = {}
    if settings.max_tokens is not None:
        inference["maxTokens"] = settings.max_tokens
    thinking = settings.thinking_budget
    if thinking is not None:  # Claude's extended thinking, in the model's own fields
        params["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": thinking}
        }
    elif settings.temperature is not None:  # extended thinking takes no temperature
        inference["temperature"] = settings.temperature
    if inference:
        params["inferenceConfig"] = inference
    used = any(isinstance(m, ToolResultMessage) for m in messages)
    if tools and (settings.tool_choice != "none" or used):
        # Converse has no "none": the tools are left out, unless the history holds tool use,
        # which it refuses without them; then the model is only told (auto).
        params["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in tools
            ]
        }
        forced = settings.tool_choice == "required" and thinking is None
        params["toolConfig"]["toolChoice"] = {"any": {}} if forced else {"auto": {}}
    if cache:
        _mark_cacheable(params, tools_too="nova" not in model)
    return params


CACHE_POINT = {"cachePoint": {"type": "default"}}


def _mark_cacheable(params: dict[str, Any], *, tools_too: bool) -> None:
    """Cache points (four at most, Bedrock's limit) after the tools (Nova caches none), the
    system prompt and the two latest user turns: the latest writes this request's prefix, the
    one before reads what the previous step wrote, since its prompt ended there."""
    if "toolConfig" in params and tools_too:
        params["toolConfig"]["tools"].append(CACHE_POINT)
    if "system" in params:
        params["system"].append(CACHE_POINT)
    users = [turn for turn in params["messages"] if turn["role"] == "user"]
    for turn in users[-2:]:
        turn["content"].append(CACHE_POINT)


def _caches(model: str) -> bool:
    """Whether Bedrock caches prompts for `model`: genai-prices prices its cache reads."""
    from genai_prices import data_snapshot

    try:
        _, found = data_snapshot.get_snapshot().find_provider_model(
            model.lower(), None, "aws", None
        )
    except LookupError:
        return False
    prices = found.prices
    return getattr(prices, "cache_read_mtok", None) is not None


def _wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Turns alternate user and assistant; a call's results go back together in the next user
    turn, as Converse requires."""
    turns = Turns()
    for message in messages:
        match message:
            case SystemMessage():
                pass  # sent as `system`
            case UserMessage():
                given = [bedrock_block(m) for m in message.media]  # after the text
                if message.content or not given:
                    given.insert(0, {"text": message.content})
                turns.add("user", given)
            case AssistantMessage():
                blocks = [_reasoning(b) for b in message.thinking_blocks if _signed(b)]
                if message.text:
                    blocks.append({"text": message.text})
                blocks.extend(
                    {
                        "toolUse": {
                            "toolUseId": c.id,
                            "name": c.name,
                            "input": c.arguments if c.raw_arguments is None else {},
                        }
                    }
                    for c in message.tool_calls
                )
                turns.add("assistant", blocks or [{"text": "(no reply)"}])
            case ToolResultMessage():
                result = {
                    "toolUseId": message.call_id,
                    # a result's content may hold images and documents too
                    "content": [{"text": message.content}, *map(bedrock_block, message.media)],
                    "status": "error" if message.is_error else "success",
                }
                turns.add("user", [{"toolResult": result}])
    return turns


def _signed(block: ThinkingBlock) -> bool:
    """Reasoning that can go back: signed or redacted, and not another API's item."""
    return bool(block.signature or block.redacted) and not block.item_id


def _reasoning(block: ThinkingBlock) -> dict[str, Any]:
    if block.redacted:
        return {"reasoningContent": {"redactedContent": base64.b64decode(block.redacted)}}
    text = {"text": block.text, "signature": block.signature}
    return {"reasoningContent": {"reasoningText": text}}


@contextmanager
def _errors(model: BedrockModel) -> Iterator[None]:
    """botocore's errors mapped to ours: an error status (or the stream's exception) with the
    service's code and message; a missing credential or region is the user's to set."""
    exceptions = _sdk("botocore.exceptions")
    try:
        yield
    except exceptions.NoCredentialsError as exc:
        raise UsageError(
            f"{model.name} needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
        ) from exc
    except exceptions.NoRegionError as exc:
        raise UsageError(
            f"{model.name} needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION)"
        ) from exc
    except exceptions.ClientError as exc:
        raise _status(exc) from exc
    except (exceptions.ConnectTimeoutError, exceptions.ReadTimeoutError) as exc:
        raise ModelTimeout(f"the request timed out: {exc}") from exc
    except exceptions.EndpointConnectionError as exc:
        raise ModelConnectionError(f"no connection to {exc.kwargs.get('endpoint_url')}") from exc
    except (exceptions.HTTPClientError, exceptions.ConnectionError) as exc:  # reset, closed, ...
        raise ModelConnectionError(f"lost the connection to Bedrock ({exc})") from exc
    except _sdk("urllib3.exceptions").HTTPError as exc:  # raised as they are mid-stream
        raise ModelConnectionError(f"lost the connection to Bedrock ({exc})") from exc
    except exceptions.BotoCoreError as exc:
        raise ModelError(f"Bedrock error: {exc}") from exc


def _status(exc: Any) -> ModelHTTPError:
    error = exc.response.get("Error", {})
    meta = exc.response.get("ResponseMetadata", {})
    code = error.get("Code", "")
    status = STREAM_ERRORS.get(code) or meta.get("HTTPStatusCode") or 500
    body = f"{code}: {error.get('Message', '')}" if code else str(exc)
    retry_after = meta.get("HTTPHeaders", {}).get("retry-after")
    try:
        seconds = float(retry_after) if retry_after is not None else None
    except ValueError:
        seconds = None
    return ModelHTTPError(status, body, retry_after=seconds)


def _sdk(name: str) -> ModuleType:
    try:  # on first use: boto3 takes a while to import
        return importlib.import_module(name)
    except ImportError:
        raise UsageError("bedrock: models need boto3: pip install 'reins[bedrock]'") from None
