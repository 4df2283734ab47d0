"""The bytes of the images and documents a log's events refer to, one file per sha256.

An event holds a reference (`Image.sha256`), never the bytes, so a screenshot sent in every
request of a run is on disk once however many events and runs carry it. A blob is written
before the journal line that refers to it, and checked against its name when read: a blob
changed on disk is an error, not a different image sent to the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..core._errors import StoreError
from ..core._events import ContextCompacted, Event, RunStarted, ToolCallFinished
from ..core._files import fsync_directory
from ..core._media import Document, Image
from ..core._messages import Message, ToolResultMessage, UserMessage

CARRIERS = (RunStarted, ToolCallFinished, ContextCompacted)
"""The events that may hold messages with media (told apart by their exact type: the log
checks each event it appends)."""


def media_in(event: Event) -> Iterator[Image | Document]:
    """The images and documents `event` refers to."""
    messages: tuple[Message, ...]
    match event:
        case ToolCallFinished():
            messages = (event.result,)
        case RunStarted():
            messages = event.messages
        case ContextCompacted():
            messages = event.prefix
        case _:  # most events carry no message
            return
    for message in messages:
        if isinstance(message, UserMessage | ToolResultMessage):
            yield from message.media


class FolderBlobs:
    """Blobs as files `<directory>/<first 2 hex>/<sha256>`, written once each."""

    def __init__(self, directory: Path, *, durable: bool = False) -> None:
        self.directory = directory
        self.durable = durable

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise StoreError(f"{sha256!r} is not a sha256 (a blob of the log is named by one)")
        return self.directory / sha256[:2] / sha256

    def put(self, sha256: str, data: bytes) -> None:
        path = self.path(sha256)
        if path.exists():  # content-addressed: the same name holds the same bytes
            with contextlib.suppress(OSError):
                os.utime(path)  # in use again: `drop` leaves it for a while
            return
        if hashlib.sha256(data).hexdigest() != sha256:
            raise StoreError(f"the bytes given for blob {sha256} do not have that sha256")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Whole or not at all: written aside, then renamed into place.
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".blob-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    if self.durable:
                        out.flush()
                        os.fsync(out.fileno())
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
            if self.durable:
                fsync_directory(path.parent)
        except OSError as exc:
            raise StoreError(f"cannot write the blob {path}: {exc.strerror or exc}") from None

    def get(self, sha256: str) -> bytes:
        path = self.path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise StoreError(
                f"the log refers to an image or document kept as {path}, which is missing "
                "(the log folder was copied without its blobs/ folder?)"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot read the blob {path}: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise StoreError(
                f"the blob {path} was changed after it was written (its bytes no longer have "
                "the sha256 it is named by): the log's image or document cannot be trusted"
            )
        return data

    def drop(self, unused: set[str], *, in_use: Iterable[Path]) -> None:
        """Delete the blobs of `unused` that none of the journals `in_use` refers to, and that
        were not written or used in the last `GRACE` seconds (a run of another process may have
        put one whose line is not yet committed)."""
        for path in in_use:
            if not unused:
                return
            with contextlib.suppress(OSError):
                unused -= referred(path.read_bytes())
        now = time.time()
        for sha256 in unused:
            blob = self.path(sha256)
            with contextlib.suppress(OSError):
                if now - blob.stat().st_mtime > GRACE:
                    blob.unlink()


GRACE = 600.0
REFERENCE = re.compile(rb'"sha256":"([0-9a-f]{64})"')
"""A reference to a blob in a journal line (an image's or a document's sha256)."""


def referred(journal: bytes) -> set[str]:
    """The blobs the lines of `journal` refer to."""
    return {m.decode() for m in REFERENCE.findall(journal)}
