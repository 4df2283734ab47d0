"""The chain that makes a session's journal tamper-evident, and the key that signs it.

Each journal line ends in a field `"mac":"<64 hex>"`: a MAC under the user's key of the previous
line's MAC followed by the line's bytes without that field (the event as serialized).
The first line's "previous MAC" is a MAC of the session's id, so a journal renamed to another
session's breaks at its first line. A command that can write a journal but cannot read the key
(it lives in the user's data folder, hidden from the sandbox) cannot make a line that verifies:
an edited, inserted, deleted or reordered line breaks the chain where it is.

The MAC is a field of the line, not of the event: events stay what the loop made (the typed
model has no field for it, and forbids unknown ones), and a line stays one JSON object that
`jq` reads. It is always the last field, 74 bytes, so stripping it is a slice.

The MAC is keyed BLAKE2b-256 (RFC 7693's keyed mode, a MAC and PRF; stdlib `hashlib`), not
HMAC-SHA256: HMAC hashes twice per line, and a CPU without SHA instructions (Intel before Ice
Lake; valgrind, which `benchmarks/instructions.py` counts under) runs SHA-256 in software at
about three times BLAKE2b's cost. Measured per round (four events): HMAC-SHA256 added 17 % to
the instruction count, keyed BLAKE2b 10 %; wall time about the same with SHA instructions.

What a chain cannot show alone: lines cut from the end of a journal leave a shorter chain that
still verifies. The index keeps each session's head (its size and last MAC) to catch that; with
the index deleted as well, a cut tail goes unseen (it can only remove events, never add one).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
from binascii import hexlify
from pathlib import Path
from typing import Final

from ..core._errors import StoreError
from ..core._files import fsync_directory

KEY_BYTES: Final = 32
FIELD: Final = b',"mac":"'
TAIL: Final = len(FIELD) + 64 + 2
"""The bytes of the MAC field at a line's end: `,"mac":"` + 64 hex + `"}`."""
_GENESIS: Final = b"reins journal\x00"

SIGNED: Final = "signed"
"""A journal whose first line verifies under the user's key: each line is checked."""
UNSIGNED: Final = "unsigned"
"""A journal with no MACs: written before logs were signed, or by another program."""
FOREIGN: Final = "foreign"
"""A journal signed with another key (another store's, another user's)."""


class Chain:
    """The user's key, and the MACs it makes."""

    __slots__ = ("_keyed", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # the most BLAKE2b takes as its key
            key = hashlib.blake2b(key).digest()
        self._keyed = hashlib.blake2b(key=key, digest_size=32)
        """The state after the key's block: each MAC copies it (a memcpy)."""
        self.key_id = self.mac(b"", b"reins key id")[:8].hex()
        """Names the key (not the secret): the index notes which key it was built under."""

    def mac(self, head: bytes, body: bytes) -> bytes:
        """The MAC of `head` followed by `body`."""
        mac = self._keyed.copy()
        mac.update(head + body)
        return mac.digest()

    def genesis(self, session_id: str) -> bytes:
        """The chain value before a session's first line."""
        return self.mac(_GENESIS, session_id.encode())

    def seal(self, head: bytes, bodies: list[bytes]) -> tuple[bytes, bytes]:
        """The journal lines (newlines included) of serialized events `bodies` (each a JSON
        object), chained on from `head`, and the new head. Each line is its body's length
        plus `TAIL` bytes, and its newline."""
        keyed = self._keyed
        parts: list[bytes] = []
        for body in bodies:  # `mac`, inlined: this is the append path
            mac = keyed.copy()
            mac.update(head + body)
            head = mac.digest()
            parts += (body[:-1], FIELD, hexlify(head), b'"}\n')
        return b"".join(parts), head

    def check(self, head: bytes, body: bytes, mac: bytes) -> bool:
        """Whether `mac` is the MAC of a line holding `body` that follows `head`."""
        return hmac.compare_digest(self.mac(head, body), mac)


def trust_of(chain: Chain | None, session_id: str, lines: list[bytes]) -> str:
    """What a journal is, from its first lines: SIGNED if its first line verifies under
    `chain`, or if its second line chains on from the first (then the first was changed
    after it was written, and checking the chain finds it); else UNSIGNED or FOREIGN."""
    if not lines:
        return SIGNED
    body, mac = opened(lines[0])
    if mac is None:
        return UNSIGNED
    if chain is None:
        return FOREIGN
    if chain.check(chain.genesis(session_id), body, mac):
        return SIGNED
    if len(lines) > 1:
        second, after = opened(lines[1])
        if after is not None and chain.check(mac, second, after):
            return SIGNED
    return FOREIGN


def mismatch(run_id: str, seq: int) -> str:
    """What is said of a line whose MAC does not match, after where it is."""
    return (
        f"holds event {seq} of run {run_id}, whose MAC does not match: the journal was "
        "changed after it was written"
    )


def opened(line: bytes) -> tuple[bytes, bytes | None]:
    """A journal line's event bytes and the MAC it claims (None: the line has none)."""
    if len(line) > TAIL and line.endswith(b'"}') and line[-TAIL : 8 - TAIL] == FIELD:
        with contextlib.suppress(ValueError):
            return line[:-TAIL] + b"}", bytes.fromhex(line[-66:-2].decode())
    return line, None


def mac_before(data: bytes) -> bytes | None:
    """The MAC of the line that `data` ends with (its newline included), if it has one."""
    if not data.endswith(b'"}\n') or data[-TAIL - 1 : 7 - TAIL] != FIELD:
        return None
    try:
        return bytes.fromhex(data[-67:-3].decode())
    except ValueError:
        return None


def load_key(path: Path) -> Chain | None:
    """The key at `path`; None if there is none yet."""
    try:
        with open(path, "rb") as f:
            key = f.read(KEY_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):  # nor its folder: made by the first write
        return None
    except OSError as exc:
        raise _key_error(path, exc.strerror or str(exc)) from None
    if len(key) != KEY_BYTES:
        raise _key_error(path, f"it holds {len(key)} bytes, not the {KEY_BYTES} of a key")
    return Chain(key)


def create_key(path: Path) -> Chain:
    """The key at `path`, made if there is none. Two processes making it at once end with one
    key, which both use: the new key is written whole to a file of its own, then linked to
    `path` (as O_EXCL does, the link fails if `path` exists); a reader never sees it half-made."""
    found = load_key(path)
    if found is not None:
        return found
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.write(fd, secrets.token_bytes(KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(draft, path)
                fsync_directory(path.parent)  # losing the key loses every log's signature
            except FileExistsError:
                pass  # another process made it first: its key is the one
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                    raise
                # A filesystem without hard links: O_EXCL on the key's own name.
                with contextlib.suppress(FileExistsError):
                    _write_exclusive(path)
        finally:
            draft.unlink(missing_ok=True)
    except OSError as exc:
        raise _key_error(path, exc.strerror or str(exc), making=True) from None
    made = load_key(path)
    if made is None:  # removed between its making and now
        raise _key_error(path, "it vanished as it was made", making=True)
    return made


def _write_exclusive(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)


def _key_error(path: Path, why: str, *, making: bool = False) -> StoreError:
    verb = "make" if making else "read"
    return StoreError(
        f"cannot {verb} {path}, the key that signs your event logs ({why}); "
        + (
            "make its folder writable, or set XDG_DATA_HOME to one that is"
            if making
            else "if it is damaged, move it aside: a new key is made, and the logs it signed "
            "read as not yours"
        )
    )
