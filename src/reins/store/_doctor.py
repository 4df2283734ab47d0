"""`reins doctor`: find the damage in a store's journals and set it aside, keeping the rest.

A journal is checked line by line: each line's MAC must follow on from the line before under the
user's key (`_chain`), each line must be an event of its session, each run's events must follow
on (seq 1, 2, ...) from a `run_started`, and the file must end on a whole line. The first line
that fails, and everything after it, is the damaged tail. A repair moves that tail to
`<journal>.corrupt-<time>` beside the journal (it is never deleted), cuts the journal where the
tail began, and indexes the session again: each run in it then reads as of its last good event,
finished, or unfinished and resumable. A session whose index ran ahead of its journal (the file
was cut or replaced) is indexed again the same way.

A journal not signed with the user's key (written before logs were signed, or from another
store or user) is reported and left as it is: it reads, but no run of it goes on.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from ..core._events import EVENT
from ._chain import SIGNED, UNSIGNED, Chain, mismatch, opened, trust_of
from ._sqlite import SQLiteLog


@dataclass
class RunAccount:
    """One run's events on either side of the cut."""

    run_id: str
    kept: int = 0
    moved: int = 0
    stop_reason: str | None = None
    """As the kept events leave it (None: unfinished)."""


@dataclass(frozen=True)
class Finding:
    session_id: str
    path: Path
    problem: str
    """What is wrong, starting with where: `line 7 is not a reins event: ...`."""
    kept_lines: int
    kept_bytes: int
    moved_lines: int
    moved_bytes: int
    runs: tuple[RunAccount, ...] = ()
    aside: Path | None = None
    """Where the tail went, once repaired."""
    repaired: bool = False
    busy: bool = False
    """Another process writes the session: left alone."""
    unverified: bool = False
    """Not signed with the user's key: read, never continued; left as it is."""


@dataclass
class _Scan:
    cut: int
    """Bytes that are sound; the tail starts here."""
    lines: int
    """Whole lines before the cut."""
    problem: str | None
    trust: str = SIGNED
    at_indexed: bytes | None = None
    """The MAC of the line that ends where the index ends (signed journals)."""
    runs: dict[str, RunAccount] = field(default_factory=dict[str, RunAccount])


def doctor(log: SQLiteLog, *, repair: bool, sessions: Sequence[str] = ()) -> list[Finding]:
    """Check every journal (or those of `sessions`); with `repair`, set each damaged tail aside.
    Returns what was found, healthy sessions left out."""
    flagged = {damage.session_id: damage for damage in log.damage()}
    chain = log.verifier()
    directory = log.journals.directory
    paths = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    findings: list[Finding] = []
    for path in paths:
        session_id = path.stem
        if sessions and session_id not in sessions:
            continue
        if log.journals.writing(session_id):
            if session_id in flagged:
                findings.append(_busy(path, session_id, flagged[session_id].describe()))
            continue
        finding = _check(path, session_id, chain, log.head(session_id))
        if finding is None and session_id in flagged:  # the file is sound, the index is not
            finding = _reindexed(path, session_id, flagged[session_id].problem)
        if finding is not None:
            findings.append(_repair(log, finding) if repair and not finding.unverified else finding)
    for session_id in sorted(log.indexed_sessions() - {p.stem for p in paths}):
        if sessions and session_id not in sessions:
            continue
        missing = Finding(
            session_id=session_id,
            path=log.journals.path(session_id),
            problem="is missing: the index lists runs of it; they are dropped from the index",
            kept_lines=0,
            kept_bytes=0,
            moved_lines=0,
            moved_bytes=0,
        )
        if repair:
            log.reindex(session_id)
            missing = replace(missing, repaired=True)
        findings.append(missing)
    return findings


def _busy(path: Path, session_id: str, problem: str) -> Finding:
    return Finding(
        session_id=session_id,
        path=path,
        problem=problem,
        kept_lines=0,
        kept_bytes=0,
        moved_lines=0,
        moved_bytes=0,
        busy=True,
    )


def _reindexed(path: Path, session_id: str, problem: str) -> Finding:
    """A sound journal whose index is not: the index is rebuilt from it."""
    data = path.read_bytes()
    return Finding(
        session_id=session_id,
        path=path,
        problem=f"{problem}; its index is rebuilt from the file",
        kept_lines=data.count(b"\n"),
        kept_bytes=len(data),
        moved_lines=0,
        moved_bytes=0,
    )


def _check(
    path: Path, session_id: str, chain: Chain | None, head: tuple[int, bytes | None]
) -> Finding | None:
    data = path.read_bytes()
    indexed, noted = head
    scan = _scan(data, session_id, chain, indexed)
    if scan.problem is None and scan.trust != SIGNED:
        return Finding(
            session_id=session_id,
            path=path,
            problem=(
                "is not signed (from a reins before logs were signed, or another program)"
                if scan.trust == UNSIGNED
                else "is not signed with your key (from another store or another user)"
            ),
            kept_lines=scan.lines,
            kept_bytes=scan.cut,
            moved_lines=0,
            moved_bytes=0,
            runs=tuple(scan.runs.values()),
            unverified=True,
        )
    # Signed throughout, but not what was indexed (one shorter is flagged by the log).
    replaced = noted is not None and 0 < indexed <= scan.cut and scan.at_indexed != noted
    if scan.problem is None and replaced:
        return _reindexed(
            path,
            session_id,
            f"is not the journal the index holds (no line of it ends at byte {indexed} with "
            "the MAC the index holds): it was replaced after it was written",
        )
    if scan.problem is None:
        return None
    tail = data[scan.cut :]
    runs = scan.runs
    for line in tail.splitlines():  # what of each run the tail holds, as far as it reads
        try:
            event = EVENT.validate_json(opened(line)[0])
        except ValidationError:
            continue
        runs.setdefault(event.run_id, RunAccount(event.run_id)).moved += 1
    return Finding(
        session_id=session_id,
        path=path,
        problem=f"line {scan.lines + 1} {scan.problem}",
        kept_lines=scan.lines,
        kept_bytes=scan.cut,
        moved_lines=tail.count(b"\n") + (0 if tail.endswith(b"\n") else 1),
        moved_bytes=len(tail),
        runs=tuple(runs.values()),
    )


def _scan(data: bytes, session_id: str, chain: Chain | None, indexed: int) -> _Scan:
    scan = _Scan(cut=0, lines=0, problem=None)
    runs = scan.runs
    scan.trust = trust_of(chain, session_id, data.split(b"\n", 2)[:2])
    head = chain.genesis(session_id) if chain is not None and scan.trust == SIGNED else None
    while scan.cut < len(data):
        end = data.find(b"\n", scan.cut)
        if end < 0:
            scan.problem = "is cut off (a partial line: a write interrupted by a crash)"
            return scan
        body, mac = opened(data[scan.cut : end])
        try:
            event = EVENT.validate_json(body)
        except ValidationError as exc:
            scan.problem = f"is not a reins event: {exc.errors()[0]['msg']}"
            return scan
        if head is not None and chain is not None:
            if mac is None or not chain.check(head, body, mac):
                scan.problem = mismatch(event.run_id, event.seq)
                return scan
            head = mac
        run = runs.get(event.run_id)
        due = run.kept + 1 if run is not None else 1
        if event.session_id != session_id:
            scan.problem = f"holds an event of another session ({event.session_id})"
        elif event.seq != due:
            scan.problem = f"holds event {event.seq} of run {event.run_id} where {due} was due"
        elif run is None and event.kind != "run_started":
            scan.problem = f"begins run {event.run_id} with {event.kind}, not run_started"
        if scan.problem is not None:
            return scan
        run = runs.setdefault(event.run_id, RunAccount(event.run_id))
        run.kept += 1
        if event.kind == "run_finished":
            run.stop_reason = event.stop_reason.value
        elif event.kind == "run_resumed":
            run.stop_reason = None
        scan.cut = end + 1
        scan.lines += 1
        if scan.cut == indexed:
            scan.at_indexed = head
    return scan


def _repair(log: SQLiteLog, finding: Finding) -> Finding:
    """Move the tail aside and index the session again, holding its writer lock throughout."""
    path = finding.path
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        return replace(finding, problem=f"{finding.problem} (cannot be opened to repair: {exc})")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return replace(finding, busy=True)
        # As it is now that no one else writes it.
        now = _check(path, finding.session_id, log.verifier(), log.head(finding.session_id))
        finding = now or replace(finding, moved_lines=0, moved_bytes=0)  # else: the index only
        aside = None
        if finding.moved_bytes:
            aside = path.with_name(f"{path.name}.corrupt-{datetime.now(UTC):%Y%m%dT%H%M%S%f}")
            with open(aside, "xb") as out:
                out.write(os.pread(fd, finding.moved_bytes, finding.kept_bytes))
                out.flush()
                os.fsync(out.fileno())
            os.ftruncate(fd, finding.kept_bytes)
            os.fsync(fd)
        log.reindex(finding.session_id)
        return replace(finding, aside=aside, repaired=True)
    finally:
        os.close(fd)  # closing releases the lock
