"""A real PostgreSQL the tests start themselves: Debian's `postgresql` package (`initdb`,
`pg_ctl`) in a temporary folder, on a free port, its socket in that folder; once per test
session, a database of its own per test.

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as the package's
`postgres` user (`runuser`), in a folder made over to it. Without the binaries the tests are
skipped, except on CI (`CI` set), which installs them (`make system`) and so fails instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from .servers import free_port

INSTALL = "scripts/system_packages.sh test (make system) installs Debian's postgresql"
SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c max_connections=200"
)
"""A server for tests: nothing it holds must outlive a crash of the machine."""


def postgres_bindir() -> Path | None:
    """The folder of `initdb`, `pg_ctl` and `postgres`: on the PATH, else Debian's newest."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).resolve().parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}; {INSTALL}")
    pytest.skip(f"{what}; {INSTALL}")


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str = "reins"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    @contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database for one test: its URL; dropped afterwards."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@contextmanager
def run_postgres() -> Iterator[PostgresServer]:
    """Start a PostgreSQL server for the block (skipped or failed if there is none to run)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install 'reins[postgres]')")
    bindir = postgres_bindir()
    if bindir is None:
        _missing("PostgreSQL's initdb is not installed")
        raise AssertionError  # unreachable: _missing skips or fails
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="reins-postgres-"))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder)
            _missing("running as root, and there is no `postgres` user to run PostgreSQL as")
            raise AssertionError from None
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()
    try:
        _run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "reins", "-A", "trust",
              "--no-sync", "-E", "UTF8", "--locale=C"])  # fmt: skip
        options = f"-p {port} -k {folder} {SETTINGS}"
        log = folder / "log"
        _run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log),
              "-w", "-t", "60", "-o", options, "start"], log)  # fmt: skip
        try:
            yield PostgresServer(port)
        finally:
            subprocess.run(
                [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(command: list[str], log: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        said = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr or done.stdout}{said}")
