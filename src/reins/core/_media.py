"""Images and documents in a conversation: values that hold their bytes in memory and are
written to a log as a reference (the sha256 of the bytes, kept in the log's blob store).

`Image.from_path("shot.png")`, `Document.from_bytes(pdf)`: the media type is read from the
bytes (their signature), never from the name, so a `.png` that is a JPEG is sent as a JPEG and
a file that is neither is refused with one clear error.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from ._errors import StoreError, UsageError
from ._files import read_regular

SIGNATURES: dict[bytes, str] = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
    b"%PDF-": "application/pdf",
}
"""How the formats every provider reins maps takes begin (WebP is told apart in `sniff`: its
signature has the file's size in the middle)."""


def sniff(data: bytes) -> str | None:
    """The media type `data` starts like, among those reins sends; None if none."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((t for sig, t in SIGNATURES.items() if data.startswith(sig)), None)


IMAGE_TOKENS = 1_600
PAGE_TOKENS = 1_500
PDF_PAGE = re.compile(rb"/Type\s*/Page(?!s)")
"""A page object of a PDF (`/Type /Pages` is the tree above them)."""


class Blobs(Protocol):
    """Where a log keeps the bytes its events refer to, by their sha256."""

    def put(self, sha256: str, data: bytes) -> None:
        """Keep `data` (a no-op when it is kept already)."""
        ...

    def get(self, sha256: str) -> bytes:
        """The bytes kept under `sha256`; a StoreError when they are missing or changed."""
        ...


def _size(count: int) -> str:
    for unit in ("bytes", "KB", "MB"):
        if count < 1024 or unit == "MB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover


def _read(path: str | Path, what: str) -> bytes:
    # A FIFO or a device is refused, not waited on; a huge file is read no further than needed
    # to say it is too big.
    try:
        return read_regular(path, limit=Document.limit + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None


class _Media(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    media_type: str
    sha256: str
    """Of the bytes: the name of their blob in the log's store."""
    size: int
    name: str = Field(default="", exclude_if=lambda name: not name)
    """The file it came from, for people and for what the model is told ("" when none)."""
    data: bytes = Field(default=b"", exclude=True, repr=False)
    """The bytes; not in the log's line (the blob is), filled in when the log is read."""

    kind: ClassVar[str]
    accepted: ClassVar[tuple[str, ...]]
    """The media types it may be."""
    limit: ClassVar[int]

    @model_validator(mode="before")
    @classmethod
    def _from_blobs(cls, value: Any, info: ValidationInfo) -> Any:
        # A log line holds the reference; the log reading it hands its blobs in the context.
        context = info.context
        if isinstance(value, dict) and "data" not in value and isinstance(context, dict):
            blobs: Blobs | None = context.get("blobs")
            if blobs is not None and isinstance(sha := value.get("sha256"), str):
                return {**value, "data": blobs.get(sha)}
        return value

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "") -> Self:
        """The value of `data`, its media type read from the bytes; a UsageError (saying
        which types are taken) when they are not one of them, or too big."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise UsageError(f"{cls.__name__}.from_bytes takes bytes, not {type(data).__name__}")
        data = bytes(data)
        what = f"{name}: " if name else ""
        media_type = sniff(data)
        if media_type is None or media_type not in cls.accepted:
            found = f"is {media_type}: give it as " if media_type else "is none of them"
            if media_type:
                found += "a Document" if media_type in Document.accepted else "an Image"
            raise UsageError(
                f"{what}an {cls.kind} is one of {cls.types()}, read from its bytes; this one "
                f"{found}"
            )
        if len(data) > cls.limit:
            raise UsageError(
                f"{what}{_size(len(data))}; an {cls.kind} is at most {_size(cls.limit)} "
                "(what the providers take)"
            )
        return cls(
            media_type=media_type,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            name=name,
            data=data,
        )

    @classmethod
    def from_path(cls, path: str | Path) -> Self:
        """The value of the file at `path`; a UsageError when it cannot be read or is not
        an accepted type."""
        return cls.from_bytes(_read(path, cls.kind), name=Path(path).name)

    @classmethod
    def types(cls) -> str:
        return ", ".join(t.split("/")[1].upper() for t in cls.accepted)

    @cached_property
    def tokens(self) -> int:
        """A conservative guess of the tokens it takes in a model's context (the provider's
        usage then says exactly): an image at the size providers scale down to costs about
        1,600; a PDF page, its text and its picture, 1,500 to 3,000 (the lower: a window
        reins does not know is taken as 8,192 tokens, which the higher would fill)."""
        if self.kind == "image":
            return IMAGE_TOKENS
        return PAGE_TOKENS * max(1, len(PDF_PAGE.findall(self.data)))

    def base64(self) -> str:
        """The bytes, base64-encoded, as the providers take them."""
        if not self.data and self.size:
            raise StoreError(
                f"the bytes of {self.describe()} were not loaded (read the log through its "
                "store, which keeps them by sha256)"
            )
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        """`image shot.png (image/png, 12.0 KB)`: what people and a model that cannot see it
        are told."""
        named = f" {self.name}" if self.name else ""
        return f"{self.kind}{named} ({self.media_type}, {_size(self.size)})"


class Image(_Media):
    """An image (PNG, JPEG, GIF, WebP) in a user message or a tool result."""

    type: Literal["image"] = "image"
    kind: ClassVar[str] = "image"
    accepted: ClassVar[tuple[str, ...]] = ("image/png", "image/jpeg", "image/gif", "image/webp")
    limit: ClassVar[int] = 20 * 1024 * 1024


class Document(_Media):
    """A document (PDF) in a user message or a tool result, for the providers that take one."""

    type: Literal["document"] = "document"
    kind: ClassVar[str] = "document"
    accepted: ClassVar[tuple[str, ...]] = ("application/pdf",)
    limit: ClassVar[int] = 32 * 1024 * 1024


Media = Annotated[Image | Document, Field(discriminator="type")]
"""An image or a document."""


def media_from_path(path: str | Path) -> Image | Document:
    """An `Image` or a `Document`, as the file's bytes say; a UsageError naming the types
    taken when they are neither."""
    return media_from_bytes(_read(path, "file"), name=Path(path).name)


def media_from_bytes(data: bytes, *, name: str = "") -> Image | Document:
    """An `Image` or a `Document`, as the bytes say; a UsageError naming the types taken when
    they are neither."""
    media_type = sniff(data)
    if media_type is None:
        what = f"{name}: " if name else ""
        raise UsageError(
            f"{what}not an image ({Image.types()}) or a document ({Document.types()}), "
            "read from its bytes"
        )
    kind = Document if media_type in Document.accepted else Image
    return kind.from_bytes(data, name=name)
