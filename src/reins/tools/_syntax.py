"""A write that breaks a file: asked to change one value in a JSON file, a small model writes
`key: value` lines over it and answers. After write_file or edit_file, a file of a kind a parser
here reads (by its suffix) that parsed before and does not now is reported with the parser's
message, line and column; or, as SWE-agent's linting edit does, the change is refused and the
file left as it was (`Guards(syntax_check="refuse")`). A file that did not parse before is not
judged (it is a draft, or of a dialect: JSON with comments); a new one that does not parse is.

Cheap by design: only the suffixes below, only texts under `MAX_CHECK_CHARS`, stdlib parsers
(PyYAML's, a dependency already), and the file as it was is parsed only when the new text fails.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from xml.parsers import expat

import yaml

MAX_CHECK_CHARS = 1_000_000
"""Texts longer than this are not parsed: a write stays fast."""


@dataclass(frozen=True)
class Broken:
    """Where and why a text does not parse."""

    kind: str
    """What it should be: "JSON", "TOML", "YAML", "Python", "XML"."""
    message: str
    line: int | None = None
    column: int | None = None
    text: str = ""
    """The line it fails on, as written (clipped)."""

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f" at line {self.line}" + (
                f", column {self.column}" if self.column is not None else ""
            )
        shown = f": {self.text!r}" if self.text.strip() else ""
        return f"{self.message}{where}{shown}"


class _Unjudged(Exception):
    """The text cannot be judged (nested too deep, declares XML entities): not reported."""


def _json(text: str) -> Broken | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return Broken("JSON", exc.msg, exc.lineno, exc.colno)
    return None


_TOML_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _toml(text: str) -> Broken | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        if found := _TOML_WHERE.search(message):
            line, column = int(found[1]), int(found[2])
            return Broken("TOML", message[: found.start()], line, column)
        return Broken("TOML", re.sub(r"\s*\(at end of document\)$", " at the end", message))
    return None


def _yaml(text: str) -> Broken | None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for _ in yaml.compose_all(text, Loader=loader):  # nodes: no tags resolved, no aliases
            pass  # expanded, so a custom tag (`!Ref`) or a billion laughs is no matter
    except yaml.MarkedYAMLError as exc:
        message = ", ".join(p for p in (exc.context, exc.problem) if p) or "not YAML"
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            return Broken("YAML", message)
        return Broken("YAML", message, mark.line + 1, mark.column + 1)
    except yaml.YAMLError as exc:
        return Broken("YAML", str(exc).splitlines()[0] if str(exc) else "not YAML")
    return None


def _python(text: str) -> Broken | None:
    try:
        with warnings.catch_warnings():  # `"\d"` warns at compile time: not ours to say
            warnings.simplefilter("ignore")
            compile(text, "<file>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return Broken("Python", exc.msg, exc.lineno, exc.offset)
    except ValueError as exc:  # a NUL byte
        return Broken("Python", str(exc))
    return None


def _xml(text: str) -> Broken | None:
    parser = expat.ParserCreate(encoding="utf-8")  # the text is decoded already

    def no_entities(*_: object) -> None:
        raise _Unjudged  # entities are expanded by expat: not judged, never expanded here

    parser.EntityDeclHandler = no_entities
    try:
        parser.Parse(text.encode(), True)
    except expat.ExpatError as exc:
        return Broken("XML", expat.errors.messages[exc.code], exc.lineno, exc.offset + 1)
    return None


PARSERS: dict[str, Callable[[str], Broken | None]] = {
    ".json": _json,
    ".ipynb": _json,
    ".toml": _toml,
    ".yaml": _yaml,
    ".yml": _yaml,
    ".py": _python,
    ".pyi": _python,
    ".xml": _xml,
    ".svg": _xml,
}
"""A file's suffix (lower case) -> its parser: how the text fails to parse, or None."""

_JSONC = re.compile(
    r"(?:^|/)(?:\.vscode/[^/]*|[tj]sconfig[^/]*|\.?devcontainer|\.eslintrc)\.json$", re.I
)
"""JSON files that their tools read with comments and trailing commas (JSONC): not judged."""


def _parser(name: str) -> Callable[[str], Broken | None] | None:
    dot = name.rfind(".")
    parse = PARSERS.get(name[dot:].lower()) if dot > name.rfind("/") else None
    return None if parse is None or _JSONC.search(name) else parse


def judged(name: str) -> bool:
    """Whether a write to the file `name` (its path below the root) is judged."""
    return _parser(name) is not None


def judge(name: str, before: str | None, after: str) -> Broken | None:
    """How the text `after` of the file `name` fails to parse, if it does and the file's
    text `before` parsed (None: a new file); None otherwise, or if its kind is not known."""
    parse = _parser(name)
    if parse is None or len(after) > MAX_CHECK_CHARS:
        return None
    try:
        broken = parse(after)
        if broken is None:
            return None
        if before is not None and (len(before) > MAX_CHECK_CHARS or parse(before) is not None):
            return None  # it did not parse before: not this write's doing
    except (_Unjudged, RecursionError, MemoryError):
        return None
    lines = after.splitlines()
    if broken.line is not None and 0 < broken.line <= len(lines):
        text = lines[broken.line - 1]
        return Broken(
            broken.kind,
            broken.message,
            broken.line,
            broken.column,
            text if len(text) <= 120 else text[:117] + "...",
        )
    return broken
