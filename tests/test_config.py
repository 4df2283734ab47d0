"""Config files: keys and base URLs per provider, named endpoints, the default model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reins import UnknownModel, UsageError, resolve_model
from reins.cli import app
from reins.models import AnthropicModel, OpenAIModel

USER = """
model = "openai:gpt-4o-mini"

[providers.openai]
api_key = "sk-user"
base_url = "https://proxy.example/v1"

[providers.vllm]
base_url = "http://gpu-box:8000/v1"
api_key_env = "VLLM_KEY"

[providers.lab]
base_url = "http://lab:9000"
api = "anthropic"
api_key = "lab-key"
"""


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "user" / "config.toml"
    path.parent.mkdir()
    path.write_text(USER)
    monkeypatch.setenv("REINS_CONFIG", str(path))
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "VLLM_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # no project file here
    return path


def test_a_provider_gets_its_key_and_base_url_from_the_user_file(user_config: Path) -> None:
    model = resolve_model("openai:gpt-4o")
    assert isinstance(model, OpenAIModel)
    assert (model.base_url, model.api_key) == ("https://proxy.example/v1", "sk-user")


def test_the_environment_wins_over_the_files(
    user_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://from-env/v1")
    model = resolve_model("openai:gpt-4o")
    assert isinstance(model, OpenAIModel)
    assert (model.base_url, model.api_key) == ("http://from-env/v1", "sk-user")


def test_a_named_endpoint_is_a_model_prefix(
    user_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_KEY", "secret-from-env")
    vllm = resolve_model("vllm:qwen2.5-7b")
    assert isinstance(vllm, OpenAIModel)
    assert (vllm.name, vllm.base_url, vllm.api_key) == (
        "vllm:qwen2.5-7b",  # what the log records, so `reins resume` finds it again
        "http://gpu-box:8000/v1",
        "secret-from-env",
    )
    lab = resolve_model("lab:claude-haiku-4-5")
    assert isinstance(lab, AnthropicModel)
    assert (lab.name, lab.base_url, lab.api_key) == (
        "lab:claude-haiku-4-5",
        "http://lab:9000",
        "lab-key",
    )
    with pytest.raises(UnknownModel, match="unknown model 'nope:x'"):
        resolve_model("nope:x")


def test_a_key_variable_that_is_not_set_is_reported(user_config: Path) -> None:
    with pytest.raises(UsageError, match=r"providers\.vllm in \$VLLM_KEY, which is not set"):
        resolve_model("vllm:qwen2.5-7b")


def test_the_project_file_wins_key_by_key(user_config: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / "src").mkdir(parents=True)
    (project / "reins.toml").write_text(
        'model = "vllm:llama3.1"\n[providers.openai]\nbase_url = "http://team-proxy/v1"\n'
    )
    from reins._config import load_config

    config = load_config(project / "src")  # found in a parent folder
    assert config.model == "vllm:llama3.1"
    openai = config.endpoint("openai")
    assert (openai.base_url, openai.api_key) == ("http://team-proxy/v1", "sk-user")


def test_a_project_file_may_not_hold_a_key(user_config: Path, tmp_path: Path) -> None:
    (tmp_path / "reins.toml").write_text('[providers.openai]\napi_key = "sk-leak"\n')
    with pytest.raises(UsageError, match="must not hold a key; set api_key_env"):
        resolve_model("openai:gpt-4o")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model = ", r"is not valid TOML"),
        ("[providers.openai]\nbase_ur = 'x'\n", r"providers\.openai\.base_ur: Extra inputs"),
        ("[providers.vllm]\napi = 'grpc'\n", r"providers\.vllm\.api: Input should be"),
        ("providers = 3\n", r"providers: Input should be a valid dictionary"),
    ],
)
def test_a_bad_config_is_one_clear_error(user_config: Path, text: str, message: str) -> None:
    user_config.write_text(text)
    with pytest.raises(UsageError, match=message):
        resolve_model("openai:gpt-4o")


def test_an_endpoint_without_a_base_url_is_reported(user_config: Path) -> None:
    user_config.write_text("[providers.box]\napi_key = 'k'\n")
    with pytest.raises(UsageError, match=r"providers\.box needs a base_url"):
        resolve_model("box:qwen")


def test_reins_run_uses_the_configured_model(
    user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["FINAL_ANSWER: configured"]))
    user_config.write_text(f"model = 'script:{script}'\n")
    monkeypatch.delenv("REINS_MODEL", raising=False)
    done = CliRunner().invoke(app, ["run", "hello", "--json", "--store", str(tmp_path / "s")])
    assert done.exit_code == 0, done.output
    assert '"final_answer":"configured"' in done.output


def test_reins_run_reports_a_broken_config_in_one_line(
    user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config.write_text("[providers.openai]\nbase_url = [")  # brackets: not markup
    monkeypatch.delenv("REINS_MODEL", raising=False)
    done = CliRunner().invoke(app, ["run", "hello", "--store", str(tmp_path / "s")])
    assert done.exit_code == 2
    [line] = done.output.splitlines()  # one line, whatever the terminal's width
    assert line.startswith("error: config file ")
    assert "is not valid TOML" in line


def test_a_projects_commands_wait_until_the_users_file_trusts_it(
    user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reins._config import ProjectCommands, StopHookConfig, load_config

    user_config.write_text('checks = ["mine"]\n')
    project = (tmp_path / "repo").resolve()
    (project / "src").mkdir(parents=True)
    (project / "reins.toml").write_text('checks = ["theirs"]\n[[stop_hooks]]\ncommand = "hook"\n')
    config = load_config(project / "src")
    assert (config.checks, config.stop_hooks) == (("mine",), ())  # the user's, until trusted
    assert config.project_commands == ProjectCommands(
        path=project / "reins.toml",
        checks=("theirs",),
        stop_hooks=(StopHookConfig(command="hook"),),
    )
    trusted = config.trusting_project()
    assert (trusted.checks, trusted.stop_hooks) == (("theirs",), (StopHookConfig(command="hook"),))
    assert trusted.project_commands is None

    monkeypatch.setenv("HOME", str(tmp_path))
    user_config.write_text('checks = ["mine"]\ntrusted_projects = ["~/repo"]\n')
    assert load_config(project / "src") == trusted

    (project / "reins.toml").write_text("checks = []\n")  # nothing to run: nothing to trust
    user_config.write_text('checks = ["mine"]\n')
    config = load_config(project)
    assert (config.checks, config.project_commands) == ((), None)

    monkeypatch.setenv("REINS_CONFIG", str(project / "reins.toml"))  # the user's own file
    (project / "reins.toml").write_text('checks = ["mine"]\n')
    assert load_config(project).checks == ("mine",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('trusted_projects = ["repo"]\n', "'repo' is not an absolute path; name the folder"),
        ('trusted_projects = "/repo"\n', r"trusted_projects must be a list of folders"),
        ("checks = [1]\n", r"checks\.0: Input should be a valid string"),
    ],
)
def test_a_bad_trust_list_is_one_clear_error(user_config: Path, text: str, message: str) -> None:
    from reins._config import load_config

    user_config.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_config()


def test_a_projects_bad_commands_are_reported_with_its_file(
    user_config: Path, tmp_path: Path
) -> None:
    from reins._config import load_config

    (tmp_path / "reins.toml").write_text("[[stop_hooks]]\ncommand = 3\n")
    with pytest.raises(UsageError, match=r"reins\.toml: stop_hooks\.0\.command: Input should be"):
        load_config()
