"""Google's Gemini API through the official `google-genai` SDK: streaming
(`streamGenerateContent?alt=sse`), function calling, thinking and its thought signatures;
retries and stream guards are ours, as for the other providers."""

from __future__ import annotations

import base64
import importlib
import json
import os
import uuid
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from ..core._errors import ModelConnectionError, ModelError, ModelHTTPError, UsageError
from ..core._events import FinishReason
from ..core._media import Document, Image
from ..core._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ThinkingBlock,
    ToolCall,
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
from ._media_wire import returned_by
from ._provider import SDKModel, system_prompt, unfinished
from ._resilience import Retried
from ._sdk_errors import _retry_after, _transport_errors, _why

FINISH: dict[str, FinishReason] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
    "IMAGE_PROHIBITED_CONTENT": "refusal",
    "MODEL_ARMOR": "refusal",
}
"""Gemini's finish reasons; any other (OTHER, MALFORMED_FUNCTION_CALL, ...) ends the turn."""
SIGNED = "gemini:"
"""`ThinkingBlock.item_id` of a thought signature: `gemini:call:ID` for the function call it
came on, `gemini:text` for a reply's text. Gemini wants each back on the same part."""


@dataclass(kw_only=True)
class GeminiModel(Retried, SDKModel):
    """A Gemini model through the Gemini API or Vertex AI (the `google-genai` SDK, `pip install
    'reins[gemini]'`): streaming, function calling, thinking (`thinking_budget`)."""

    base_url: str | None = None
    """Defaults to GOOGLE_GEMINI_BASE_URL, then Google's own."""
    api_key: str | None = None
    """Defaults to GOOGLE_API_KEY, then GEMINI_API_KEY (the order of Google's SDK)."""
    provider: str = "gemini"
    vertex: bool = False
    """Through Vertex AI instead (`vertex:NAME`): Google Cloud's credentials (Application
    Default Credentials: `gcloud auth application-default login`, GOOGLE_APPLICATION_CREDENTIALS,
    a service's own), no API key."""
    project: str | None = None
    """Vertex AI's project; defaults to GOOGLE_CLOUD_PROJECT."""
    location: str | None = None
    """Vertex AI's region; defaults to GOOGLE_CLOUD_LOCATION, then `global`."""
    vision: ClassVar[bool] = True
    """Every Gemini model takes images and PDFs."""

    @property
    def served_at(self) -> str | None:
        """The base URL the requests go to; None: Google's own API (the catalog prices by it)."""
        if self.vertex:
            return self.base_url
        return self.base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or None

    def _connect(self) -> Any:
        genai = _genai()
        base_url = self.base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL")
        key = self.api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        # No retries and no timeout of the SDK's own: the resilience layer does both.
        options = genai.types.HttpOptions(base_url=base_url) if base_url else None
        if self.vertex:
            return genai.Client(
                vertexai=True,
                project=self._project(),
                location=self.location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global",
                http_options=options,
            ).aio
        return genai.Client(api_key=key or "none", http_options=options).aio

    def _project(self) -> str:
        project = self.project or os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise UsageError(
                f"{self.name} needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT "
                "(and GOOGLE_CLOUD_LOCATION, else global)"
            )
        return project

    async def _disconnect(self, client: Any) -> None:
        await client.aclose()

    async def _attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings
    ) -> AsyncGenerator[StreamItem | Alive]:
        reply = _Reply()
        with _errors():
            stream = await self.client().models.generate_content_stream(
                model=self.model,
                contents=_contents(messages),
                config=_config(messages, tools, settings),
            )
            try:
                async for chunk in stream:
                    yield ALIVE
                    for item in reply.add(chunk):
                        yield item
            except GeneratorExit:  # a stall or a cancel: the request ends now, not when collected
                await stream.aclose()  # (after an error of its own, the SDK's stream is closed)
                raise
        if reply.finish is None:
            raise unfinished()
        yield reply.response(self.name)


class _Reply:
    """A reply assembled from its streamed chunks: each chunk's parts add on."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.signatures: list[ThinkingBlock] = []
        self.usage = Usage(requests=1)
        self.finish: str | None = None

    def add(self, chunk: Any) -> Iterator[StreamItem]:
        if chunk.usage_metadata is not None:
            self.usage = _usage(chunk.usage_metadata)
        if chunk.prompt_feedback is not None and chunk.prompt_feedback.block_reason:
            self.finish = "SAFETY"  # the prompt itself was blocked: no candidate comes
        if not chunk.candidates:
            return
        candidate = chunk.candidates[0]  # one is asked for
        if candidate.content is not None:
            for part in candidate.content.parts or ():
                yield from self._part(part)
        if candidate.finish_reason is not None:
            self.finish = str(candidate.finish_reason.value)

    def _part(self, part: Any) -> Iterator[StreamItem]:
        signature = _b64(part.thought_signature)
        if part.function_call is not None:
            call = _call(part.function_call)
            self.calls.append(call)
            if signature:
                self.signatures.append(
                    ThinkingBlock(signature=signature, item_id=f"{SIGNED}call:{call.id}")
                )
        elif part.text is not None and part.thought:
            self.thinking.append(part.text)
            yield ThinkingChunk(part.text)
        elif part.text is not None:
            if part.text:
                self.text.append(part.text)
                yield TextChunk(part.text)
            if signature:
                self.signatures.append(ThinkingBlock(signature=signature, item_id=f"{SIGNED}text"))

    def response(self, model_name: str) -> ModelResponse:
        thinking = "".join(self.thinking)
        blocks = self.signatures
        if thinking:  # the summary, for people; the signatures carry what goes back
            blocks = [ThinkingBlock(text=thinking), *blocks]
        message = AssistantMessage(
            text="".join(self.text),
            thinking=thinking,
            tool_calls=tuple(self.calls),
            thinking_blocks=tuple(blocks),
        )
        finish = FINISH.get(self.finish or "", "end_turn")
        if finish == "end_turn" and self.calls:
            finish = "tool_use"
        return ModelResponse(
            message=message, usage=self.usage, finish=finish, model_name=model_name
        )


def _usage(meta: Any) -> Usage:
    """Gemini bills thinking as output; its cached tokens are part of the prompt's count."""
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        requests=1,
        cache_read_tokens=meta.cached_content_token_count or 0,
    )


def _call(function_call: Any) -> ToolCall:
    # The Gemini API gives calls no id (Vertex AI does); results are paired by ours.
    call_id = function_call.id or f"call_{uuid.uuid4().hex[:24]}"
    arguments = function_call.args
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(
            id=call_id, name=function_call.name or "", raw_arguments=json.dumps(arguments)
        )
    return ToolCall(id=call_id, name=function_call.name or "", arguments=arguments)


def _b64(signature: bytes | None) -> str:
    return base64.b64encode(signature).decode() if signature else ""


def _config(messages: Sequence[Message], tools: Sequence[ToolSpec], settings: ModelSettings) -> Any:
    types = _genai().types
    system = system_prompt(messages)
    config: dict[str, Any] = {
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
    }
    if system:
        config["system_instruction"] = system
    if settings.max_tokens is not None:
        config["max_output_tokens"] = settings.max_tokens
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.thinking_budget is not None and settings.reasoning_effort is not None:
        raise UsageError(
            "Gemini takes a thinking_budget or a reasoning_effort (its thinking level), not both"
        )
    if settings.thinking_budget is not None:
        config["thinking_config"] = types.ThinkingConfig(
            thinking_budget=settings.thinking_budget, include_thoughts=True
        )
    elif settings.reasoning_effort is not None:  # Gemini 3's thinking levels bear the same names
        config["thinking_config"] = types.ThinkingConfig(
            thinking_level=settings.reasoning_effort.upper(), include_thoughts=True
        )
    if tools:
        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in tools
        ]
        mode = {"auto": "AUTO", "required": "ANY", "none": "NONE"}[settings.tool_choice]
        config["tools"] = [types.Tool(function_declarations=declarations)]
        config["tool_config"] = types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(mode=mode)
        )
    return types.GenerateContentConfig(**config)


def _contents(messages: Sequence[Message]) -> list[Any]:
    """Turns alternate `user` and `model`; a call's results go back together in the next
    user turn, each a function response named after its call."""
    types = _genai().types
    turns: list[Any] = []

    def add(role: str, parts: list[Any]) -> None:
        if turns and turns[-1].role == role:
            turns[-1].parts.extend(parts)
        else:
            turns.append(types.Content(role=role, parts=parts))

    returned: list[Any] = []  # results' images and documents, after all the responses
    for message in messages:
        if returned and not isinstance(message, ToolResultMessage):
            add("user", returned)
            returned = []
        match message:
            case SystemMessage():
                pass  # sent as `system_instruction`
            case UserMessage():
                given = [_inline(m) for m in message.media]  # after the text
                if message.content or not given:
                    given.insert(0, types.Part(text=message.content))
                add("user", given)
            case AssistantMessage():
                add("model", _model_parts(message) or [types.Part(text="(no reply)")])
            case ToolResultMessage():
                key = "error" if message.is_error else "output"
                response = types.FunctionResponse(
                    id=message.call_id, name=message.name, response={key: message.content}
                )
                add("user", [types.Part(function_response=response)])
                for media in message.media:  # each says whose it is
                    said = returned_by(media, message.name, message.call_id)
                    returned.extend([types.Part(text=said), _inline(media)])
    if returned:
        add("user", returned)
    return turns


def _inline(media: Image | Document) -> Any:
    types = _genai().types
    return types.Part(inline_data=types.Blob(mime_type=media.media_type, data=media.data))


def _model_parts(message: AssistantMessage) -> list[Any]:
    """A reply as Gemini sent it: text, then function calls, each signed part with its thought
    signature (Gemini 3 refuses a call sent back without one)."""
    types = _genai().types
    signed = {
        b.item_id.removeprefix(SIGNED): base64.b64decode(b.signature)
        for b in message.thinking_blocks
        if b.item_id.startswith(SIGNED) and b.signature
    }
    parts = []
    if message.text:
        parts.append(types.Part(text=message.text, thought_signature=signed.get("text")))
    for call in message.tool_calls:
        function_call = types.FunctionCall(
            id=call.id, name=call.name, args=call.arguments if call.raw_arguments is None else {}
        )
        parts.append(
            types.Part(function_call=function_call, thought_signature=signed.get(f"call:{call.id}"))
        )
    return parts


@contextmanager
def _errors() -> Iterator[None]:
    """The SDK's errors (and its transport's), mapped to ours with status and body."""
    errors = _genai().errors
    try:
        yield
    except errors.APIError as exc:
        body = json.dumps(exc.details) if not isinstance(exc.details, str) else exc.details
        headers = getattr(exc.response, "headers", None) or {}
        if not isinstance(exc.code, int):
            raise ModelError(f"Gemini API error: {exc}") from exc
        raise ModelHTTPError(exc.code, body, retry_after=_retry_after(headers)) from exc
    except _transport_errors() as exc:
        raise ModelConnectionError(_connection(exc)) from exc
    except _auth().DefaultCredentialsError as exc:  # Vertex AI, with no credentials found
        raise UsageError(
            "Vertex AI needs Google Cloud credentials: run gcloud auth application-default "
            f"login, or set GOOGLE_APPLICATION_CREDENTIALS to a key file ({exc})"
        ) from exc
    except _auth().RefreshError as exc:  # refused: retrying would not help
        raise ModelError(f"Google Cloud refused the credentials: {exc}") from exc
    except _auth().TransportError as exc:
        raise ModelConnectionError(f"no connection to Google's token service ({exc})") from exc


def _connection(exc: Exception) -> str:
    try:
        url = str(exc.request.url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        url = "the Gemini API"
    made = "connect" in type(exc).__name__.lower()
    return f"{'no connection to' if made else 'lost the connection to'} {url} ({_why(exc)})"


def _auth() -> ModuleType:
    return importlib.import_module("google.auth.exceptions")  # google-genai's dependency


def _genai() -> ModuleType:
    try:  # on first use: it takes a while to import
        return importlib.import_module("google.genai")
    except ImportError:
        raise UsageError(
            "gemini: models need the google-genai SDK: pip install 'reins[gemini]'"
        ) from None
