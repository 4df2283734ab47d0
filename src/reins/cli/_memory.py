"""`reins memory`: the facts runs remember across sessions (`reins.memory`), read and kept by
hand: added, listed, searched, shown with their history, forgotten for real, exported and
imported as JSON Lines.

The project's and sessions' facts are in `<store>/memory.db`, the user's in the user's data
folder (`memory.db`, in every project); "this project" is the git repository above the current
folder, else the folder. A command that only reads makes no file."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ..core._errors import UsageError
from ._console import _one_line_errors, err, out
from ._options import StoreOpt
from ._safe import json_visible, visible

if TYPE_CHECKING:  # the commands import the memory when they run, so --help stays fast
    from rich.text import Text

    from ..agent._config import MemoryConfig
    from ..memory import Embeddings, Fact, Scope
    from ..memory._memories import Memories

memory_app = typer.Typer(
    rich_markup_mode="markdown",
    no_args_is_help=True,
    help="The facts runs remember across sessions: add, list, search, show, history, forget, "
    "export, import.",
)

SCOPES: tuple[Scope, ...] = ("user", "project", "session")
"""As `reins.memory.SCOPES`, without importing the memory for --help."""
DATE_FORMAT = "YYYY-MM-DD or an ISO time such as 2024-05-01T14:30 (UTC unless it names its zone)"

JsonOut = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print JSON for scripts: a fact as one object (its every field), facts as one array.",
    ),
]
ScopeOpt = Annotated[
    str | None,
    typer.Option(
        "--scope",
        metavar="user|project|session",
        help="Only the user's facts (every project), this project's, or the sessions'.",
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="DATE",
        help="What was true then: YYYY-MM-DD (the end of that day, UTC) or an ISO time.",
    ),
]
FactArg = Annotated[
    str, typer.Argument(metavar="FACT", help="A fact's id, or a unique start of one.")
]


@memory_app.command("add")
def add(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The fact, one sentence.")],
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            metavar="user|project|session",
            help="Whose it is: this project's (default), the user's (every project), or a "
            "session's (with --session).",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            metavar="ID",
            help="The session a session fact belongs to: its id, a unique start of one, or "
            "`last` (implies --scope session).",
        ),
    ] = None,
    valid_at: Annotated[
        str | None,
        typer.Option(
            "--valid-at",
            metavar="DATE",
            help="When it became true: YYYY-MM-DD (the start of that day, UTC) or an ISO time "
            "(default: now).",
        ),
    ] = None,
    json_out: JsonOut = False,
    store: StoreOpt = None,
) -> None:
    """Remember a fact: it is recalled by later runs of this project (or of every project,
    for a user fact). A text that holds a secret (a key, a token, a password, a match of
    your `[memory] redact` rules) is refused."""
    from ..memory._secrets import secret_in

    with _one_line_errors():
        chosen = _scope(scope) if scope is not None else ("session" if session else "project")
        if chosen == "session" and not session:
            raise UsageError("--scope session needs --session ID: the session the fact is of")
        if session and chosen != "session":
            raise UsageError(f"--session goes with --scope session, not --scope {chosen}")
        when = _moment("--valid-at", valid_at, end_of_day=False) if valid_at else None
        config = _config()
        kind = secret_in(text, config.redact)
        if kind is not None:
            raise UsageError(
                f"the fact looks like it holds a secret ({kind}), which memory never keeps: "
                "nothing was stored; say it without the secret (name where it is kept instead)"
            )
        memories = _memories(store, config)
        owner = ""
        if chosen == "project":
            owner = _project()
        elif chosen == "session":
            assert session is not None
            owner = _session_named(_store_of(store), session, memories)
        fact = memories.add(text, scope=chosen, owner=owner, valid_at=when)
        if json_out:
            _print_json(fact.to_json())
        else:
            out.print(fact.id)


@memory_app.command("list")
def list_facts(
    scope: ScopeOpt = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every version, those closed or superseded too (marked), whatever its time.",
        ),
    ] = False,
    as_of: AsOfOpt = None,
    json_out: JsonOut = False,
    store: StoreOpt = None,
) -> None:
    """The facts true now (or at --as-of): this project's, the user's and the sessions' (of
    this store), the latest first."""
    with _one_line_errors():
        if every and as_of:
            raise UsageError(
                "--all lists every version whatever its time, --as-of those true at one: "
                "give one of them"
            )
        chosen = _scope(scope) if scope is not None else None
        when = _moment("--as-of", as_of, end_of_day=True) if as_of else None
        memories = _memories(store)
        pairs = _scopes(memories, chosen)
        facts = memories.all(scopes=pairs) if every else memories.current(scopes=pairs, as_of=when)
        facts.sort(key=lambda f: (f.valid_at, f.created_at), reverse=True)
        if json_out:
            _print_json([f.to_json() for f in facts])
        elif not facts:
            whose = f" in scope {chosen}" if chosen else ""
            then = f" as of {_short_time(when)} UTC" if when else ""
            out.print(f"[dim]no facts remembered{whose}{then}[/]")
        else:
            _table(facts, marked=every)


@memory_app.command("search")
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Words the facts should hold.")],
    scope: ScopeOpt = None,
    as_of: AsOfOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, metavar="N", help="At most N facts.")
    ] = 10,
    json_out: JsonOut = False,
    store: StoreOpt = None,
) -> None:
    """The facts true now (or at --as-of) that best match QUERY's words (BM25), and its
    meaning when the config names `[memory] embeddings`, the best first: the user's, this
    project's and the sessions'."""
    import asyncio

    from ..memory._vectors import hybrid

    with _one_line_errors():
        chosen = _scope(scope) if scope is not None else None
        when = _moment("--as-of", as_of, end_of_day=True) if as_of else None
        config = _config()
        memories = _memories(store, config)
        embeddings = _embeddings(config.embeddings) if config.embeddings else None
        scopes = _scopes(memories, chosen)
        facts, unmeant = asyncio.run(
            hybrid(memories, embeddings, query, scopes=scopes, as_of=when, limit=limit)
        )
        if unmeant:
            err.print(f"[yellow]search by meaning failed[/] ({escape(unmeant)}): by words only")
        if json_out:
            _print_json([f.to_json() for f in facts])
        elif not facts:
            then = f" as of {_short_time(when)} UTC" if when else ""
            out.print(f"[dim]no remembered fact matches {escape(visible(repr(query)))}{then}[/]")
        else:
            _table(facts, marked=when is not None)


@memory_app.command("show")
def show(fact_id: FactArg, json_out: JsonOut = False, store: StoreOpt = None) -> None:
    """One fact, every field of it: its text, whose it is, where it came from, when it was
    true and when reins knew it."""
    from rich.table import Table
    from rich.text import Text

    from ..memory._recall import described

    with _one_line_errors():
        memories = _memories(store)
        fact = _fact_named(memories, fact_id)
        if json_out:
            _print_json(fact.to_json())
            return
        chain = memories.history(fact)
        later = [f.id for f in chain if f.supersedes == fact.id]
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for name, value in fact.to_json().items():
            grid.add_row(name, Text(_plain(value)))
        if later:
            grid.add_row("superseded_by", Text(", ".join(later)))
        grid.add_row("source", Text(described(fact, datetime.now(UTC))))
        out.print(grid)


@memory_app.command("history")
def history(fact_id: FactArg, json_out: JsonOut = False, store: StoreOpt = None) -> None:
    """A fact's versions, the oldest first: when each became true, when it stopped being true
    and when reins learned so, and why."""
    with _one_line_errors():
        memories = _memories(store)
        chain = memories.history(_fact_named(memories, fact_id))
        if json_out:
            _print_json([f.to_json() for f in chain])
            return
        for number, fact in enumerate(chain, 1):
            out.print(
                f"[bold]{number}/{len(chain)}[/] {fact.id}  [dim]{fact.scope}[/]  "
                f"{escape(visible(fact.text))}",
                soft_wrap=True,
            )
            until = "still true" if fact.invalid_at is None else f"until {_time(fact.invalid_at)}"
            out.print(f"    true from {_time(fact.valid_at)} {until}", soft_wrap=True)
            learned = f", learned it ended {_time(fact.expired_at)}" if fact.expired_at else ""
            out.print(f"    recorded {_time(fact.created_at)}{learned}", soft_wrap=True)
            if fact.supersedes:
                out.print(f"    supersedes {fact.supersedes}", soft_wrap=True)
            why = [f"why: {fact.reason}"] if fact.reason else []
            why += [f"closed because: {fact.closed_reason}"] if fact.closed_reason else []
            if why:
                out.print(f"    {escape(visible('; '.join(why)))}", soft_wrap=True)


@memory_app.command("forget")
def forget(
    fact_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="FACT...", help="Facts' ids, or unique starts of them."),
    ] = None,
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            metavar="user|project|session",
            help="Every fact of a scope: the user's, this project's, or the sessions' (of "
            "this store).",
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all", help="Every fact `list --all` shows: the user's, this project's, sessions'."
        ),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Forget without asking (needed with no terminal)."),
    ] = False,
    json_out: JsonOut = False,
    store: StoreOpt = None,
) -> None:
    """Delete facts for good: from the file, its search index and its free pages. By id,
    the versions named (`history` lists the others); --scope and --all ask first, in a
    terminal."""
    with _one_line_errors():
        if sum((bool(fact_ids), scope is not None, every)) != 1:
            raise UsageError("forget: name facts by id, or give --scope S, or --all (one of them)")
        memories = _memories(store)
        if fact_ids:
            facts = list({f.id: f for f in (_fact_named(memories, i) for i in fact_ids)}.values())
        else:
            chosen = _scope(scope) if scope is not None else None
            facts = memories.all(scopes=_scopes(memories, chosen))
            what = f"of scope {chosen}" if chosen else "(the user's, this project's, sessions')"
            if facts and not yes:
                if not _on_terminal():
                    raise UsageError(
                        f"forget would delete {len(facts)} fact(s) {what} for good, and there is "
                        "no terminal to ask: pass --yes to forget them"
                    )
                if not _confirm(f"Forget {len(facts)} fact(s) {what} for good? [y/N] "):
                    facts = []
        kept = _other_versions(memories, facts) if fact_ids else []
        gone = memories.forget(facts)
        if json_out:
            _print_json({"forgotten": gone, "ids": [f.id for f in facts]})
            return
        out.print(f"forgot {gone} fact(s)")
        if kept:
            out.print(
                f"[dim]{len(kept)} other version(s) of them are kept ({', '.join(kept)}): "
                "`reins memory forget` them too to forget every version[/]",
                soft_wrap=True,
            )


@memory_app.command("export")
def export(
    scope: ScopeOpt = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (default: stdout)."),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With -o, say what was written as JSON ({exported, file}); the export itself "
            "is JSON Lines either way.",
        ),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Every fact, closed ones too (so their history survives), as JSON Lines: one fact a
    line, as `reins memory import` reads it. The user's, this project's and the sessions'."""
    with _one_line_errors():
        chosen = _scope(scope) if scope is not None else None
        memories = _memories(store)
        facts = memories.all(scopes=_scopes(memories, chosen))
        lines = "".join(
            json_visible(json.dumps(f.to_json(), ensure_ascii=False)) + "\n" for f in facts
        )
        if output is None:
            sys.stdout.write(lines)
            return
        _write(output, lines)
        if json_out:
            _print_json({"exported": len(facts), "file": str(output)})
        else:
            err.print(f"exported {len(facts)} fact(s) to {escape(visible(str(output)))}")


@memory_app.command("import")
def import_facts(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="JSON Lines from `reins memory export`; - : stdin."),
    ],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the counts as JSON: {imported, skipped}.")
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Add the facts of an export, as they were (ids, times, closed ones): every line is
    checked first, and one that is not a fact, or holds a secret, imports nothing. A fact
    already here (its id) is skipped."""
    from ..memory import Fact
    from ..memory._errors import MemoryStoreError
    from ..memory._secrets import secret_in

    with _one_line_errors():
        name = "stdin" if str(file) == "-" else str(file)
        text = _read(file)
        config = _config()
        facts: list[Fact] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{name}, line {number}"
            try:
                fact = Fact.from_json(json.loads(line))
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"{where}: not JSON ({exc.msg}, column {exc.colno}): nothing was imported; "
                    "each line is one fact, as `reins memory export` writes it"
                ) from None
            except UsageError as exc:
                raise UsageError(f"{where}: {exc}: nothing was imported") from None
            for field in (fact.text, fact.reason, fact.closed_reason):
                if (kind := secret_in(field, config.redact)) is not None:
                    raise UsageError(
                        f"{where}: fact {fact.id} looks like it holds a secret ({kind}), which "
                        "memory never keeps: nothing was imported; remove that line, or the "
                        "secret from it, and import again"
                    )
            facts.append(fact)
        memories = _memories(store, config)
        imported = 0
        for fact in facts:
            try:
                imported += memories.put(fact)
            except MemoryStoreError as exc:
                raise MemoryStoreError(
                    f"{exc} ({imported} of {len(facts)} fact(s) were imported before: importing "
                    "again skips them)"
                ) from None
        skipped = len(facts) - imported
        if json_out:
            _print_json({"imported": imported, "skipped": skipped})
            return
        out.print(f"imported {imported} fact(s), skipped {skipped} already here")
        project = _project()
        elsewhere = {f.owner for f in facts if f.scope == "project" and f.owner != project}
        if elsewhere:
            out.print(
                f"[dim]note: facts of {len(elsewhere)} other project(s) were among them "
                f"({escape(visible(', '.join(sorted(elsewhere))))}): runs there recall them, "
                "not runs here[/]",
                soft_wrap=True,
            )


# Where the facts are, and whose


def _config() -> MemoryConfig:
    """The `[memory]` table of the config (the user's and this project's): its timeout and
    redaction rules."""
    from ..agent._config import load_config

    return load_config().memory


def _embeddings(spec: str) -> Embeddings:
    from ..agent._resolve import resolve_embeddings

    return resolve_embeddings(spec)


def _store_of(store: str | Path | None) -> Path:
    """The folder of the store's `memory.db`: with a PostgreSQL store, the current folder's
    store folder (where runs on it keep their facts, on this machine)."""
    from ..store import is_postgres
    from ._execute import _store_of as store_of

    return store_of(None if is_postgres(store) else store)


def _memories(store: str | Path | None, config: MemoryConfig | None = None) -> Memories:
    """The facts of the store's `memory.db` and the user's, waiting `[memory] timeout` for a
    file another process holds."""
    from ..memory._memories import FILE, Memories

    timeout = (config or _config()).timeout
    return Memories(_store_of(store) / FILE, timeout=timeout)


def _project() -> str:
    """Whose a project fact is: the git repository above the current folder, else the folder."""
    from ..context._instructions import project_root

    return str(project_root(Path.cwd()))


def _scope(text: str) -> Scope:
    for scope in SCOPES:
        if text == scope:
            return scope
    raise UsageError(f"--scope {text!r}: say user, project or session")


def _scopes(memories: Memories, scope: Scope | None) -> list[tuple[Scope, str]]:
    """The (scope, owner) pairs a command reads: the user's, this project's, and every
    session's in the store's file (or only `scope`'s)."""
    pairs: list[tuple[Scope, str]] = []
    if scope in (None, "user"):
        pairs.append(("user", ""))
    if scope in (None, "project"):
        pairs.append(("project", _project()))
    if scope in (None, "session"):
        pairs += [("session", owner) for owner in _sessions(memories)]
    return pairs


def _sessions(memories: Memories) -> list[str]:
    """The sessions that have facts in the store's file."""
    owners = {f.owner for f in memories.local.all() if f.scope == "session"}
    return sorted(owners)


def _session_named(directory: Path, given: str, memories: Memories) -> str:
    """The session `given` names: a session of the store's log or with facts already, by its
    id, a unique start of one, or `last`; an id neither knows is taken as it is (said)."""
    from ..core._errors import RunNotFound
    from ..store import find_session, peek_runs

    runs = peek_runs(directory)
    known = _sessions(memories)
    every = [*(r.session_id for r in runs), *known, *(r.run_id for r in runs)]
    try:
        return find_session(runs, given, known)
    except RunNotFound:
        if given == "last" or any(i.startswith(given) for i in every):
            raise
    if not given.strip() or given != given.strip():
        raise UsageError(f"--session {given!r}: give a session's id")
    err.print(
        f"[dim]note: no session {escape(visible(given))} in the log at "
        f"{escape(str(directory))}: the fact is kept for that id as given[/]",
        soft_wrap=True,
    )
    return given


def _fact_named(memories: Memories, given: str) -> Fact:
    """The fact whose id is or starts with `given`, in either file; `FactError` if none or
    several do."""
    from ..memory._errors import FactError

    fact = memories.get(given)
    if fact is None:
        files = " or ".join(dict.fromkeys(str(s.path) for s in (memories.user, memories.local)))
        raise FactError(
            f"no fact has an id starting with {given!r} (in {files}): `reins memory list --all` "
            "lists them with their ids"
        )
    return fact


def _other_versions(memories: Memories, facts: Sequence[Fact]) -> list[str]:
    """The ids of the versions of these facts' chains that are not among them."""
    named = {f.id for f in facts}
    others = dict.fromkeys(v.id for f in facts for v in memories.history(f) if v.id not in named)
    return list(others)


# Reading and writing


def _moment(flag: str, text: str, *, end_of_day: bool) -> datetime:
    """A date or time given on the command line, in UTC: a date is its start, or its end
    (`end_of_day`, so what was true that day); a time without a zone is UTC."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            day = date.fromisoformat(value)
            return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
        if not re.match(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", value):
            raise ValueError(value)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a date: write {DATE_FORMAT}") from None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _read(file: Path) -> str:
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(
            f"cannot read {file} ({why}): give the file `reins memory export` wrote"
        ) from None


def _write(file: Path, text: str) -> None:
    """`text` into `file` whole (a temporary file beside it, renamed), readable only by the
    user: facts are private."""
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, file)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise UsageError(
            f"cannot write {file} ({exc.strerror or exc}): give a file in a folder you may write"
        ) from None


def _print_json(value: object) -> None:
    sys.stdout.write(json_visible(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")


def _on_terminal() -> bool:
    """Someone can be asked: stdin is a terminal."""
    return sys.stdin.isatty()


def _confirm(question: str) -> bool:
    """Asks on the terminal (on stderr, so --json's output stays JSON); only y or yes is a
    yes, and the end of input is a no."""
    err.print(escape(question), end="")
    return sys.stdin.readline().strip().lower() in ("y", "yes")


# Showing


def _table(facts: Iterable[Fact], *, marked: bool) -> None:
    """The facts as a table: id (its start), scope, text, age and source, when true (from,
    until: a column only if one has an end). `marked`: a fact no longer true says so,
    superseded (by a newer version) or closed."""
    from rich.table import Table
    from rich.text import Text

    from ..memory._recall import described

    facts = list(facts)
    now = datetime.now(UTC)
    replaced = {f.supersedes for f in facts if f.supersedes}
    ends = any(f.invalid_at is not None for f in facts)
    states = [_state(f, replaced, now) if marked else "" for f in facts]
    table = Table()
    table.add_column("id", no_wrap=True)
    table.add_column("scope", no_wrap=True)
    table.add_column("fact", overflow="fold", ratio=3)
    table.add_column("age, source", ratio=2)
    table.add_column("true from", no_wrap=True)
    if ends:
        table.add_column("until", no_wrap=True)
    if any(states):
        table.add_column("", no_wrap=True)
    for fact, state in zip(facts, states, strict=True):
        row: list[str | Text] = [
            fact.id[:8],
            fact.scope,
            Text(visible(fact.text)),
            Text(described(fact, now)),
            _short_time(fact.valid_at),
        ]
        if ends:
            row.append(_short_time(fact.invalid_at) if fact.invalid_at is not None else "")
        if any(states):
            row.append(Text(state, style="yellow"))
        table.add_row(*row, style="dim" if state else None)
    out.print(table)


def _state(fact: Fact, replaced: set[str], now: datetime) -> str:
    """`superseded` or `closed` for a fact no longer true, else ""."""
    if fact.invalid_at is None or fact.invalid_at > now:
        return ""
    return "superseded" if fact.id in replaced else "closed"


def _short_time(when: datetime) -> str:
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M}"


def _time(when: datetime) -> str:
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _plain(value: Any) -> str:
    """A field's JSON value as shown: `-` for none."""
    if value is None or value == "":
        return "-"
    return visible(str(value))
