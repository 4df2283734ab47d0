from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reins import SQLiteLog
from reins.store import IndexedLog
from reins.testing import block_model_requests

from .helpers import Backend

if TYPE_CHECKING:
    from .postgres import PostgresServer


@pytest.fixture(autouse=True)
def _no_real_models(request: pytest.FixtureRequest) -> Iterator[None]:
    """Real model calls are refused unless a test is marked `real_model`."""
    if request.node.get_closest_marker("real_model"):
        yield
        return
    with block_model_requests():
        yield


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The developer's own ~/.config/reins/config.toml stays out of the tests: an empty one
    is read instead (a REINS_CONFIG that names no file is an error)."""
    empty = tmp_path / "no-user-config.toml"
    empty.touch()
    monkeypatch.setenv("REINS_CONFIG", str(empty))


@pytest.fixture(autouse=True)
def _no_user_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The developer's own data folder (stores, the log key) stays out of the tests: each
    test has its own, beside its tmp_path (a workspace there must not hold it, as a user's
    does not)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user-data")))


@pytest.fixture(autouse=True)
def _no_prefix_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded model's prefix cache (~/.cache/reins/prefix) stays out of the tests: each
    request evaluates what it would without it. Its own tests turn it on, in a folder of theirs."""
    monkeypatch.setenv("REINS_PREFIX_CACHE", "0")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
async def sqlite_log(tmp_path: Path) -> AsyncIterator[SQLiteLog]:
    log = SQLiteLog(tmp_path / "store")
    yield log
    await log.close()


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """A real OpenAI-compatible server (llama-cpp-python's) on the embedded SmolLM2 model."""
    from .servers import llama_cpp_server

    with llama_cpp_server() as base_url:
        yield base_url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server, started once for the tests that need one (tests/postgres.py)."""
    from .postgres import run_postgres

    with run_postgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A new, empty database of that server, for one test."""
    with postgres_server.database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A new store of each kind the contract holds for: a folder (SQLite + JSONL), and a
    PostgreSQL database."""
    if request.param == "postgres":
        return Backend("postgres", request.getfixturevalue("postgres_url"))
    return Backend("sqlite", str(tmp_path / "store"))


@pytest.fixture
async def any_log(backend: Backend) -> AsyncIterator[IndexedLog]:
    log = backend.open()
    yield log
    await log.close()
