"""Suites: a TOML or YAML file of tasks (or a folder of such files), with defaults at the top.

    model = "script:replies.json"      # the defaults every task takes unless it says otherwise
    max_steps = 10
    timeout = 120                      # seconds a run may take

    [[tasks]]
    id = "hello"
    goal = "Create hello.txt containing: hi"
    files = { "notes.md" = "# Notes\n" }   # the workspace's starting files (path -> text)
    fixture = "fixtures/app"           # and/or a folder copied in (relative to the suite file)
    setup = ["git init -q"]            # commands run in the workspace before the run
    checks = ["test \"$(cat hello.txt)\" = hi"]   # after it, in the sandbox: exit 0 passes
    answer = { contains = "hi" }       # and/or matchers on the final answer
    tags = ["create"]

A bad suite is one error naming the file, the task and the field.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core._errors import UsageError

SUFFIXES = (".toml", ".yaml", ".yml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Answer(_Strict):
    """Matchers on a run's final answer; every one given must hold."""

    exact: str | None = None
    """The answer, whitespace at its ends aside."""
    contains: str | list[str] | None = None
    """Text (each of a list) the answer holds, case aside."""
    regex: str | None = None
    """A pattern found in the answer (Python's `re.search`)."""
    number: float | None = None
    """A number the answer holds (the last one in it), within `tolerance`."""
    tolerance: float = Field(default=0.0, ge=0)
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    """A JSON Schema the answer, parsed as JSON, must satisfy."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return pattern

    @field_validator("json_schema")
    @classmethod
    def _is_a_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            import jsonschema

            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"not a JSON Schema: {exc.message}") from None
        return schema

    def misses(self, answer: str | None) -> list[str]:
        """What of the answer does not hold (none: it passes)."""
        text = (answer or "").strip()
        missed: list[str] = []
        if self.exact is not None and text != self.exact.strip():
            missed.append(f"not exactly {self.exact!r}")
        wanted = [self.contains] if isinstance(self.contains, str) else self.contains or []
        missed += [f"does not contain {w!r}" for w in wanted if w.lower() not in text.lower()]
        if self.regex is not None and not re.search(self.regex, text):
            missed.append(f"does not match /{self.regex}/")
        if self.number is not None:
            found = re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text.replace(",", ""))
            got = float(found[-1]) if found else math.nan
            if not abs(got - self.number) <= self.tolerance:
                missed.append(f"no number within {self.tolerance} of {self.number}")
        if self.json_schema is not None:
            missed += _schema_misses(text, self.json_schema)
        return missed


class Settings(_Strict):
    """What a task runs with: the suite's defaults, each overridable by the task."""

    model: str | None = None
    max_steps: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    """Seconds a run may take (its time budget)."""
    mode: str | None = None

    @field_validator("mode")
    @classmethod
    def _a_mode(cls, name: str | None) -> str | None:
        from ..context import MODES
        from ..context._modes import resolve_mode

        if name is not None and resolve_mode(name)[1] is not None:
            raise ValueError(f"no mode {name!r}; the modes: {', '.join(MODES)}")
        return name


class Task(Settings):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    goal: str = Field(min_length=1)
    files: dict[str, str] = Field(default_factory=dict[str, str])
    fixture: Path | None = None
    """A folder copied into the workspace first (relative to the suite's file)."""
    setup: list[str] = Field(default_factory=list[str])
    checks: list[str] = Field(default_factory=list[str])
    answer: Answer | None = None
    tags: list[str] = Field(default_factory=list[str])

    @field_validator("files")
    @classmethod
    def _inside(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise ValueError(f"{name!r} is not a path inside the workspace")
        return files

    def with_defaults(self, defaults: Settings) -> Task:
        given = self.model_dump(exclude_unset=True, by_alias=True)
        return Task.model_validate({**defaults.model_dump(exclude_none=True), **given})


class Suite(BaseModel):
    """A suite's tasks, each with the defaults of its file applied, and where they came from."""

    model_config = ConfigDict(frozen=True)

    path: Path
    tasks: list[Task]


class _File(Settings):
    tasks: list[dict[str, Any]] = Field(min_length=1)


def load_suite(path: Path, *, tags: tuple[str, ...] = (), model: str | None = None) -> Suite:
    """The suite at `path` (a file, or a folder of suite files, read in name order), its
    tasks those with one of `tags` if any are given; `model` in place of the files' default
    (a task's own model stands)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise UsageError(f"suite {path}: a folder with no .toml or .yaml suite files")
    elif path.is_file():
        files = [path]
    else:
        raise UsageError(f"suite {path}: no such file or folder")
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for file in files:
        for task in _tasks_of(file, model):
            if task.id in seen:
                raise UsageError(f"suite {file}: task {task.id}: id: also in {seen[task.id]}")
            seen[task.id] = file
            tasks.append(task)
    if tags:
        tasks = [t for t in tasks if set(t.tags) & set(tags)]
        if not tasks:
            raise UsageError(f"suite {path}: no task is tagged {', '.join(tags)}")
    return Suite(path=path, tasks=tasks)


def _tasks_of(file: Path, model: str | None) -> list[Task]:
    raw = _read(file)
    try:
        top = _File.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(f"suite {file}: {_said(exc)}") from None
    defaults = Settings.model_validate(top.model_dump(exclude={"tasks"}))
    if model is not None:
        defaults = defaults.model_copy(update={"model": model})
    tasks: list[Task] = []
    for index, entry in enumerate(top.tasks):
        name = entry.get("id") if isinstance(entry.get("id"), str) else f"#{index + 1}"
        try:
            task = Task.model_validate(entry).with_defaults(defaults)
        except ValidationError as exc:
            raise UsageError(f"suite {file}: task {name}: {_said(exc)}") from None
        if not (task.checks or task.answer):
            raise UsageError(
                f"suite {file}: task {name}: checks: a task needs checks, an answer matcher, "
                "or both (else nothing says whether it passed)"
            )
        if task.model and task.model.startswith("script:"):  # a script beside the suite
            script = Path(task.model.removeprefix("script:"))
            task = task.model_copy(update={"model": f"script:{(file.parent / script).resolve()}"})
        if task.fixture is not None:
            fixture = task.fixture if task.fixture.is_absolute() else file.parent / task.fixture
            if not fixture.is_dir():
                raise UsageError(f"suite {file}: task {name}: fixture: {fixture} is no folder")
            task = task.model_copy(update={"fixture": fixture.resolve()})
        tasks.append(task)
    return tasks


def _read(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"suite {file}: cannot be read: {exc}") from None
    try:
        data = tomllib.loads(text) if file.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        kind = "TOML" if file.suffix == ".toml" else "YAML"
        first = str(exc).splitlines()[0]
        raise UsageError(f"suite {file}: not valid {kind}: {first}") from None
    if not isinstance(data, dict):
        raise UsageError(f"suite {file}: expected a table of defaults and [[tasks]]")
    return data


def _said(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _schema_misses(text: str, schema: dict[str, Any]) -> list[str]:
    import jsonschema

    try:
        value = json.loads(text)
    except ValueError:
        return ["is not JSON"]
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
    )
    return [] if error is None else [f"does not fit the schema: {error.message}"]
