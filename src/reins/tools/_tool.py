"""`@tool`: a typed Python function becomes a tool with a JSON schema."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    NamedTuple,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

import docstring_parser
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    ValidationError,
    create_model,
)
from pydantic_core import to_json
from typing_extensions import TypeVar

from ..core._errors import ToolError, UsageError
from ..core._guard_settings import SyntaxCheck
from ..core._media import Document, Image
from ..core._messages import ToolSpec
from ..core._threads import in_thread
from ..sandbox import SandboxPolicy
from ._escapes import ArgKind, kinds_of, regex_properties
from ._patterns import linear_schemas
from ._stop import run_stoppable
from ._workspace import Workspace

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


Deps = TypeVar("Deps", default=Any)
"""What a tool's context carries as `deps` (a bare `ToolContext`: anything)."""


@dataclass(kw_only=True, frozen=True)
class ToolContext(Generic[Deps]):
    """Passed to a tool whose first parameter is annotated `ToolContext` (or
    `ToolContext[YourDeps]`, to have `deps` typed)."""

    workspace: Workspace
    session_id: str
    run_id: str
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """What the subprocesses a tool starts (through `reins.sandbox.run_process`) may do."""
    spill: Path | None = None
    """Where this run's over-long results are saved (the store's, readable by the file tools
    and not writable); None: they are cut."""
    scope: Any = None
    """For a tool that works with the run itself (`Tool.needs_scope`: a subagent, the
    planner, the todo list), the call's ties to it (`reins.CallScope`); None for others."""
    syntax_check: SyntaxCheck = "report"
    """What write_file and edit_file do with a change that leaves a file a parser reads (JSON,
    TOML, YAML, Python, XML) unparsable when it parsed before: report it, refuse it, or not
    look (the run's `Guards.syntax_check`)."""
    deps: Deps = None  # type: ignore[assignment]
    """What the run was given (`agent.run(goal, deps=...)`): a database handle, the current
    user. Not in the log: a resume is given them again."""


@dataclass(kw_only=True, frozen=True, eq=False)
class Tool:
    """A callable the model may use, and what the executor must know to run it safely."""

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    takes_context: bool = False
    read_only: bool = False
    """True if it changes nothing: safe to run beside anything, and to cache."""
    cached: bool = True
    """A repeat of a read-only call may be answered from the cache (the repeat-cache guard)
    while the run changes nothing; False for a tool that may answer differently each time (an
    MCP server's: a clock, a query of the world outside)."""
    path_args: tuple[str, ...] = ()
    """Arguments that name files; writes to one canonical path are serialized."""
    pattern_args: tuple[str, ...] = ()
    """Arguments that are a regex or a glob (`ArgKind`): a control character in one (or in
    a path that names no file) is read back as the JSON escape the model meant (`\\b`)."""
    needs_approval: bool = False
    """Asks a person before each call, unless a permission rule says otherwise."""
    command_arg: str | None = None
    """The argument that holds a shell command line: permission rules judge it by its argv
    prefixes (`git push`), and such a tool asks by default."""
    timeout: float | None = 120.0
    """Seconds before the call is abandoned with an error observation; None: no limit."""
    stoppable: bool = False
    """A sync function that checks in with its call's `Stop` (see `_stop`), so that abandoning
    the call stops its effects; other sync functions may run on in their thread."""
    needs_scope: bool = False
    """It works with the run itself (a subagent, the planner, the todo list): it gets the
    call's scope — the run's state, a way to forward a child run's events, to count what it
    spends in the run's budgets, and to change the run's todo list."""
    schema: dict[str, Any] | None = None
    """The arguments' JSON schema, for a tool described by one rather than by a Python
    signature (an MCP server's): calls are checked against it and `fn` gets the arguments as
    keywords; `args_model` is then `AnyArguments`."""
    _is_async: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_is_async", inspect.iscoroutinefunction(self.fn))
        if self.schema is not None and not self.pattern_args:  # an MCP server's regexes
            object.__setattr__(self, "pattern_args", regex_properties(self.schema))

    @property
    def stops(self) -> bool:
        """Abandoning a call (timeout, cancel) stops it: async, or a stoppable sync function."""
        return self._is_async or self.stoppable

    @cached_property
    def spec(self) -> ToolSpec:
        schema = self.schema or _strip_titles(self.args_model.model_json_schema())
        return ToolSpec(name=self.name, description=self.description, parameters=schema)

    @cached_property
    def _checker(self) -> Validator | None:
        if self.schema is None:
            return None
        from jsonschema import Draft202012Validator  # a tenth of a second: only when needed
        from jsonschema.validators import validator_for

        kind = validator_for(self.schema, default=Draft202012Validator)
        # A server's regexes (`pattern`) matched by RE2: Python's backtracking `re` could hang
        # the event loop on one written to, against an argument that feeds it.
        return linear_schemas(kind)(self.schema, format_checker=kind.FORMAT_CHECKER)

    def validate(self, arguments: dict[str, Any]) -> BaseModel:
        """The call's arguments checked against the tool's schema; a `ToolError` saying what
        is wrong, for the model to correct."""
        if (checker := self._checker) is not None:
            errors = sorted(checker.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
            found = [
                f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                for e in errors
            ]
            if found:
                raise ToolError(f"invalid arguments for {self.name}: {'; '.join(found[:5])}")
            return AnyArguments.model_validate(arguments)
        try:
            return self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None

    async def run(self, context: ToolContext, args: BaseModel) -> str | WithMedia | WithDiff:
        """Call the function with the validated arguments; its result as the observation
        (text; an `Image` or `Document`, or a list of texts and them, go to the model as
        such where it takes them; a file tool's diff is kept apart by the executor)."""
        # The validated fields (extra ones are forbidden), or a schema's arguments.
        kwargs = (args.model_extra or {}) if self.schema is not None else args.__dict__
        positional = (context,) if self.takes_context else ()
        if self._is_async:
            result = await self.fn(*positional, **kwargs)
        elif self.stoppable:
            result = await run_stoppable(self.fn, *positional, limit=self.timeout, **kwargs)
        else:
            result = await in_thread(self.fn, *positional, limit=self.timeout, **kwargs)
        if isinstance(result, str):  # the usual: one check
            return result
        return result if isinstance(result, WithDiff) else _observation(result)


class WithMedia(NamedTuple):
    """A tool's observation that holds images or documents: its text, then them."""

    text: str
    media: tuple[Image | Document, ...]


class WithDiff(NamedTuple):
    """A file tool's observation, and the change it made as a short unified diff: the model
    gets the text; the diff is recorded for people (`ToolCallFinished.diff`)."""

    text: str
    diff: str


def _observation(result: object) -> str | WithMedia:
    if isinstance(result, Image | Document):
        return WithMedia(result.describe(), (result,))
    if (
        isinstance(result, list | tuple)
        and any(isinstance(r, Image | Document) for r in result)
        and all(isinstance(r, str | Image | Document) for r in result)
    ):
        texts = [r for r in result if isinstance(r, str)]
        return WithMedia("\n\n".join(texts), tuple(r for r in result if not isinstance(r, str)))
    return to_json(result).decode()


NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool's name as the model APIs (OpenAI's, Anthropic's) accept it."""


class AnyArguments(BaseModel):
    """The arguments of a tool checked by its JSON schema: any object, as it came."""

    model_config = ConfigDict(extra="allow")


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    read_only: bool = False,
    path_args: tuple[str, ...] = (),
    needs_approval: bool = False,
    command_arg: str | None = None,
    timeout: float | None = 120.0,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    read_only: bool = False,
    path_args: tuple[str, ...] = (),
    needs_approval: bool = False,
    command_arg: str | None = None,
    timeout: float | None = 120.0,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool of a typed function; its docstring gives the description and the
    `Args:` section the argument descriptions."""

    def make(f: Callable[..., Any]) -> Tool:
        if not callable(f):
            raise UsageError(f"@tool makes a tool of a function, not of {type(f).__name__}")
        chosen = name or str(getattr(f, "__name__", ""))
        if not NAME.fullmatch(chosen):  # else the provider refuses the request, mid-run
            raise UsageError(
                f"tool name {chosen!r}: model APIs take 1 to 64 letters, digits, '_' or '-'; "
                "rename the function or give @tool(name=...)"
            )
        if inspect.isasyncgenfunction(f):  # its calls would return a generator, not a result
            raise UsageError(f"tool {chosen}: an async generator is not a tool; return the result")
        if timeout is not None and not timeout > 0:
            raise UsageError(
                f"tool {chosen}: timeout={timeout!r}: seconds, more than 0 (None: none)"
            )
        args_model, takes_context, description, kinds = _signature_model(f)
        unknown = set(path_args) - set(args_model.model_fields)
        if unknown:
            raise UsageError(f"tool {f.__name__}: path_args {sorted(unknown)} are not parameters")
        paths = (
            *path_args,
            *(n for n, k in kinds.items() if ArgKind.PATH in k and n not in path_args),
        )
        patterns = tuple(n for n, k in kinds.items() if k & {ArgKind.REGEX, ArgKind.GLOB})
        if command_arg is not None and command_arg not in args_model.model_fields:
            raise UsageError(f"tool {f.__name__}: command_arg {command_arg!r} is not a parameter")
        return Tool(
            name=name or f.__name__,
            description=description,
            fn=f,
            args_model=args_model,
            takes_context=takes_context,
            read_only=read_only,
            path_args=paths,
            pattern_args=patterns,
            needs_approval=needs_approval,
            command_arg=command_arg,
            timeout=timeout,
        )

    return make if fn is None else make(fn)


def _is_context(hint: object) -> bool:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint is ToolContext or get_origin(hint) is ToolContext


def _signature_model(
    fn: Callable[..., Any],
) -> tuple[type[BaseModel], bool, str, dict[str, set[ArgKind]]]:
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    arg_docs = {p.arg_name: _unwrapped(p.description or "") for p in doc.params}
    try:
        hints = get_type_hints(fn, include_extras=True)  # `Annotated` markers kept
    except NameError as exc:  # a hint names a type the function's module does not define
        raise UsageError(
            f"tool {fn.__name__}: a type hint cannot be resolved ({exc}); define the type at "
            "module level, where the hint's name can be found"
        ) from None
    params = list(inspect.signature(fn).parameters.values())
    takes_context = bool(params) and _is_context(hints.get(params[0].name))
    fields: dict[str, Any] = {}
    kinds: dict[str, set[ArgKind]] = {}
    for param in params[1:] if takes_context else params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {fn.__name__}: *args and **kwargs cannot be described")
        if param.kind is param.POSITIONAL_ONLY:  # the model's arguments are passed by name
            raise UsageError(
                f"tool {fn.__name__}: parameter {param.name!r} is positional-only; its call "
                "passes arguments by name: drop the `/`"
            )
        if _is_context(hints.get(param.name)):
            raise UsageError(
                f"tool {fn.__name__}: its ToolContext parameter {param.name!r} must come first"
            )
        if param.name not in hints:
            raise UsageError(f"tool {fn.__name__}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        if found := kinds_of(hints[param.name]):
            kinds[param.name] = found
        described = arg_docs.get(param.name)  # else an `Annotated` Field's description stands
        fields[param.name] = (
            hints[param.name],
            Field(default, description=described) if described else Field(default),
        )
    try:
        model = create_model(f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    except PydanticSchemaGenerationError as exc:
        raise UsageError(
            f"tool {fn.__name__}: its parameters cannot be described to the model "
            f"({str(exc).split('. ')[0]}); use JSON types, pydantic models or dataclasses"
        ) from None
    return model, takes_context, _unwrapped(doc.description or "") or fn.__name__, kinds


def _unwrapped(text: str) -> str:
    """A docstring's text with each paragraph on one line: a summary wrapped in the source is
    one sentence to the model (whose tool listing shows the first line only), not two."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(_LINE_BREAK.sub(" ", p.strip()) for p in paragraphs if p.strip())


_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*(?![-*•]|\d+[.)] )")
"""A line break inside a paragraph, but not one before a list item."""


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated titles: they cost tokens and tell the model nothing."""
    if isinstance(schema, dict):
        return {
            key: (
                {k: _strip_titles(v) for k, v in value.items()}  # property names stay
                if key in ("properties", "$defs")
                else _strip_titles(value)
            )
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema
