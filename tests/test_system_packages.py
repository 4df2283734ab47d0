"""scripts/system_packages.sh, where it may not install: one line naming the command, and a failure.

The script runs as a real unprivileged user (the test's own, or `nobody` when the suite runs as
root) with a PATH of stubs, so a package can look missing without touching the machine: `apt-get`
is a stub that leaves a mark if it is ever called, and there is no `sudo`.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "system_packages.sh"


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    # Not tmp_path: pytest makes that readable by its own user only, and `nobody` must read it.
    path = Path(tempfile.mkdtemp(prefix="reins-system-"))
    path.chmod(0o755)
    shutil.copy(SCRIPT, path / "system_packages.sh")
    (path / "called").mkdir(mode=0o777)
    (path / "called").chmod(0o777)  # the stubs, run as `nobody`, leave their marks here
    commands = ("cmake", "g++", "npm", "tmux", "zsh", "fish", "chromium", "pg_ctlcluster")
    commands += ("bwrap", "python3")
    for name in (*commands, "apt-get"):
        stub = path / name
        stub.write_text(f"#!/bin/sh\n: > {path}/called/{name}\n")
        stub.chmod(0o755)
    real_id = shutil.which("id")
    assert real_id is not None
    (path / "id").symlink_to(real_id)
    yield path
    shutil.rmtree(path)


def run_unprivileged(bin_dir: Path, group: str) -> subprocess.CompletedProcess[str]:
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("running as root and there is no user `nobody` to run the script as")
        as_user = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    return subprocess.run(
        ["/bin/bash", str(bin_dir / "system_packages.sh"), group],
        env={"PATH": str(bin_dir)},
        cwd=bin_dir,
        capture_output=True,
        text=True,
        timeout=30,
        **as_user,
    )


def test_missing_packages_without_the_right_to_install_give_one_line_and_fail(
    bin_dir: Path,
) -> None:
    (bin_dir / "bwrap").unlink()
    (bin_dir / "tmux").unlink()
    result = run_unprivileged(bin_dir, "test")
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr == (
        "make test needs bubblewrap tmux: run  sudo apt-get install bubblewrap tmux"
        "  (or as root: make system)\n"
    )
    assert not (bin_dir / "called" / "apt-get").exists()


def test_without_apt_get_the_line_names_the_packages(bin_dir: Path) -> None:
    (bin_dir / "npm").unlink()
    (bin_dir / "apt-get").unlink()
    result = run_unprivileged(bin_dir, "bench")
    assert result.returncode != 0
    assert result.stderr == (
        "make bench needs nodejs npm (Debian's names): install them with the system's package "
        "manager\n"
    )


def test_each_target_checks_only_what_it_needs(bin_dir: Path) -> None:
    (bin_dir / "bwrap").unlink()
    (bin_dir / "tmux").unlink()
    assert run_unprivileged(bin_dir, "demo").returncode == 0
    bench = run_unprivileged(bin_dir, "bench")
    assert "needs bubblewrap:" in bench.stderr  # and not tmux, which only the chat tests use
    (bin_dir / "cmake").unlink()
    assert "make demo needs cmake:" in run_unprivileged(bin_dir, "demo").stderr


def test_nothing_missing_is_silent(bin_dir: Path) -> None:
    result = run_unprivileged(bin_dir, "all")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert (bin_dir / "called" / "python3").exists()  # the libseccomp check ran


def test_the_tests_and_the_benchmarks_need_postgresql_and_the_demo_does_not(
    bin_dir: Path,
) -> None:
    (bin_dir / "pg_ctlcluster").unlink()
    assert run_unprivileged(bin_dir, "demo").returncode == 0
    for group in ("test", "bench"):
        assert f"make {group} needs postgresql: run  sudo apt-get install postgresql" in (
            run_unprivileged(bin_dir, group).stderr
        )
