"""The catalog of embedded models: names, installation checks, assembly into the cache."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

import reins
from reins import ModelSettings, SystemMessage, UsageError, UserMessage, resolve_model
from reins.core._actions import parse_action
from reins.models import LocalModel, _embedded
from reins.models._embedded import (
    DEFAULT_EMBEDDED,
    EMBEDDED,
    EmbeddedModel,
    cache_dir,
    check_installed,
    embedded_gguf,
)
from reins.tools import final_answer, list_files, read_file, write_file

ROOT = Path(__file__).resolve().parents[1]
PARTS = [b"GGUF" + b"a" * 1000, b"b" * 7, b"c" * 300]


@pytest.fixture
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def install_fake(
    site: Path, prefix: str, parts: list[bytes], version: str = "1.0", skip: int | None = None
) -> None:
    """Distributions `PREFIX-part1`..., laid out as pip installs the part wheels: the data in
    `PREFIX_partN/data/partNN.bin`, listed in the dist-info's RECORD."""
    for i, data in enumerate(parts, 1):
        if i == skip:
            continue
        package = f"{prefix}_part{i}"
        (site / package / "data").mkdir(parents=True)
        (site / package / "data" / f"part{i:02d}.bin").write_bytes(data)
        info = site / f"{package}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {prefix}-part{i}\nVersion: {version}\n"
        )
        (info / "RECORD").write_text(
            f"{package}/__init__.py,,\n{package}/data/part{i:02d}.bin,,\n{info.name}/RECORD,,\n"
        )


def fake_model(prefix: str, parts: list[bytes], sha256: str | None = None) -> EmbeddedModel:
    whole = b"".join(parts)
    return EmbeddedModel(
        name=f"{prefix}-model",
        description="a test model",
        source="nowhere",
        license="MIT",
        extra=f"{prefix}-extra",
        packages=tuple((f"{prefix}-part{i}", "1.0") for i in range(1, len(parts) + 1)),
        size=len(whole),
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
    )


@pytest.fixture
def fake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, _cache: None
) -> Callable[..., EmbeddedModel]:
    """Installs fake parts on sys.path and registers their model in the catalog."""
    counter = iter(range(1000))

    def make(
        parts: list[bytes] = PARTS,
        sha256: str | None = None,
        version: str = "1.0",
        skip: int | None = None,
    ) -> EmbeddedModel:
        prefix = f"reinsfake{next(counter)}"
        site = tmp_path / f"site-{prefix}"
        site.mkdir()
        install_fake(site, prefix, parts, version, skip)
        monkeypatch.syspath_prepend(str(site))
        model = fake_model(prefix, parts, sha256)
        monkeypatch.setitem(EMBEDDED, model.name, model)
        return model

    return make


def leftovers() -> list[str]:
    folder = cache_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_the_cache_is_under_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache" / "reins" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "reins" / "models"


def test_the_parts_are_assembled_in_order_once_and_reused(
    fake: Callable[..., EmbeddedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake()
    path = embedded_gguf(model.name)
    assert path == cache_dir() / f"{model.name}-{model.sha256[:12]}.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert leftovers() == [path.name, path.name + ".lock"]  # no temporary file left

    def no_parts(model: EmbeddedModel) -> list[Path]:
        raise AssertionError("the parts were read again")

    monkeypatch.setattr(_embedded, "part_files", no_parts)
    assert embedded_gguf(model.name) == path  # reused: checked by size, not re-read
    check_installed(model.name)  # assembled: the parts may even be uninstalled now


def test_a_cached_file_of_the_wrong_size_is_assembled_again(
    fake: Callable[..., EmbeddedModel],
) -> None:
    model = fake()
    path = embedded_gguf(model.name)
    path.write_bytes(b"GGUF truncated")
    assert embedded_gguf(model.name).read_bytes() == b"".join(PARTS)


def test_parts_that_do_not_match_the_sha256_are_refused_and_nothing_is_left(
    fake: Callable[..., EmbeddedModel],
) -> None:
    model = fake(sha256="0" * 64)
    with pytest.raises(UsageError, match="do not make the expected file") as error:
        embedded_gguf(model.name)
    assert f"pip install 'reins[{model.extra}]' --force-reinstall" in str(error.value)
    assert not [name for name in leftovers() if not name.endswith(".lock")]


def test_parts_of_the_wrong_total_size_are_refused_before_writing(
    fake: Callable[..., EmbeddedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = fake()
    monkeypatch.setitem(EMBEDDED, model.name, dataclasses.replace(model, size=model.size + 1))
    with pytest.raises(UsageError, match=r"\(1,311 bytes; expected 1,312 bytes"):
        embedded_gguf(model.name)
    assert leftovers() == []


def test_an_unwritable_cache_is_a_clear_error(
    fake: Callable[..., EmbeddedModel], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = fake()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    with pytest.raises(UsageError, match=r"could not assemble the embedded model .* XDG_CACHE"):
        embedded_gguf(model.name)


@pytest.mark.parametrize("locking", [True, False])
def test_concurrent_loads_are_safe(
    fake: Callable[..., EmbeddedModel], monkeypatch: pytest.MonkeyPatch, locking: bool
) -> None:
    """With the lock one thread assembles and the rest reuse; without it (no fcntl) each writes
    its own temporary file and the renames are atomic: every caller gets the whole file."""
    model = fake(parts=[bytes([i]) * 200_000 for i in range(1, 9)])
    if not locking:
        monkeypatch.setattr(_embedded, "_locked", lambda path: contextlib.nullcontext())
    monkeypatch.setattr(_embedded, "CHUNK", 4096)  # many writes: the threads interleave
    start = threading.Barrier(8)
    results: list[bytes] = []
    errors: list[BaseException] = []

    def load() -> None:
        try:
            start.wait()
            results.append(embedded_gguf(model.name).read_bytes())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == [b"".join(bytes([i]) * 200_000 for i in range(1, 9))] * 8
    assert not [name for name in leftovers() if name.endswith(".tmp")]


CHILD = """
import dataclasses, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from reins.models import _embedded
model = _embedded.EmbeddedModel(**json.loads(sys.argv[2]))
_embedded.CHUNK = 4096
path = _embedded.assemble(model, _embedded.part_files(model), _embedded.cached_path(model))
print(hashlib.sha256(path.read_bytes()).hexdigest())
"""


def test_concurrent_processes_assemble_safely(
    fake: Callable[..., EmbeddedModel], tmp_path: Path
) -> None:
    model = fake(parts=[bytes([i]) * 300_000 for i in range(1, 9)])
    site = next(tmp_path.glob("site-*"))
    spec = {field.name: getattr(model, field.name) for field in dataclasses.fields(EmbeddedModel)}
    env = {**os.environ, "PYTHONPATH": str(Path(reins.__file__).parents[1])}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(site), json.dumps(spec)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [child.communicate(timeout=60)[0].strip() for child in children]
    assert [child.returncode for child in children] == [0] * 4
    assert outputs == [model.sha256] * 4
    assert leftovers() == [_embedded.cached_path(model).name + suffix for suffix in ("", ".lock")]


def test_a_missing_or_other_version_of_a_part_is_a_clear_error(
    fake: Callable[..., EmbeddedModel],
) -> None:
    missing = fake(skip=2)
    with pytest.raises(UsageError, match="part2 is missing") as error:
        check_installed(missing.name)
    assert f"install it with `pip install 'reins[{missing.extra}]'`" in str(error.value)
    other = fake(version="2.0")
    with pytest.raises(UsageError, match=r"part1 is 2.0, not the pinned 1.0"):
        embedded_gguf(other.name)
    assert leftovers() == []


def test_names_resolve_to_embedded_models(
    fake: Callable[..., EmbeddedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp")
    model = fake()
    # the default's entry, served by fake parts (the real ones are 1.1 GB, not installed in CI)
    monkeypatch.setitem(
        EMBEDDED, DEFAULT_EMBEDDED, dataclasses.replace(fake(), name=DEFAULT_EMBEDDED)
    )
    local = resolve_model(f"local:{model.name}")
    assert isinstance(local, LocalModel)
    assert (local.name, local.embedded, local.path) == (f"local:{model.name}", model.name, None)
    assert leftovers() == []  # resolving only checks; the first load assembles
    default = resolve_model("local")
    assert isinstance(default, LocalModel)
    assert (default.name, default.embedded) == ("local", None)
    smollm2 = resolve_model("local:smollm2")
    assert isinstance(smollm2, LocalModel)
    assert smollm2.name == "local:smollm2"
    assert embedded_gguf() == embedded_gguf(DEFAULT_EMBEDDED) != embedded_gguf("smollm2")
    with pytest.raises(UsageError, match=r"no GGUF model file at 'qwen-7b' \(embedded models: "):
        resolve_model("local:qwen-7b")


def test_a_name_whose_parts_are_missing_names_the_pip_command(
    fake: Callable[..., EmbeddedModel],
) -> None:
    pytest.importorskip("llama_cpp")
    model = fake(skip=3)
    with pytest.raises(UsageError, match=rf"pip install 'reins\[{model.extra}\]'"):
        resolve_model(f"local:{model.name}")


def test_each_models_extra_pins_its_parts() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for model in EMBEDDED.values():
        if model.file is not None:
            continue
        pins = {f"{name}=={version}" for name, version in model.packages}
        assert pins <= set(extras[model.extra]), model.name
        assert len(model.sha256) == 64
        assert model.license == "Apache-2.0"
    # `reins[local]`, which the README's demo installs, brings the default model
    assert extras["local"] == [f"reins[{EMBEDDED[DEFAULT_EMBEDDED].extra}]"]


TOOLS = [write_file.spec, read_file.spec, list_files.spec, final_answer.spec]


@pytest.mark.real_model
@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in EMBEDDED if name != "smollm2"])
async def test_an_installed_embedded_model_samples_a_valid_action(name: str) -> None:
    """Loads the real model when its parts are installed (the 0.5B is, by `make setup`: the
    repairs' real-model tests use it); it is assembled into the user's own cache, as a user's
    first load would."""
    pytest.importorskip("llama_cpp")
    try:
        check_installed(name)
    except UsageError as exc:
        pytest.skip(f"{name} is not installed: {exc}")
    model = LocalModel(embedded=name, n_ctx=4096)
    messages = [
        SystemMessage(content="You are an agent."),
        UserMessage(content="Create the file hello.txt containing the text Hello from reins"),
    ]
    response = await model.request(messages, TOOLS, ModelSettings(max_tokens=256))
    assert response.finish == "tool_use", response.message.text
    [call] = response.message.tool_calls
    action = parse_action(json.dumps({"name": call.name, "arguments": call.arguments}), TOOLS)
    assert action.name == "write_file", action
    assert response.model_name == f"local:{name}"
