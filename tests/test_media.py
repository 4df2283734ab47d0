"""Images and documents in messages: values read from their bytes, written to the log as a
reference to a blob (once), read back whole for a resume, and turned into a note for a model
that cannot see them."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path

import pytest

from reins import (
    MESSAGES,
    Agent,
    AssistantMessage,
    Budgets,
    Document,
    Image,
    Message,
    SQLiteLog,
    StopReason,
    StoreError,
    ToolCall,
    ToolResultMessage,
    UsageError,
    UserMessage,
)
from reins.context._tokens import estimate
from reins.core._media import IMAGE_TOKENS, PAGE_TOKENS
from reins.core._messages import goal_message, unseen
from reins.events import Notice, ToolCallFinished
from reins.testing import FunctionModel
from reins.tools import read_file

Carrier = UserMessage | ToolResultMessage


def png(red: int = 255) -> bytes:
    """A real 1x1 PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(bytes([0, red, 0, 0]))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 32
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


def test_the_media_type_is_read_from_the_bytes_not_the_name(tmp_path: Path) -> None:
    named_png = tmp_path / "shot.png"
    named_png.write_bytes(JPEG)
    image = Image.from_path(named_png)
    assert (image.media_type, image.name, image.size) == ("image/jpeg", "shot.png", len(JPEG))
    webp = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8
    assert Image.from_bytes(webp).media_type == "image/webp"
    assert Document.from_bytes(PDF).media_type == "application/pdf"


def test_a_file_that_is_no_image_gets_one_clear_error(tmp_path: Path) -> None:
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    with pytest.raises(UsageError, match=r"notes.png: an image is one of PNG, JPEG, GIF, WEBP"):
        Image.from_path(text)
    with pytest.raises(UsageError, match=r"is application/pdf: give it as a Document"):
        Image.from_bytes(PDF)
    with pytest.raises(UsageError, match=r"missing.png: cannot read the image"):
        Image.from_path(tmp_path / "missing.png")
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"pipe.png: cannot read the image \(a FIFO"):
        Image.from_path(fifo)  # refused, not waited on


def test_the_log_holds_a_reference_and_old_messages_still_load() -> None:
    image = Image.from_bytes(png(), name="shot.png")
    line = MESSAGES.dump_json([UserMessage(content="look", media=(image,))])
    assert line == (
        b'[{"role":"user","content":"look","media":[{"media_type":"image/png","sha256":"'
        + image.sha256.encode()
        + b'","size":69,"name":"shot.png","type":"image"}]}]'
    )
    [old] = MESSAGES.validate_json(b'[{"role":"user","content":"hi"}]')
    assert old == UserMessage(content="hi")
    assert MESSAGES.dump_json([old]) == b'[{"role":"user","content":"hi"}]'


def test_the_goal_is_its_texts_then_its_images_and_documents() -> None:
    image, doc = Image.from_bytes(png()), Document.from_bytes(PDF)
    message = goal_message(["What is wrong here?", image, "and here", doc])
    assert message == UserMessage(content="What is wrong here?\n\nand here", media=(image, doc))
    with pytest.raises(UsageError, match="the goal holds a int: give texts, Images and Documents"):
        goal_message(["look", 3])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="the goal is empty"):
        goal_message(["  "])


def test_a_model_that_cannot_see_is_told_what_it_was_not_sent() -> None:
    image = Image.from_bytes(png(), name="shot.png")
    assert unseen(UserMessage(content="look", media=(image,))) == UserMessage(
        content="look\n\n[image shot.png (image/png, 69 bytes) was given here; this model "
        "cannot take images, so it was not sent]"
    )
    assert unseen(UserMessage(content="", media=(image,))).content.startswith("[image shot.png")


async def test_a_run_with_an_image_resumes_with_the_same_bytes_and_one_blob(
    tmp_path: Path, workspace: Path
) -> None:
    seen: list[UserMessage] = []

    def model(messages: list[Message], tools: object) -> str:
        seen.append(next(m for m in messages if isinstance(m, UserMessage) and m.media))
        return "a red pixel"

    store = tmp_path / "store"
    image = Image.from_bytes(png(), name="shot.png")
    agent = Agent(model=FunctionModel(model), log=SQLiteLog(store), workspace=workspace)
    first = await agent.run(["What is this?", image])
    second = await agent.run("and now?", session_id=first.session_id)
    await agent.log.close()
    assert first.stop_reason == second.stop_reason == StopReason.END_TURN
    # The model got the bytes both times (the second turn's history read back from the log).
    assert [m.media[0].data for m in seen] == [png(), png()]
    assert seen[1].media == (image,)
    blobs = [p for p in (store / "blobs").rglob("*") if p.is_file()]
    assert blobs == [store / "blobs" / image.sha256[:2] / image.sha256]
    assert blobs[0].read_bytes() == png()
    journal = (store / "sessions" / f"{first.session_id}.jsonl").read_bytes()
    assert image.sha256.encode() in journal
    assert base64.b64encode(png()) not in journal
    # A fresh process reads the run back whole.
    log = SQLiteLog(store)
    started = (await log.events(first.run_id))[0]
    await log.close()
    assert started.messages[-1] == UserMessage(content="What is this?", media=(image,))


async def test_a_blob_missing_or_changed_is_an_error_not_another_image(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    image = Image.from_bytes(png())
    agent = Agent(model=FunctionModel(lambda m, t: "ok"), log=SQLiteLog(store), workspace=workspace)
    result = await agent.run(["look", image])
    await agent.log.close()
    blob = store / "blobs" / image.sha256[:2] / image.sha256
    blob.write_bytes(png(red=0))
    log = SQLiteLog(store)
    with pytest.raises(StoreError, match="was changed after it was written"):
        await log.events(result.run_id)
    blob.unlink()
    with pytest.raises(StoreError, match=r"which is missing \(the log folder was copied"):
        await log.events(result.run_id)
    await log.close()


async def test_a_model_with_no_vision_gets_a_note_and_the_user_a_notice(workspace: Path) -> None:
    sent: list[str] = []

    class Blind(FunctionModel):
        vision = False

    def model(messages: list[Message], tools: object) -> str:
        sent.append(messages[-1].content)  # type: ignore[union-attr]
        return "ok"

    agent = Agent(model=Blind(model), workspace=workspace)
    result = await agent.run(["look", Image.from_bytes(png(), name="a.png")])
    notices = [e.text for e in await agent.log.events(result.run_id) if isinstance(e, Notice)]
    assert notices == [
        "model 'function' takes no images or documents: it is told that 1 of them were "
        "given, and sees none"
    ]
    assert sent == [
        "look\n\n[image a.png (image/png, 69 bytes) was given here; this model cannot take "
        "images, so it was not sent]"
    ]


async def test_a_run_stopped_at_a_cap_resumes_in_another_process_with_its_images(
    tmp_path: Path, workspace: Path
) -> None:
    """The image the tool returned and the goal's both come back from the blobs."""
    (workspace / "shot.png").write_bytes(png(red=9))
    sent: list[list[bytes]] = []

    def model(messages: list[Message], tools: object) -> AssistantMessage | str:
        sent.append([p.data for m in messages if isinstance(m, Carrier) for p in m.media])
        if len(sent) == 1:
            return AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="read_file", arguments={"path": "shot.png"}),)
            )
        return "two red pixels"

    store = tmp_path / "store"
    first = Agent(
        model=FunctionModel(model),
        tools=[read_file],
        log=SQLiteLog(store),
        workspace=workspace,
        budgets=Budgets(max_steps=1),
    )
    stopped = await first.run(["Compare", Image.from_bytes(png())])
    await first.log.close()
    assert stopped.stop_reason == StopReason.MAX_STEPS
    again = Agent(
        model=FunctionModel(model), tools=[read_file], log=SQLiteLog(store), workspace=workspace
    )
    resumed = await again.resume(stopped.run_id, max_steps=3)
    await again.log.close()
    assert resumed.final_answer == "two red pixels"
    assert sent == [[png()], [png(), png(red=9)]]
    assert len([p for p in (store / "blobs").rglob("*") if p.is_file()]) == 2


def test_images_and_pdf_pages_count_in_the_context_estimate() -> None:
    pages = PDF.replace(
        b"trailer", b"<< /Type /Pages >> << /Type /Page >> << /Type/Page >> trailer"
    )
    message = UserMessage(
        content="abc", media=(Image.from_bytes(png()), Document.from_bytes(pages))
    )
    # 1 token of text, 4 around the message, an image, two pages
    assert estimate([message]) == 1 + 4 + IMAGE_TOKENS + 2 * PAGE_TOKENS


async def test_an_image_read_for_a_model_that_cannot_see_is_recorded_as_its_note(
    tmp_path: Path, workspace: Path
) -> None:
    """The tool's output the user sees says what the model got; no blob is kept for it."""
    (workspace / "shot.png").write_bytes(png())
    sent: list[str] = []

    class Blind(FunctionModel):
        vision = False

    def model(messages: list[Message], tools: object) -> AssistantMessage | str:
        if not sent:
            sent.append("")
            read = ToolCall(id="c1", name="read_file", arguments={"path": "shot.png"})
            return AssistantMessage(tool_calls=(read,))
        sent.append(messages[-1].content)  # type: ignore[union-attr]
        return "I cannot see it"

    store = tmp_path / "store"
    log = SQLiteLog(store)
    agent = Agent(model=Blind(model), tools=[read_file], log=log, workspace=workspace)
    result = await agent.run("What is in shot.png?")
    [finished] = [e for e in await log.events(result.run_id) if isinstance(e, ToolCallFinished)]
    await log.close()
    note = (
        "image shot.png (image/png, 69 bytes)\n\n[image shot.png (image/png, 69 bytes) was "
        "given here; this model cannot take images, so it was not sent]"
    )
    assert sent[1] == note
    assert finished.result == ToolResultMessage(call_id="c1", name="read_file", content=note)
    assert not (store / "blobs").exists()


async def test_read_file_returns_an_image_or_a_pdf_and_reads_text_named_like_one(
    workspace: Path,
) -> None:
    (workspace / "shot.png").write_bytes(png())
    (workspace / "spec.pdf").write_bytes(PDF)
    (workspace / "notes.png").write_text("just text\n")
    (workspace / "blob.bin").write_bytes(b"\x00\x01binary")
    calls = [
        ToolCall(id=f"c{i}", name="read_file", arguments={"path": path})
        for i, path in enumerate(["shot.png", "spec.pdf", "notes.png", "blob.bin"])
    ]
    replies: list[AssistantMessage | str] = [AssistantMessage(tool_calls=tuple(calls)), "done"]
    agent = Agent(
        model=FunctionModel(lambda m, t: replies.pop(0)), tools=[read_file], workspace=workspace
    )
    result = await agent.run("read them")
    events = await agent.log.events(result.run_id)
    # read-only calls run side by side: their results are recorded as each finishes
    found = sorted(
        (e.result for e in events if isinstance(e, ToolCallFinished)), key=lambda r: r.call_id
    )
    assert [(r.content, [m.media_type for m in r.media], r.is_error) for r in found] == [
        ("image shot.png (image/png, 69 bytes)", ["image/png"], False),
        ("document spec.pdf (application/pdf, 48 bytes)", ["application/pdf"], False),
        ("just text\n\n[1 line in all]", [], False),
        ("'blob.bin' is a binary file", [], True),
    ]
    assert found[0].media[0].data == png()


async def test_removing_a_session_deletes_the_blobs_no_other_session_names(
    tmp_path: Path, workspace: Path
) -> None:
    store = tmp_path / "store"
    shared, own = Image.from_bytes(png()), Image.from_bytes(png(red=1))
    log = SQLiteLog(store)
    agent = Agent(model=FunctionModel(lambda m, t: "ok"), log=log, workspace=workspace)
    gone = await agent.run(["look", shared, own])
    kept = await agent.run(["look again", shared])
    fresh = await agent.run(["and this", Image.from_bytes(png(red=2))])
    blobs = {p.name: p for p in (store / "blobs").rglob("*") if p.is_file()}
    for blob in blobs.values():  # written long ago, but for the last run's
        if blob.name != Image.from_bytes(png(red=2)).sha256:
            os.utime(blob, (0, 0))
    await log.remove(gone.session_id)
    await log.remove(fresh.session_id)
    left = {p.name for p in (store / "blobs").rglob("*") if p.is_file()}
    # `own` is gone; `shared` is still named by the other session; the fresh one is left
    # for a while (a run of another process may have just put it)
    assert left == {shared.sha256, Image.from_bytes(png(red=2)).sha256}
    assert (
        await agent.run("and now?", session_id=kept.session_id)
    ).stop_reason == StopReason.END_TURN
    await log.close()
