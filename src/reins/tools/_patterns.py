"""Patterns from outside — grep's regular expression, find_files' and grep's globs, a project's
.gitignore — matched in time linear in the text, by RE2 (google-re2).

Python's `re` backtracks: `(a*)*b` against forty `a`s, or the glob `*a*a*a*a*a*b` (which
pathspec makes a regex) against a long name, runs for hours, in C, holding the GIL, so that
not even the run's timeout or a signal could stop it. RE2 has no backtracking, and so no
backreferences or lookaround; it also releases the GIL while it matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import pathspec
import re2  # type: ignore[import-untyped]  # (no stubs: the two calls used are wrapped here)

from ..core._errors import ToolError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SYNTAX = "RE2's (as ripgrep's): Python's syntax without backreferences or lookaround"

_HINTS = (
    (r"sequence: \\Z", "write the end of a line as $ (grep matches line by line)"),
    (r"sequence: \\\d|\(\?P$", "RE2 has no backreferences: search for the repeated text itself"),
    (r"\(\?[=!]", "RE2 has no lookahead: match the text around it, or search and then read"),
    (r"\(\?<[=!]", "RE2 has no lookbehind: match the text before it too"),
    (r"\(\?>", "RE2 has no atomic groups: write the group without ?>"),
    (r"operator: [*+?]\+$", "RE2 has no possessive quantifiers (a++, a*+): write a+ or a*"),
    (r"repetition operator", "a repeat of a repeat needs a group: (a+)*, (x{2}){3}"),
    (r"repetition size", "a count in {m,n} is at most 1000, and m at most n"),
    (r"too large", "the pattern is too big to run: make it shorter or plainer"),
)
"""What to do about an error RE2 gives (a regex, linear, on RE2's one-line message)."""
FIX = "escape a ( ) [ ] { } * + ? | . ^ $ or \\ meant literally with a \\"


class Regex:
    """grep's compiled pattern, which finds the lines of a batch it matches."""

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        options = re2.Options()
        options.log_errors = False  # else RE2 writes each bad pattern to stderr, mid-run
        options.case_sensitive = not ignore_case
        options.never_nl = True  # a match never spans lines: a batch is searched at once
        try:
            self._regex = re2.compile(f"(?m){pattern}", options)
        except re2.error as exc:
            raise ToolError(_bad_pattern(pattern, exc)) from None
        # \A and \z, and a flag group that turns multi-line off, mean the start and end of
        # the text: of each line, as each line is searched on its own.
        self._line_by_line = "\\A" in pattern or "\\z" in pattern or _NO_MULTILINE.search(pattern)

    @classmethod
    def literal(cls, text: str) -> Regex:
        """The pattern that matches `text` itself."""
        return cls(re2.escape(text))

    def matching(self, lines: list[str]) -> Iterator[int]:
        """The indices of the lines the pattern matches, in order."""
        if not lines:
            return
        search = self._regex.search
        if self._line_by_line:
            yield from (i for i, line in enumerate(lines) if search(line))
            return
        data = "\n".join(lines).encode()  # one search per batch, and one per match
        index = pos = 0
        while (found := search(data, pos)) is not None:
            start = found.start()
            index += data.count(b"\n", pos, start)
            yield index
            pos = data.find(b"\n", start) + 1
            if not pos:
                return
            index += 1


_NO_MULTILINE = re.compile(r"\(\?[a-zA-Z]*-[a-zA-Z]*m")
"""`(?-m)`, `(?i-sm:...)`: a flag group that turns multi-line off (a linear regex)."""


def _bad_pattern(pattern: str, exc: Exception) -> str:
    why = exc.args[0] if exc.args else ""
    why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    why = why.replace(f"(?m){pattern}", pattern)  # our flag, not theirs
    hint = next((h for key, h in _HINTS if re.search(key, why)), FIX)
    return f"bad regular expression {pattern!r}: {why}; {hint} (grep's patterns are {SYNTAX})"


def glob_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """A gitignore-style glob from a tool's arguments, matched by RE2."""
    try:
        return pathspec.GitIgnoreSpec.from_lines([pattern], backend="re2")
    except ValueError as exc:
        raise ToolError(
            f"bad glob pattern {pattern!r}: {exc}; globs are gitignore style, such as *.py, "
            "src/**/test_*.py"
        ) from None


def ignore_rules(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """A .gitignore's rules, matched by RE2; a line pathspec cannot read is skipped, as git
    skips it (a project's file must not stop every search of it)."""
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")
    except ValueError:
        return pathspec.GitIgnoreSpec.from_lines(
            [line for line in lines if _readable(line)], backend="re2"
        )


def _readable(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line], backend="re2")
    except ValueError:
        return False
    return True


def linear_schemas(kind: type[Validator]) -> type[Validator]:
    """`kind` (a JSON Schema validator class) with the keywords that match a schema's regexes
    — an MCP server's, against the model's arguments — matched by RE2: jsonschema uses `re`,
    on the event loop's thread. A regex RE2 cannot run is not checked: the server checks its
    own arguments."""
    from jsonschema import ValidationError
    from jsonschema.validators import extend

    def pattern(validator: Any, regex: str, instance: object, schema: object) -> Any:
        if validator.is_type(instance, "string") and not _search(regex, str(instance)):
            yield ValidationError(f"{instance!r} does not match {regex!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, schema: object
    ) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            for key, value in instance.items():
                if _search(regex, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(
        validator: Any, allowed: Any, instance: Any, schema: dict[str, Any]
    ) -> Any:
        if not validator.is_type(instance, "object"):
            return
        named, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        extras = [
            key
            for key in instance
            if key not in named and not any(_search(regex, key) for regex in patterns)
        ]
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:  # jsonschema's words
            joined = ", ".join(repr(e) for e in sorted(extras, key=str))
            if patterns:
                verb = "does" if len(extras) == 1 else "do"
                regexes = ", ".join(repr(r) for r in sorted(patterns))
                yield ValidationError(f"{joined} {verb} not match any of the regexes: {regexes}")
            else:
                verb = "was" if len(extras) == 1 else "were"
                yield ValidationError(
                    f"Additional properties are not allowed ({joined} {verb} unexpected)"
                )

    keywords = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
    }
    return cast("type[Validator]", extend(kind, keywords))  # type: ignore[no-untyped-call]


@lru_cache(maxsize=256)
def _schema_regex(regex: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(regex, options)
    except re2.error:
        return None


def _search(regex: str, text: str) -> bool:
    compiled = _schema_regex(regex)
    return compiled is None or compiled.search(text) is not None
