"""What `pip install reins[...]` brings a user, against what only working on reins needs."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DEVELOPMENT_ONLY = ("pytest", "ruff", "mypy", "mcp-server-", "smolagents", "sse-starlette")


def test_extras_hold_only_what_users_run() -> None:
    extras = PROJECT["project"]["optional-dependencies"]
    assert set(extras) >= {"local", "smollm2", "otel", "server", "acp", "eval"}
    for name, requirements in extras.items():
        for requirement in requirements:
            assert not requirement.startswith(DEVELOPMENT_ONLY), (name, requirement)


def test_tests_and_benchmarks_install_from_dependency_groups() -> None:
    groups = PROJECT["dependency-groups"]
    assert {"dev", "bench", "llama-server"} <= set(groups)
    assert any(str(r).startswith("pytest") for r in groups["dev"])
    assert {"include-group": "llama-server"} in groups["dev"]
    makefile = (ROOT / "Makefile").read_text()
    assert "--group dev" in makefile


def test_the_provider_extras_are_in_the_dev_group() -> None:
    """Their tests check the wire against the SDKs' own types, so the tests need them."""
    extras, dev = PROJECT["project"]["optional-dependencies"], PROJECT["dependency-groups"]["dev"]
    for name in ("gemini", "bedrock"):
        assert extras[name]
        assert all(requirement in dev for requirement in extras[name]), name
