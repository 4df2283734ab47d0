"""Reading a shell command line as the simple commands it runs, or refusing to guess.

A permission rule matches an argv prefix (`git push`). That only means something for a command
line made of plain words joined by `&&`, `||`, `;`, `|` and `&`: once it holds a substitution,
an expansion, a subshell or a function, what runs is decided by the shell, not by the text, so
such a line is "not judgeable" and gets the tool's default decision (never `allow` by a rule).
The line is parsed with tree-sitter's bash grammar, as codex parses it.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

Argv = tuple[str, ...]

_JOINERS = frozenset({"program", "list", "pipeline", "&&", "||", ";", "|", "|&", "&"})
"""Nodes that only join simple commands."""
_REDIRECTS = frozenset({"redirected_statement", "file_redirect", "file_descriptor"})
_REDIRECT_OPS = frozenset({">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<>"})
_WORDS = frozenset({"word", "number", "string", "raw_string"})

WRAPPERS = frozenset(
    {
        *("sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"),
        *("eval", "exec", "source", ".", "command", "builtin"),
        *("env", "xargs", "sudo", "doas", "su", "nohup", "setsid", "timeout", "nice", "time"),
    }
)
"""Programs that run another command given as their arguments: a rule on their prefix says
nothing about what they run, so a line that uses one is not judgeable."""


@cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def simple_commands(line: str) -> list[Argv] | None:
    """The argv of each simple command `line` runs, in order; None if it is not judgeable."""
    tree = _parser().parse(line.encode())
    if tree.root_node.has_error:
        return None
    commands: list[Argv] = []
    if not _collect(tree.root_node, commands) or not commands:
        return None
    return commands


def _collect(node: Node, commands: list[Argv]) -> bool:
    kind = node.type
    if kind in _JOINERS or kind in _REDIRECTS:
        return all(_collect(child, commands) for child in node.children)
    if kind in _REDIRECT_OPS or kind in _WORDS:
        return True  # a redirection's target: where output goes, not what runs
    if kind == "comment":
        return True
    if kind != "command":
        return False  # subshell, substitution, expansion, assignment, function, heredoc, ...
    argv: list[str] = []
    for child in node.children:
        if child.type == "command_name":
            child = child.children[0] if child.children else child
        word = _word(child)
        if word is None:
            return False
        argv.append(word)
    if not argv or _hidden(argv[0]):
        return False
    commands.append(tuple(argv))
    return True


def _word(node: Node) -> str | None:
    """The literal text of a word, or None if the shell would expand it."""
    text = (node.text or b"").decode()
    match node.type:
        case "word" | "number":
            return text
        case "raw_string":
            return text[1:-1]
        case "string":
            parts = [c for c in node.children if c.type not in ('"',)]
            if any(c.type != "string_content" for c in parts):
                return None  # "$x", "$(...)" inside double quotes
            return "".join((c.text or b"").decode() for c in parts)
        case _:
            return None


def _hidden(program: str) -> bool:
    """True if the program actually run is not the word itself: a wrapper, a glob, a
    variable's value."""
    name = program.rsplit("/", 1)[-1]
    return name in WRAPPERS or any(ch in program for ch in "*?[{$`~")
