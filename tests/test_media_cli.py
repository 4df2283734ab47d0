"""`reins run --image FILE`: the file goes with the goal, kept in the log as a blob; a file that
is missing or no image is one clear line, before anything runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reins import Image, SQLiteLog, UserMessage
from reins.core._paths import project_store
from reins.events import RunStarted

from .test_cli import only_run_id, reins, script
from .test_media import PDF, png


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "shot.png").write_bytes(png())
    (tmp_path / "spec.pdf").write_bytes(PDF)
    return tmp_path


def test_images_and_a_pdf_go_with_the_goal(project: Path) -> None:
    model = script(project / "s.json", ["FINAL_ANSWER: a red pixel"])
    done = reins(
        "run", "What is this?", "--image", "shot.png", "--image", "spec.pdf",
        "-m", model, "-w", "ws", cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "a red pixel" in done.stdout
    given = (
        "What is this? [+ image shot.png (image/png, 69 bytes)] "
        "[+ document spec.pdf (application/pdf, 48 bytes)]"
    )
    assert f"goal {given}" in done.stdout
    shown = reins("show", "last", cwd=project)
    assert f"user: {given}" in shown.stdout, shown.stdout
    store = project_store(project)
    started = asyncio.run(first_event(store, only_run_id(project)))
    assert isinstance(started, RunStarted)
    goal = started.messages[-1]
    image = Image.from_bytes(png(), name="shot.png")
    assert isinstance(goal, UserMessage)
    assert goal.content == "What is this?"
    assert [(m.type, m.name, m.data) for m in goal.media] == [
        ("image", "shot.png", png()),
        ("document", "spec.pdf", PDF),
    ]
    assert (store / "blobs" / image.sha256[:2] / image.sha256).read_bytes() == png()


async def first_event(store: Path, run_id: str) -> object:
    log = SQLiteLog(store)  # a fresh reader: the bytes come back from the blob
    try:
        return (await log.events(run_id))[0]
    finally:
        await log.close()


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("missing.png", "error: missing.png: cannot read the file (No such file or directory)"),
        ("notes.txt", "error: notes.txt: not an image (PNG, JPEG, GIF, WEBP) or a document (PDF)"),
        ("ws", "error: ws: cannot read the file (a folder"),
    ],
)
def test_a_missing_or_unsupported_file_is_one_clear_line(
    project: Path, file: str, message: str
) -> None:
    (project / "notes.txt").write_text("not an image")
    model = script(project / "s.json", ["FINAL_ANSWER: never"])
    done = reins("run", "look", "--image", file, "-m", model, "-w", "ws", cwd=project)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (project_store(project) / "reins.db").exists()  # nothing ran
