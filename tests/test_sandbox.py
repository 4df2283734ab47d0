"""The command sandbox, attacked for real: no mocks, each test a hostile command."""

from __future__ import annotations

import asyncio
import http.server
import os
import re
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reins import Agent, SQLiteLog, ToolCall, ToolContext, UsageError, Workspace
from reins.sandbox import SandboxPolicy, SandboxUnavailable, run_process
from reins.sandbox._landlock import available as landlock_available
from reins.testing import ScriptedModel
from reins.tools import BUILTIN_TOOLS, ToolExecutor, run_command

from .helpers import call, reply

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap); .ci/run installs it",
)
PY = sys.executable
SANDBOX_PY = os.path.realpath(sys.executable)
"""The interpreter itself (stdlib only) for commands in the sandbox: the venv may live under /tmp,
which the sandbox replaces with a private one."""


def needs_cgroup_when_unconfined(mode: str) -> None:
    """Unconfined, only a cgroup finds a child that left the process group (setsid)."""
    from reins.sandbox._cgroup import available

    if mode == "danger-full-access" and not available():
        pytest.skip("no writable pids cgroup here (root has one): setsid children escape")


def running(marker: str) -> list[int]:
    """Host pids of live processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def gone(marker: str, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while running(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host folder outside the workspace and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="reins-outside-"))
    (path / "secret.txt").write_text("outside secret")
    yield path
    shutil.rmtree(path)


@pytest.fixture
def server() -> Iterator[str]:
    """An HTTP server on the host's 127.0.0.1."""

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from the host")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def fetch(url: str) -> str:
    code = f"import urllib.request as u; print(u.urlopen('{url}', timeout=2).read())"
    return f'{SANDBOX_PY} -c "{code}"'


@needs_bwrap
async def test_writes_outside_the_workspace_do_not_reach_the_host(
    workspace: Path, outside: Path
) -> None:
    (workspace / "link").symlink_to(outside)
    escapes = [
        f"echo x > {outside}/abs.txt",
        f"echo x > ../../../../../../..{outside}/dotdot.txt",
        "echo x > link/symlink.txt",
        f"echo x > /proc/self/root{outside}/procroot.txt",
        f"rm -f {outside}/secret.txt",
        "echo x > /etc/reins-escape",
        "echo x > ~/reins-escape",
        f"ln -s {outside} /tmp/l && echo x > /tmp/l/tmplink.txt",
    ]
    for command in escapes:
        result = await run_process(command, workspace=workspace)
        assert result.exit_code != 0, command
        assert "Read-only file system" in result.output, (command, result.output)
    assert names(outside) == ["secret.txt"]
    assert "reins-escape" not in names(Path("/etc")) + names(Path.home())
    inside = await run_process("echo ok > inside.txt && cat inside.txt", workspace=workspace)
    assert (inside.exit_code, inside.output) == (0, "ok\n")
    assert (workspace / "inside.txt").read_text() == "ok\n"


@needs_bwrap
async def test_secrets_are_out_of_reach(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine x password hunter2")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sekrit-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-sekrit-2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-sekrit-3")
    monkeypatch.setenv("SOME_PLAIN_VAR", "plain-sekrit-4")
    command = (
        f"env; cat /proc/$PPID/environ /proc/1/environ /proc/{os.getpid()}/environ; "
        "cat /proc/*/environ; ls -a ~/.ssh; cat ~/.ssh/id_ed25519 ~/.netrc; "
        "cat /etc/shadow; ls /proc"
    )
    result = await run_process(command, workspace=workspace)
    for secret in ("sekrit", "PRIVATE KEY", "hunter2"):
        assert secret not in result.output
    assert not re.search(r"^root:", result.output, re.MULTILINE)  # /etc/shadow
    pids = {line for line in result.output.splitlines() if line.isdigit()}
    assert str(os.getpid()) not in pids  # the host's processes are not even listed
    assert f"HOME={home}" in result.output  # the allow-listed ones are there
    assert "PATH=" in result.output


@needs_bwrap
async def test_credentials_stay_hidden_when_the_workspace_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(tmp_path))
    result = await run_process(
        "cat notes.txt; echo; ls -A .ssh; cat .ssh/id_ed25519; touch .ssh/x", workspace=tmp_path
    )
    assert result.output == (
        "mine\ncat: .ssh/id_ed25519: No such file or directory\n"
        "touch: cannot touch '.ssh/x': Read-only file system\n"
    )


@needs_bwrap
async def test_policy_passes_named_variables_but_never_credentials(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROJECT_MODE", "ci")
    result = await run_process(
        "echo $PROJECT_MODE", workspace=workspace, policy=SandboxPolicy(env=("PROJECT_MODE",))
    )
    assert result.output == "ci\n"
    with pytest.raises(UsageError, match="OPENAI_API_KEY, AWS_PROFILE: credentials are never"):
        SandboxPolicy(env=("OPENAI_API_KEY", "AWS_PROFILE", "PROJECT_MODE"))


@needs_bwrap
async def test_git_and_the_log_folder_are_read_only(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "vendored" / ".git").mkdir(parents=True)  # a repository inside the workspace
    log = SQLiteLog(workspace / "logs")
    try:
        agent = Agent(
            model=ScriptedModel(
                [
                    reply(
                        "",
                        call(
                            "run_command",
                            command="echo evil > .git/hooks/pre-commit; echo x >> .git/config; "
                            "rm -rf logs; touch logs/new; touch vendored/.git/HEAD; "
                            "echo fine > ok.txt",
                        ),
                    ),
                    "FINAL_ANSWER: done",
                ]
            ),
            workspace=workspace,
            log=log,
            approval="allow",  # as --yes: approving never lifts the sandbox
        )
        result = await agent.run("try")
    finally:
        await log.close()
    [observation] = [m.content for m in result.messages if m.role == "tool"]
    assert "Read-only file system" in observation
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / "logs" / "new").exists()
    assert not (workspace / "vendored" / ".git" / "HEAD").exists()
    assert (workspace / "logs" / "reins.db").exists()
    assert (workspace / "ok.txt").read_text() == "fine\n"


@needs_bwrap
async def test_network_only_when_the_policy_allows_it(workspace: Path, server: str) -> None:
    closed = await run_process(fetch(server), workspace=workspace)
    assert closed.exit_code != 0
    assert "Connection refused" in closed.output
    opened = await run_process(
        fetch(server), workspace=workspace, policy=SandboxPolicy(network=True)
    )
    assert (opened.exit_code, opened.output) == (0, "b'hello from the host'\n")


@needs_bwrap
async def test_seccomp_refuses_new_namespaces_and_ptrace(workspace: Path) -> None:
    result = await run_process(
        "unshare -Ur true; echo $?; "
        f"{SANDBOX_PY} -c 'import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))'",
        workspace=workspace,
    )
    assert "unshare failed: Operation not permitted\n1\n" in result.output
    assert result.output.endswith("-1\n")  # PTRACE_ATTACH refused


@needs_bwrap
async def test_a_fork_bomb_is_bounded_and_the_run_still_ends(workspace: Path) -> None:
    policy = SandboxPolicy(processes=16)
    start = time.monotonic()
    counted = await run_process(
        "for i in $(seq 60); do sleep 30.25 & echo started; done",
        workspace=workspace,
        policy=policy,
        timeout=5,
    )
    assert 5 <= counted.output.count("started") < 16
    assert "fork" in counted.output.lower()  # the shell says it cannot fork
    bomb = await run_process(
        "b() { b | b & }; b; sleep 30.5",
        workspace=workspace,
        policy=SandboxPolicy(processes=64),
        timeout=1,
    )
    assert bomb.timed_out
    assert time.monotonic() - start < 6
    assert await gone("sleep 30.")


@needs_bwrap
async def test_the_resource_limits_are_set_for_the_command(workspace: Path) -> None:
    policy = SandboxPolicy(cpu_seconds=7, address_space=1 << 30, open_files=64)
    result = await run_process(
        "ulimit -t; ulimit -v; ulimit -n", workspace=workspace, policy=policy
    )
    assert result.output == "7\n1048576\n64\n"
    big = await run_process(
        f"{SANDBOX_PY} -c 'bytearray(2 << 30)'", workspace=workspace, policy=policy
    )
    assert "MemoryError" in big.output


@needs_bwrap
async def test_a_disk_filling_write_stops_at_the_file_size_limit(workspace: Path) -> None:
    policy = SandboxPolicy(file_size=1 << 20)
    result = await run_process(
        "head -c 50000000 /dev/zero > big; echo $?", workspace=workspace, policy=policy
    )
    assert (workspace / "big").stat().st_size == 1 << 20
    assert result.output.strip().endswith("153")  # 128 + SIGXFSZ


@needs_bwrap
async def test_a_gigabyte_of_output_costs_bounded_memory(workspace: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    result = await run_process(
        "head -c 1000000000 /dev/zero | tr '\\0' a; echo; echo the end",
        workspace=workspace,
        max_output=10_000,
    )
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.exit_code == 0
    assert result.bytes_cut == 1_000_000_000 + 9 - 10_000
    assert result.output.startswith("a" * 5000 + "\n[... 999990009 bytes cut ...]\n")
    assert result.output.endswith("a\nthe end\n")
    assert grown_kb < 50_000, f"the parent grew by {grown_kb} KB"
    assert time.monotonic() - start < 20


@needs_bwrap
@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
async def test_escaped_children_die_with_a_timeout(workspace: Path, mode: str) -> None:
    needs_cgroup_when_unconfined(mode)
    start = time.monotonic()
    result = await run_process(
        "setsid sleep 31.25 & nohup sleep 31.5 > /dev/null 2>&1 & "
        "(setsid sh -c 'sleep 31.75' &); echo started; sleep 31",
        workspace=workspace,
        policy=SandboxPolicy(mode=mode),  # type: ignore[arg-type]
        timeout=0.5,
    )
    assert (result.timed_out, result.exit_code, result.output) == (True, None, "started\n")
    assert time.monotonic() - start < 2
    assert await gone("sleep 31.")


@needs_bwrap
async def test_output_is_not_held_up_by_an_escaped_child(workspace: Path) -> None:
    """The command exits at once; a setsid grandchild holds its stdout open for 30 s."""
    start = time.monotonic()
    result = await run_process(
        "setsid sh -c 'sleep 32.5; echo late' & echo early", workspace=workspace, timeout=20
    )
    assert (result.exit_code, result.output) == (0, "early\n")
    assert time.monotonic() - start < 2
    assert await gone("sleep 32.5")


@needs_bwrap
@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
async def test_cancel_kills_the_whole_tree_at_once(workspace: Path, mode: str) -> None:
    needs_cgroup_when_unconfined(mode)
    task = asyncio.create_task(
        run_process(
            "s=33; setsid sleep $s.25 & nohup sleep $s.5 & sleep $s.75",
            workspace=workspace,
            policy=SandboxPolicy(mode=mode),  # type: ignore[arg-type]
            timeout=60,
        )
    )
    for _ in range(250):  # until all three are up
        await asyncio.sleep(0.02)
        if len(running("sleep 33.")) == 3:
            break
    assert len(running("sleep 33.")) == 3
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 0.5
    assert await gone("sleep 33.")


@needs_bwrap
async def test_the_timeout_is_clamped_to_the_policy(workspace: Path) -> None:
    ctx = ToolContext(
        workspace=Workspace(workspace),
        session_id="s",
        run_id="r",
        sandbox=SandboxPolicy(max_timeout=0.5),
    )
    executor = ToolExecutor(list(BUILTIN_TOOLS), context=ctx)
    start = time.monotonic()
    result = await executor.execute(
        ToolCall(id="c", name="run_command", arguments={"command": "sleep 30", "timeout": 1e9})
    )
    assert result.is_error
    assert result.content == (
        "command timed out after 0.5 s and was killed (the sandbox allows at most 0.5 s)"
    )
    assert time.monotonic() - start < 3


@needs_bwrap
async def test_read_only_refuses_writes_in_the_workspace(workspace: Path) -> None:
    (workspace / "a.txt").write_text("data")
    result = await run_process(
        "cat a.txt; echo; touch b.txt; echo scratch > /tmp/s && cat /tmp/s",
        workspace=workspace,
        policy=SandboxPolicy(mode="read-only"),
    )
    assert result.output == ("data\ntouch: cannot touch 'b.txt': Read-only file system\nscratch\n")
    assert names(workspace) == ["a.txt"]


async def test_danger_full_access_runs_unconfined(
    workspace: Path, outside: Path, server: str
) -> None:
    policy = SandboxPolicy(mode="danger-full-access")
    result = await run_process(
        f"echo x > {outside}/written.txt && cat {outside}/secret.txt; echo; {fetch(server)}",
        workspace=workspace,
        policy=policy,
    )
    assert result.output == "outside secret\nb'hello from the host'\n"
    assert (outside / "written.txt").read_text() == "x\n"


async def test_no_sandbox_means_commands_are_refused(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without bwrap
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        await run_process("true", workspace=workspace)
    executor = ToolExecutor(
        [run_command],
        context=ToolContext(workspace=Workspace(workspace), session_id="s", run_id="r"),
    )
    refused = await executor.execute(
        ToolCall(id="c", name="run_command", arguments={"command": "true"})
    )
    assert refused.is_error
    assert "bwrap is not installed" in refused.content
    assert "--sandbox danger-full-access" in refused.content
    done = await run_process(
        "echo unconfined", workspace=workspace, policy=SandboxPolicy(mode="danger-full-access")
    )
    assert done.output == "unconfined\n"


def test_run_command_tells_the_model_the_policy_in_force() -> None:
    from reins.tools._builtin import sandboxed

    assert SandboxPolicy().describe() in " ".join(run_command.description.split())
    assert sandboxed([run_command], SandboxPolicy()) == [run_command]
    [networked] = sandboxed([run_command], SandboxPolicy(network=True))
    assert "it may use the network" in networked.description
    [unconfined] = sandboxed([run_command], SandboxPolicy(mode="danger-full-access"))
    assert "unsandboxed" in unconfined.spec.description


def test_bad_policies_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown sandbox mode 'open'; choose one of read-only"):
        SandboxPolicy(mode="open")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="max_timeout must be positive"):
        SandboxPolicy(max_timeout=0)
    with pytest.raises(UsageError, match="processes must be at least 1"):
        SandboxPolicy(processes=0)


def test_the_config_sets_the_sandbox_and_a_project_may_only_tighten_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reins.agent._config import load_config

    user = tmp_path / "user.toml"
    monkeypatch.setenv("REINS_CONFIG", str(user))
    monkeypatch.chdir(tmp_path)
    user.write_text('[sandbox]\nnetwork = true\nenv = ["JAVA_HOME", "GOPATH"]\nmax_timeout = 300\n')
    assert load_config().sandbox.policy() == SandboxPolicy(
        network=True, env=("JAVA_HOME", "GOPATH"), max_timeout=300
    )
    project = tmp_path / "reins.toml"
    project.write_text('[sandbox]\nmode = "read-only"\nnetwork = false\nenv = ["GOPATH"]\n')
    assert load_config().sandbox.policy() == SandboxPolicy(
        mode="read-only", env=("GOPATH",), max_timeout=300
    )
    # the command line wins over both
    assert load_config().sandbox.policy(mode="workspace-write", network=True) == SandboxPolicy(
        network=True, env=("GOPATH",), max_timeout=300
    )
    user.write_text("")
    project.write_text(
        '[sandbox]\nmode = "danger-full-access"\nnetwork = true\nenv = ["X"]\nmax_timeout = 900\n'
    )
    with pytest.raises(UsageError) as caught:
        load_config()
    assert str(caught.value) == (
        f"config {project}: [sandbox] mode = 'danger-full-access' (yours: 'workspace-write'); "
        "network = true; env adds ['X']; max_timeout = 900 (yours: 600): a project file may "
        f"only tighten the sandbox; loosen it in your own config ({user}) or on the command "
        "line (--sandbox, --network)"
    )
    project.write_text('[sandbox]\nmode = "open"\n')
    with pytest.raises(UsageError, match=r"reins.toml: sandbox.mode: Input should be"):
        load_config()


@needs_bwrap
def test_the_command_line_chooses_the_sandbox(tmp_path: Path) -> None:
    import json
    import subprocess

    (tmp_path / "ws").mkdir()
    replies = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]},
        "FINAL_ANSWER: done",
    ]
    (tmp_path / "s.json").write_text(json.dumps(replies))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REINS_")}
    (tmp_path / "none.toml").touch()
    env["REINS_CONFIG"] = str(tmp_path / "none.toml")

    def reins(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                PY,
                "-m",
                "reins",
                "run",
                "go",
                "-m",
                f"script:{tmp_path / 's.json'}",
                "--yes",
                *flags,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    read_only = reins("-w", "ws", "--json", "--sandbox", "read-only")
    assert read_only.returncode == 0, read_only.stderr
    assert "Read-only file system" in read_only.stdout
    assert not (tmp_path / "ws" / "made.txt").exists()
    assert reins("-w", "ws", "--json", "--network").returncode == 0
    assert (tmp_path / "ws" / "made.txt").exists()
    bad = reins("-w", "ws", "--sandbox", "open")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: unknown sandbox mode 'open'; choose one of read-only")


@needs_bwrap
@pytest.mark.skipif(not landlock_available(), reason="Landlock scopes need Linux 6.12 or later")
async def test_with_the_network_on_the_hosts_abstract_sockets_stay_out_of_reach(
    workspace: Path,
) -> None:
    """Sharing the host's network namespace shares its abstract Unix sockets (D-Bus, X11...);
    Landlock's scope keeps them out of reach. Unconfined, the same connect works."""
    import socket

    name = f"reins-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind("\0" + name)
        listener.listen(4)
        connect = (
            f'{SANDBOX_PY} -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('\\\\0{name}'); print('connected')\""
        )
        networked = await run_process(
            connect, workspace=workspace, policy=SandboxPolicy(network=True)
        )
        assert "connected" not in networked.output
        assert (
            "PermissionError" in networked.output or "Operation not permitted" in networked.output
        )
        unconfined = await run_process(
            connect, workspace=workspace, policy=SandboxPolicy(mode="danger-full-access")
        )
        assert unconfined.output == "connected\n"


async def test_an_argv_runs_without_a_shell(workspace: Path) -> None:
    unconfined = SandboxPolicy(mode="danger-full-access")
    result = await run_process(["echo", "$HOME", "a b"], workspace=workspace, policy=unconfined)
    assert (result.exit_code, result.output) == (0, "$HOME a b\n")
    missing = await run_process(["no-such-program"], workspace=workspace, policy=unconfined)
    assert missing.exit_code != 0
    assert "no-such-program" in missing.output
    assert "No such file" in missing.output


BOTH_STREAMS = "echo out 1; echo err 1 >&2; echo out 2; echo err 2 >&2"


@needs_bwrap
async def test_stderr_is_merged_by_default_and_read_apart_when_asked(workspace: Path) -> None:
    merged = await run_process(BOTH_STREAMS, workspace=workspace)
    assert (merged.output, merged.stderr) == ("out 1\nerr 1\nout 2\nerr 2\n", None)
    apart = await run_process(BOTH_STREAMS, workspace=workspace, stderr="separate")
    assert (apart.exit_code, apart.output, apart.stderr) == (0, "out 1\nout 2\n", "err 1\nerr 2\n")
    # The sandbox's own complaint (bubblewrap cannot run the program) is on standard error.
    missing = await run_process(["no-such-program"], workspace=workspace, stderr="separate")
    assert missing.exit_code != 0
    assert missing.output == ""
    assert "no-such-program" in (missing.stderr or "")


@needs_bwrap
async def test_each_stream_read_apart_is_capped_on_its_own(workspace: Path) -> None:
    result = await run_process(
        "head -c 100000 /dev/zero | tr '\\0' e >&2; echo; echo the end >&2; echo small",
        workspace=workspace,
        max_output=1000,
        stderr="separate",
    )
    assert (result.exit_code, result.output, result.bytes_cut) == (0, "\nsmall\n", 0)
    assert result.stderr_cut == 100_008 - 1000
    assert result.stderr == "e" * 500 + "\n[... 99008 bytes cut ...]\n" + "e" * 492 + "the end\n"


@needs_bwrap
async def test_both_streams_read_apart_are_kept_on_a_timeout_and_the_tree_dies(
    workspace: Path,
) -> None:
    start = time.monotonic()
    result = await run_process(
        "s=34; echo started; echo warming up >&2; setsid sleep $s.5 & sleep $s",
        workspace=workspace,
        timeout=0.5,
        stderr="separate",
    )
    assert (result.timed_out, result.exit_code) == (True, None)
    assert (result.output, result.stderr) == ("started\n", "warming up\n")
    assert time.monotonic() - start < 2
    assert await gone("sleep 34")


@needs_bwrap
async def test_an_escaped_child_holding_stderr_open_does_not_hold_up_the_result(
    workspace: Path,
) -> None:
    start = time.monotonic()
    result = await run_process(
        's=35.5; setsid sh -c "sleep $s; echo late >&2" & echo early; echo soon >&2',
        workspace=workspace,
        timeout=20,
        stderr="separate",
    )
    assert (result.exit_code, result.output, result.stderr) == (0, "early\n", "soon\n")
    assert time.monotonic() - start < 2
    assert await gone("sleep 35.5")


@needs_bwrap
async def test_cancel_kills_the_tree_when_stderr_is_read_apart(workspace: Path) -> None:
    task = asyncio.create_task(
        run_process(
            "s=36; echo a; echo b >&2; setsid sleep $s.25 & sleep $s.5",
            workspace=workspace,
            timeout=60,
            stderr="separate",
        )
    )
    for _ in range(250):
        await asyncio.sleep(0.02)
        if len(running("sleep 36.")) == 2:
            break
    assert len(running("sleep 36.")) == 2
    fds = len(os.listdir("/proc/self/fd"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone("sleep 36.")
    assert len(os.listdir("/proc/self/fd")) <= fds - 2  # both pipes closed


async def test_a_bad_stderr_choice_is_one_clear_error(workspace: Path) -> None:
    with pytest.raises(UsageError, match='stderr=\'apart\': say "merge" or "separate"'):
        await run_process("true", workspace=workspace, stderr="apart")  # type: ignore[arg-type]
