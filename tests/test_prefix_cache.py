"""The embedded model's prompt prefix cache on disk (reins.models._prefix_cache)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from reins import ModelSettings, SystemMessage, UsageError, UserMessage
from reins.core._model import ModelResponse, TextChunk
from reins.models import LocalModel
from reins.models._embedded import embedded_gguf
from reins.models._prefix_cache import MAGIC, PrefixStore, cache_folder, enabled
from reins.tools import final_answer, list_files, read_file, write_file

TOOLS = [write_file.spec, read_file.spec, list_files.spec, final_answer.spec]
SYSTEM = "You are an agent. You act on files in the workspace, one action at a time."
GOAL = "Create the file hello.txt containing the text Hello from reins"
OTHER_GOAL = "List the files in the folder src"
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(autouse=True)
def cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The cache on, in a folder of this test's; no drafted tokens (llama.cpp counts a
    drafted batch as prompt evaluated, the counter these tests read)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("REINS_PREFIX_CACHE", "1")
    monkeypatch.setenv("REINS_LOCAL_DRAFTS", "0")
    return tmp_path / "cache" / "reins" / "prefix"


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.prefix"))


def prompt_evaluated(model: LocalModel) -> int:
    """Prompt tokens llama.cpp decoded in batches so far (its own performance counter)."""
    import llama_cpp

    return int(llama_cpp.llama_perf_context(model.load().ctx).n_p_eval)


async def ask(model: LocalModel, goal: str = GOAL) -> ModelResponse:
    messages = [SystemMessage(content=SYSTEM), UserMessage(content=goal)]
    return await model.request(messages, TOOLS, ModelSettings(max_tokens=96))


HIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    import llama_cpp
    from reins import ModelSettings, SystemMessage, UserMessage
    from reins.models import LocalModel
    from reins.tools import final_answer, list_files, read_file, write_file

    async def main():
        model = LocalModel(embedded="smollm2")
        messages = [SystemMessage(content=sys.argv[1]), UserMessage(content=sys.argv[2])]
        tools = [write_file.spec, read_file.spec, list_files.spec, final_answer.spec]
        response = await model.request(messages, tools, ModelSettings(max_tokens=96))
        print(json.dumps({
            "input": response.usage.input_tokens,
            "read": response.usage.cache_read_tokens,
            "evaluated": llama_cpp.llama_perf_context(model.load().ctx).n_p_eval,
            "reply": response.message.model_dump(mode="json"),
        }))

    asyncio.run(main())
    """
)


@pytest.mark.real_model
async def test_a_new_process_loads_the_saved_prefix_and_evaluates_almost_nothing(
    cache_home: Path,
) -> None:
    first = LocalModel(embedded="smollm2")
    cold = await ask(first)
    assert cold.usage.cache_read_tokens == 0
    assert prompt_evaluated(first) == cold.usage.input_tokens  # all of it, fresh
    [entry] = entries(cache_home)

    env = {**os.environ, "PYTHONPATH": SRC}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HIT_SCRIPT, SYSTEM, GOAL, stdout=subprocess.PIPE, env=env
    )
    out, _ = await asyncio.wait_for(child.communicate(), 600)
    assert child.returncode == 0
    warm = json.loads(out)
    assert warm["input"] == cold.usage.input_tokens
    assert warm["read"] == cold.usage.input_tokens - 1  # the last is decoded again
    assert warm["evaluated"] <= 1
    assert warm["reply"] == cold.message.model_dump(mode="json")
    assert entries(cache_home) == [entry]  # a request mostly reused is not saved again

    # The run's next step, in the same process: the live context serves it, as before.
    again = await ask(first)
    assert again.usage.cache_read_tokens == again.usage.input_tokens - 1


@pytest.mark.real_model
async def test_another_model_file_or_context_setting_never_loads_the_entry(
    cache_home: Path,
) -> None:
    await ask(LocalModel(embedded="smollm2"))
    assert len(entries(cache_home)) == 1
    others = [
        LocalModel(embedded="smollm2", n_ctx=4096),  # another context size
        LocalModel(path=embedded_gguf("smollm2")),  # the same weights, named by path
    ]
    for count, model in enumerate(others, start=2):
        response = await ask(model)
        assert response.usage.cache_read_tokens == 0
        assert prompt_evaluated(model) == response.usage.input_tokens
        assert len(entries(cache_home)) == count  # each saved under its own key


@pytest.mark.real_model
async def test_a_different_goal_reuses_the_shared_prefix_with_the_same_reply(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ask(LocalModel(embedded="smollm2"), GOAL)
    cached = LocalModel(embedded="smollm2")
    response = await ask(cached, OTHER_GOAL)
    fresh = response.usage.input_tokens - response.usage.cache_read_tokens
    assert response.usage.cache_read_tokens > 0.9 * response.usage.input_tokens
    assert 0 < prompt_evaluated(cached) == fresh  # only the new goal's tokens
    assert len(entries(cache_home)) == 1  # too little was fresh to save another

    monkeypatch.setenv("REINS_PREFIX_CACHE", "0")
    uncached = LocalModel(embedded="smollm2")
    plain = await ask(uncached, OTHER_GOAL)
    assert plain.usage.cache_read_tokens == 0
    assert prompt_evaluated(uncached) == plain.usage.input_tokens
    assert plain.message == response.message  # the same reply at temperature 0


@pytest.mark.real_model
async def test_a_reply_stopped_early_still_saves_its_prompt(cache_home: Path) -> None:
    """As the first-chunk guard stops a slow first reply: the prompt's evaluation is kept."""
    model = LocalModel(embedded="smollm2", constrained=False)
    long_system = SystemMessage(content=SYSTEM * 4)  # more than the 64 tokens worth saving
    messages = [long_system, UserMessage(content="Write a very long story.")]
    async for item in model.stream(messages, [], ModelSettings(max_tokens=2000)):
        if isinstance(item, TextChunk):
            break  # closing the stream stops the generation
    for _ in range(200):  # the worker saves when it sees the stop, at its next token
        if entries(cache_home):
            break
        await asyncio.sleep(0.1)
    [entry] = entries(cache_home)
    store = PrefixStore(cache_home, model._prefixes.key)
    [(shared, found)] = store.best(np.asarray(found_tokens(model), dtype=np.intc), 64)
    assert found.path == entry
    assert shared >= 64  # the prompt and what was generated of the reply
    assert store.read(found) is not None


def found_tokens(model: LocalModel) -> list[int]:
    llm = model.load()
    return [int(t) for t in llm.input_ids[: llm.n_tokens]]


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the state's bytes
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def foreign(path: Path) -> None:
    path.write_bytes(b"PK\x03\x04" + os.urandom(4096))


def another_key(path: Path) -> None:
    """A valid entry whose header names another model: only a check of the key stops it."""
    data = path.read_bytes()
    (length,) = np.frombuffer(data[len(MAGIC) : len(MAGIC) + 4], dtype="<u4")
    start = len(MAGIC) + 4
    header = json.loads(data[start : start + int(length)])
    header["key"]["model"] = "sha256:" + "0" * 64
    raw = json.dumps(header).encode()
    path.write_bytes(MAGIC + np.uint32(len(raw)).tobytes() + raw + data[start + int(length) :])


@pytest.mark.real_model
async def test_a_damaged_or_foreign_entry_is_ignored_and_replaced(cache_home: Path) -> None:
    reply = await ask(LocalModel(embedded="smollm2"))
    [entry] = entries(cache_home)
    good = entry.read_bytes()
    for damage in (flip, truncate, foreign, another_key):
        damage(entry)
        model = LocalModel(embedded="smollm2")
        response = await ask(model)
        assert response.usage.cache_read_tokens == 0, damage.__name__
        assert prompt_evaluated(model) == response.usage.input_tokens, damage.__name__
        assert response.message == reply.message, damage.__name__
        assert entries(cache_home) == [entry]
        assert entry.read_bytes() == good, damage.__name__  # saved again, whole


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from reins.models._prefix_cache import PrefixStore

    store = PrefixStore(Path(sys.argv[1]), {"model": "test"}, limit=1 << 30)
    state = bytes([int(sys.argv[2])]) * (8 << 20)
    for _ in range(15):
        store.write(np.arange(500, dtype=np.intc), state)
    """
)


def test_two_processes_writing_one_entry_never_tear_it(tmp_path: Path) -> None:
    folder = tmp_path / "prefix"
    env = {**os.environ, "PYTHONPATH": SRC}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(n)], env=env)
        for n in (1, 2)
    ]
    store = PrefixStore(folder, {"model": "test"}, limit=1 << 30)
    tokens = np.arange(500, dtype=np.intc)
    reads = 0
    while any(w.poll() is None for w in writers):
        for path in folder.glob("*.prefix"):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            parsed = store._parse(data)  # what is there is always one writer's whole entry
            assert parsed is not None
            assert parsed[1] in (b"\x01" * (8 << 20), b"\x02" * (8 << 20))
            reads += 1
    assert [w.wait() for w in writers] == [0, 0]
    [(shared, entry)] = store.best(tokens, 64)
    assert shared == 500
    assert store.read(entry) in (b"\x01" * (8 << 20), b"\x02" * (8 << 20))
    assert [p.name for p in folder.iterdir()] == [entry.path.name]  # no temporary left
    assert reads > 0


def test_past_its_bound_the_least_recently_used_entries_go(tmp_path: Path) -> None:
    folder = tmp_path / "prefix"
    store = PrefixStore(folder, {"model": "test"}, limit=(5 << 20) // 2)  # 2.5 MB
    state = b"s" * (1 << 20)
    a, b, c = (np.arange(n, n + 100, dtype=np.intc) for n in (0, 1000, 2000))
    first = store.write(a, state)
    second = store.write(b, state)
    os.utime(first, (1, 1))
    os.utime(second, (2, 2))
    [(_, entry)] = store.best(a, 64)
    assert store.read(entry) == state  # reading it makes it the most recently used
    third = store.write(c, state)
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.name, third.name])


def test_the_cache_is_turned_off_or_bounded_by_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert cache_folder() == tmp_path / "cache" / "reins" / "prefix"
    for off in ("0", "off", "false"):
        monkeypatch.setenv("REINS_PREFIX_CACHE", off)
        assert not enabled()
    monkeypatch.setenv("REINS_PREFIX_CACHE", "maybe")
    with pytest.raises(UsageError, match="REINS_PREFIX_CACHE='maybe'"):
        enabled()
    monkeypatch.setenv("REINS_PREFIX_CACHE_MB", "12")
    assert PrefixStore(tmp_path, {}).limit == 12 << 20
    monkeypatch.setenv("REINS_PREFIX_CACHE_MB", "lots")
    with pytest.raises(UsageError, match="REINS_PREFIX_CACHE_MB='lots'"):
        PrefixStore(tmp_path, {})
