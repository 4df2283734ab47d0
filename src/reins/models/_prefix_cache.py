"""The embedded model's prompt prefix, kept on disk from one process to the next.

A run's system prompt and tool list are the same from one run to the next, yet a new process
would evaluate them from scratch (1,250 tokens, 26 s on 2 cores for the default model). After
a request whose prompt was mostly evaluated fresh, the llama.cpp context's state (its KV cache)
is written to `$XDG_CACHE_HOME/reins/prefix/` with the tokens it holds; a later request, in
any process, loads the entry sharing the longest token prefix with its prompt, and
llama-cpp-python evaluates only the rest.

An entry is one file: a magic, a JSON header (format version, the key, the token count, the
state's size, a sha256 of the payload), then the tokens (little-endian int32) and the state's
bytes. The key is everything the state depends on: the model file, the llama.cpp build, the
context and model settings. An entry is loaded only if its header parses, its key equals the
model's and its payload matches its sha256; any other file is deleted (and so replaced at the
next save). Entries are written to a temporary file in the same folder and renamed into place,
so two processes saving one entry each write a whole file and the last rename wins. Past the
size bound, the least recently used entries (by mtime, touched on every load) go.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import struct
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core._errors import UsageError

MAGIC = b"REINSKV\x00"
VERSION = 1
SUFFIX = ".prefix"
MIN_PREFIX = 64
"""Fewer shared tokens than this are not worth a load (a chat template's first line is ~5)."""
SAVE_FRESH = 512
"""A request that evaluated this many prompt tokens fresh, or half its prompt, is saved."""
DEFAULT_MB = 1024
STALE_TEMPORARY = 3600
"""Seconds after which a temporary file is a crashed writer's, and removed."""


def enabled() -> bool:
    """`REINS_PREFIX_CACHE`: 0 (or false, no, off) turns the cache off; it is on by default."""
    raw = os.environ.get("REINS_PREFIX_CACHE", "").strip().lower()
    if raw in ("", "1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"REINS_PREFIX_CACHE={raw!r} is neither 1 (on) nor 0 (off)")


def max_bytes() -> int:
    """`REINS_PREFIX_CACHE_MB` (default 1024): the bound on the folder's entries."""
    raw = os.environ.get("REINS_PREFIX_CACHE_MB", "").strip()
    if not raw:
        return DEFAULT_MB << 20
    if not raw.isdigit():
        raise UsageError(f"REINS_PREFIX_CACHE_MB={raw!r} is not a number of megabytes")
    return int(raw) << 20


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/reins/prefix, else ~/.cache/reins/prefix."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reins" / "prefix"


def cache_key(llm: Any, model_id: str) -> dict[str, Any]:
    """What a context's state depends on: the model file (`model_id`), the llama.cpp build
    and the CPU features it uses, and every numeric setting of the context and the model
    (threads aside: they do not change the state)."""
    import llama_cpp

    def scalars(params: Any) -> dict[str, Any]:
        values = {}
        for name, kind in params._fields_:
            if "thread" in name or name == "no_perf":
                continue
            if kind in (ctypes.c_int, ctypes.c_uint, ctypes.c_float, ctypes.c_bool, ctypes.c_ulong):
                values[name] = getattr(params, name)
        return values

    return {
        "model": model_id,
        "llama_cpp": llama_cpp.__version__,
        "system": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        "context": scalars(llm.context_params),
        "model_params": scalars(llm.model_params),
    }


@dataclass(frozen=True)
class Entry:
    path: Path
    tokens: np.ndarray
    size: int


@dataclass
class PrefixStore:
    """The folder of entries for one key: find, read (verified), write, bound."""

    folder: Path
    key: dict[str, Any]
    limit: int = field(default_factory=max_bytes)
    _index: dict[Path, Entry] = field(default_factory=dict, init=False)
    _seen: tuple[int, int] | None = field(default=None, init=False)

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()

    def best(self, prompt: np.ndarray, at_least: int) -> list[tuple[int, Entry]]:
        """The entries sharing at least `at_least` leading tokens with `prompt`, longest first."""
        matches = [(_common(entry.tokens, prompt), entry) for entry in self.entries()]
        return sorted(
            ((n, e) for n, e in matches if n >= at_least), key=lambda m: m[0], reverse=True
        )

    def entries(self) -> list[Entry]:
        """This key's entries, from their headers; re-read only when the folder changed."""
        try:
            info = self.folder.stat()
        except OSError:
            return []
        seen = (info.st_mtime_ns, info.st_ino)
        if seen != self._seen:
            self._seen = seen
            index: dict[Path, Entry] = {}
            for path in self.folder.glob(f"*{SUFFIX}"):
                entry = self._index.get(path) or self._head(path)
                if entry is not None:
                    index[path] = entry
            self._index = index
        return list(self._index.values())

    def read(self, entry: Entry) -> bytes | None:
        """The entry's state bytes if the whole file checks out; else None, and it is gone."""
        try:
            data = entry.path.read_bytes()
        except OSError:
            return None
        parsed = self._parse(data)
        if parsed is None or not np.array_equal(parsed[0], entry.tokens):
            self.discard(entry.path)
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.path)  # recently used
        return parsed[1]

    def write(self, tokens: np.ndarray, state: bytes | memoryview) -> Path:
        """Save an entry (temporary file, then rename), then keep the folder in its bound."""
        raw = np.asarray(tokens, dtype="<i4").tobytes()
        payload = hashlib.sha256(raw)
        payload.update(state)
        header = json.dumps(
            {
                "version": VERSION,
                "key": self.key,
                "tokens": len(tokens),
                "state_bytes": len(state),
                "sha256": payload.hexdigest(),
            },
            sort_keys=True,
        ).encode()
        name = hashlib.sha256(self.digest.encode() + raw).hexdigest()[:32] + SUFFIX
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / name
        fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=f".{name}.", suffix=".tmp")
        try:
            # No fsync: a file cut short by a crash fails its sha256 and is never loaded.
            with open(fd, "wb") as out:
                out.write(MAGIC + struct.pack("<I", len(header)) + header)
                out.write(raw)
                out.write(state)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        self.prune()
        return target

    def prune(self) -> None:
        """Remove the least recently used entries (of any key) past the bound, and temporary
        files left by writers that died."""
        entries = []
        now = time.time()
        with contextlib.suppress(OSError):
            for path in self.folder.iterdir():
                with contextlib.suppress(OSError):
                    info = path.stat()
                    if path.name.endswith(SUFFIX):
                        entries.append((info.st_mtime, info.st_size, path))
                    elif path.name.endswith(".tmp") and now - info.st_mtime > STALE_TEMPORARY:
                        path.unlink()
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.limit:
                break
            self.discard(path)
            total -= size

    def discard(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()
        self._index.pop(path, None)

    def _head(self, path: Path) -> Entry | None:
        """An entry of this key from its header and tokens (checked in full when read); a file
        that is not a valid entry is removed, one of another key left to its own model."""
        try:
            with path.open("rb") as src:
                start = src.read(len(MAGIC) + 4)
                if len(start) < len(MAGIC) + 4 or not start.startswith(MAGIC):
                    raise ValueError("not an entry")
                (length,) = struct.unpack("<I", start[len(MAGIC) :])
                header = json.loads(src.read(length))
                if header.get("version") != VERSION:
                    raise ValueError("another version")
                if header.get("key") != self.key:
                    return None
                count = int(header["tokens"])
                raw = src.read(4 * count)
                if len(raw) != 4 * count:
                    raise ValueError("cut short")
                return Entry(path, np.frombuffer(raw, dtype="<i4"), path.stat().st_size)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.discard(path)
            return None

    def _parse(self, data: bytes) -> tuple[np.ndarray, bytes] | None:
        """(tokens, state) of a whole file whose magic, version, key, sizes and sha256 all
        check out; None otherwise."""
        try:
            if not data.startswith(MAGIC):
                return None
            (length,) = struct.unpack_from("<I", data, len(MAGIC))
            start = len(MAGIC) + 4 + length
            header = json.loads(data[len(MAGIC) + 4 : start])
            if header.get("version") != VERSION or header.get("key") != self.key:
                return None
            count, size = int(header["tokens"]), int(header["state_bytes"])
            if len(data) != start + 4 * count + size:
                return None
            view = memoryview(data)[start:]
            if hashlib.sha256(view).hexdigest() != header["sha256"]:
                return None
            tokens = np.frombuffer(view[: 4 * count], dtype="<i4")
            return tokens, bytes(view[4 * count :])
        except (ValueError, KeyError, TypeError, AttributeError, struct.error):
            return None


@dataclass
class PromptHook:
    """Installed as `Llama.cache` for one request: llama-cpp-python consults it with the
    prompt's tokens before generating. It loads the best entry into the context itself and
    reports a miss (the library's own `load_state` would first fill a logits array of up to
    n_batch x n_vocab floats, 300 MB for Qwen), and it removes itself at once, so the library's
    save after the request (`save_state`, which copies that array) never runs."""

    llm: Any
    store: PrefixStore | None
    prompt: int = 0
    reused: int = 0
    loaded: int = 0

    def __getitem__(self, tokens: Sequence[int]) -> Any:
        self.llm.cache = None
        prompt = np.asarray(tokens, dtype=np.intc)
        live = _common(self.llm.input_ids[: self.llm.n_tokens], prompt)
        if self.store is not None and len(prompt) - live >= MIN_PREFIX:
            for shared, entry in self.store.best(prompt, live + MIN_PREFIX):
                if self._load(entry):
                    self.loaded = live = shared
                    break
        self.prompt = len(prompt)
        # What llama-cpp-python's generate keeps: the shared prefix, less one token when the
        # whole prompt is shared (it evaluates the last again for fresh logits).
        self.reused = min(live, len(prompt) - 1)
        raise KeyError("loaded in place")

    def __contains__(self, tokens: Sequence[int]) -> bool:
        return False

    @property
    def fresh(self) -> int:
        return self.prompt - self.reused

    def worth_saving(self) -> bool:
        return self.fresh >= MIN_PREFIX and (
            2 * self.fresh >= self.prompt or self.fresh >= SAVE_FRESH
        )

    def save(self) -> None:
        """Write the context's state (the prompt and the reply evaluated so far)."""
        import llama_cpp

        if self.store is None:
            return
        size = llama_cpp.llama_state_get_size(self.llm.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(self.llm.ctx, buffer, size)
        if not 0 < written <= size or written > self.store.limit:
            return
        tokens = np.array(self.llm.input_ids[: self.llm.n_tokens], dtype=np.intc)
        with contextlib.suppress(OSError):  # a full or read-only disk costs the cache only
            self.store.write(tokens, memoryview(buffer)[:written])

    def _load(self, entry: Entry) -> bool:
        import llama_cpp

        state = self.store.read(entry) if self.store is not None else None
        if state is None:
            return False
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_set_data(self.llm.ctx, buffer, len(state)) != len(state):
            self.llm.reset()  # a half-set context: evaluate everything again
            if self.store is not None:
                self.store.discard(entry.path)
            return False
        count = len(entry.tokens)
        self.llm.input_ids[:count] = entry.tokens
        self.llm.n_tokens = count
        self.llm._requires_eval = True  # the logits are not a live decode's (as load_state)
        return True


def _common(a: np.ndarray, b: np.ndarray) -> int:
    """The length of the longest common prefix of two token arrays."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n
