"""What a task is, and the shell checks tasks share.

A task is a goal as a user would type it, the files its fresh workspace starts with, and a check:
a `sh -c` command run in the workspace after the agent, exit 0 = success. The agent's final
answer is in `$ANSWER` (empty when it gave none), for the tasks whose result is an answer.

The builders below return such commands. They are lenient where a person would be (whitespace,
key order, quoting, "42" or "42 lines" or "1,234.50"), strict about the substance (every key of
a data file, every caller renamed, no file changed by a question). The Python they run is
`python3` from PATH, the one the agent's `run_command` finds (it needs PyYAML and pytest).
"""

from __future__ import annotations

import copy
import hashlib
import json
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass(frozen=True, kw_only=True)
class Task:
    id: str
    category: str
    goal: str
    check: str
    setup: dict[str, str] = field(default_factory=dict[str, str])
    """Relative path -> content; a path ending in `/` is an empty folder."""


def python(code: str, *args: str) -> str:
    """`python3 -c CODE ARGS...`, quoted for `sh`."""
    return " ".join(["python3", "-c", shlex.quote(code), *map(shlex.quote, args)])


def answer_has(word: str) -> str:
    """The final answer names `word` (as a whole word)."""
    return f'printf "%s" "$ANSWER" | grep -qw -- "{word}"'


_NUMBERS = r"""
import os, re, sys
want, tolerance = float(sys.argv[1]), float(sys.argv[2])
text = os.environ.get("ANSWER", "")
said = re.findall(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", text)
numbers = [float(n.replace(",", "")) for n in said]
if not any(abs(n - want) <= tolerance for n in numbers):
    sys.exit(f"the answer does not say {sys.argv[1]}: {text[:200]!r}")
"""


def answer_number(value: float, tolerance: float = 0.0) -> str:
    """The final answer says this number: `42`, `42 lines`, `1,234.5` and `1234.50` all count
    (within `tolerance`, for a sum or a mean that may be rounded)."""
    return python(_NUMBERS, repr(value), repr(tolerance))


_MENTIONS = r"""
import json, os, re, sys
text = os.environ.get("ANSWER", "")
for name in json.loads(sys.argv[1]):
    if not re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", text):
        sys.exit(f"the answer does not name {name}: {text[:200]!r}")
"""


def answer_mentions(*names: str) -> str:
    """The final answer names each of these (a path, a version) on its own: `orders.py` is in
    `shop/db/orders.py.` but not in `test_orders.py`, `3.10` is in `>=3.10` but not in `3.100`."""
    return python(_MENTIONS, json.dumps(names))


_DATA_EQUALS = r"""
import json, sys, tomllib
path, want, unordered = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
try:
    with open(path, "rb") as file:
        if path.endswith(".json"):
            got = json.load(file)
        elif path.endswith(".toml"):
            got = tomllib.load(file)
        else:
            import yaml
            got = yaml.safe_load(file)
except Exception as exc:
    sys.exit(f"{path} does not parse: {exc}")

def sort_lists(data):
    for dotted in unordered:
        *parents, last = dotted.split(".")
        for key in parents:
            data = data.get(key, {}) if isinstance(data, dict) else {}
        if isinstance(data, dict) and isinstance(data.get(last), list):
            data[last] = sorted(data[last], key=json.dumps)

sort_lists(got)
sort_lists(want)
canonical = lambda data: json.dumps(data, sort_keys=True, default=str)
if canonical(got) != canonical(want):
    sys.exit(f"{path} holds {canonical(got)[:400]}\nnot {canonical(want)[:400]}")
"""


def data_equals(path: str, expected: Any, unordered: tuple[str, ...] = ()) -> str:
    """`path` (JSON, TOML or YAML, by its suffix) parses to exactly `expected`: every key and
    value, types included (`true` is not `1`); formatting and key order are free, and so is the
    order of the lists at the dotted keys in `unordered`."""
    return python(_DATA_EQUALS, path, json.dumps(expected), json.dumps(unordered))


def parsed(text: str, kind: str) -> Any:
    """The data a setup file's text holds (`json`, `toml` or `yaml`)."""
    if kind == "json":
        return json.loads(text)
    if kind == "toml":
        return tomllib.loads(text)
    return yaml.safe_load(text)


def changed(text: str, kind: str, changes: dict[str, Any]) -> Any:
    """The data of `text` with these changes made: a dotted key (`http.retries`, `repos.1.rev`;
    a number indexes a list) -> its new value; `None` deletes the key."""
    data = copy.deepcopy(parsed(text, kind))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        index: Any = int(last) if isinstance(target, list) else last
        if value is None:
            del target[index]
        else:
            target[index] = value
    return data


def unchanged(files: dict[str, str]) -> str:
    """These files hold exactly this content still (by sha256)."""
    lines = [f"{hashlib.sha256(text.encode()).hexdigest()}  {path}" for path, text in files.items()]
    return f"printf '%s\\n' {' '.join(map(shlex.quote, lines))} | sha256sum --check --quiet"


def untouched(files: dict[str, str]) -> str:
    """Nothing changed: these files as they were, and no other file (bytecode caches aside)."""
    kept = {path: text for path, text in files.items() if not path.endswith("/")}
    listed = "find . -type f ! -path '*/__pycache__/*' ! -path './.pytest_cache/*' | wc -l"
    return f"{unchanged(kept)} && {_counted(listed, len(kept), 'files in the workspace')}"


def _counted(command: str, count: int, what: str) -> str:
    """`command` prints the number `count`; else say what it printed."""
    said = f'echo "$n {what}, not {count}"'
    return f"{{ n=$({command}); test $n -eq {count} || {{ {said}; false; }}; }}"


_TEXT_EQUALS = r"""
import sys
path, want = sys.argv[1], sys.argv[2]
lines = lambda text: [line.rstrip() for line in text.strip("\n").splitlines()]
try:
    got = open(path).read()
except OSError as exc:
    sys.exit(str(exc))
if lines(got) != lines(want):
    sys.exit(f"{path} holds {got[:400]!r}\nnot {want[:400]!r}")
"""


def text_equals(path: str, expected: str) -> str:
    """`path` holds `expected`, but for spaces at line ends and blank lines at either end."""
    return python(_TEXT_EQUALS, path, expected)


_HEADER_ADDED = r"""
import sys
path, header, original = sys.argv[1:]
lines = [line.rstrip() for line in open(path).read().splitlines()]
if not lines or lines[0] != header:
    sys.exit(f"{path} starts with {lines[:1]}, not {header!r}")
rest = lines[1:]
while rest and not rest[0]:
    rest = rest[1:]
if rest != [line.rstrip() for line in original.strip("\n").splitlines()]:
    sys.exit(f"{path}: the lines after the header are not the file's own")
"""


def header_added(path: str, header: str, original: str) -> str:
    """`path` starts with the line `header`, then (after blank lines, if any) its own text."""
    return python(_HEADER_ADDED, path, header, original)


_OUTPUT_IS = r"""
import subprocess, sys
command, want = sys.argv[1], sys.argv[2]
done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=20)
if done.returncode or done.stdout.strip() != want:
    printed = f"{done.stdout[-300:]!r} {done.stderr[-300:]!r}"
    sys.exit(f"{command} printed {printed}, exit {done.returncode}")
"""


def output_is(command: str, expected: str) -> str:
    """`command` exits 0 and prints `expected` (leading and trailing whitespace aside)."""
    return python(_OUTPUT_IS, command, expected)


def word_count(word: str, count: int, where: str = ".", include: str = "*.py") -> str:
    """`word` occurs `count` times as a whole word in the files `include` names under `where`
    (0: nowhere)."""
    found = f"grep -rwo --include={shlex.quote(include)} -- {shlex.quote(word)} {where} | wc -l"
    return _counted(found, count, f"uses of {word}")


def pytest_passes(*paths: str) -> str:
    """The project's tests pass (`python3 -m pytest`, no cache folder written)."""
    return " ".join(["python3 -m pytest -q -p no:cacheprovider", *map(shlex.quote, paths)])
