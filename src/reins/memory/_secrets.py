"""Secrets are never kept as memory: `secret_in` names the kind of secret a text holds.

Two families of patterns. Token formats a provider fixes (an OpenAI or GitHub key, an AWS
access key id, a private key's armour, a JWT), matched on their own. And what a chat says: "my
password is hunter2", "api key: ...", `DB_PASSWORD=...`, `Authorization: Bearer ...`, a URL with
a password in it; there the value after the keyword is checked, so that "the password is stored
in the keychain" or "the token is valid for an hour" are not taken for secrets.

Every pattern runs on RE2 (time linear in the text, whatever it holds), as the user's own
redaction rules do. A refused fact costs a rewording; a kept secret is a leak, so the patterns
lean to flagging. Long hex strings alone (a git sha) are not flagged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]  # (no stubs: compile and search are used)

from ..core._errors import UsageError

_TOKENS = (
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("Anthropic key", r"\bsk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{20,}"),
    ("OpenAI key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("AWS access key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    (
        "Slack token",
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}"
        r"|hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
    ),
    ("Stripe key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("PyPI token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("SendGrid key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("Twilio key", r"\bSK[0-9a-f]{32}\b"),
    ("Telegram bot token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}"),
    ("Azure storage key", r"AccountKey=[A-Za-z0-9+/]{40,}"),
    ("JWT", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
"""Formats fixed by who issues them (after gitleaks' and detect-secrets' rules): each is
matched as it stands. Anthropic's before OpenAI's, whose `sk-` would take it."""

_PASSWORD = r"password|passwd|passphrase|pass ?code|pwd"
_KEY = (
    r"api[ _-]?(?:key|token)|access[ _-]?(?:key|token)|auth[ _-]?token|secret[ _-]?key"
    r"|client[ _-]?secret|private[ _-]?key|token|secret"
)
_SAID = (
    r"(?i)(?:^|[^a-z0-9])\w*?(?P<keyword>{words})"  # DB_PASSWORD, PGPASSWORD too
    r"(?:\s+(?:for|of|on|to|at|in)\s+\S+(?:\s+\S+){{0,3}}?)?"  # "password for the db"
    r"\s*(?:\bis\b|\bwas\b|:=|=>|->|=|:)\s*[\"'`]?(?P<value>[^\s\"'`,;]+)"
)
_SAID_PASSWORD = _SAID.format(words=_PASSWORD)
_SAID_KEY = _SAID.format(words=_KEY)
_TOKEN_VALUE = r"\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})"
_BEARER = r"(?i)\bbearer" + _TOKEN_VALUE
_AUTHORIZATION = r"(?i)\bauthorization\s*[:=]\s*(?:basic|digest|token)" + _TOKEN_VALUE
_URL = r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@]+:(?P<value>[^\s/@]+)@"

_WORDS = frozenset(
    """about above across after again against along already also always among around
    available based before behind being below beside between blank by cached changed
    checked configured created defined different disabled done each either empty
    enabled encrypted every expired expires from generated given handled hashed here hidden
    ignored inside invalid just kept known last later least less located long
    managed missing more most much must needed never next none not now only optional other
    over passed printed provided read ready redacted removed required reset revoked rotated
    same saved secret sent set shared short should shown since some still stored such than
    that the their then there these they this those through under unknown unset until used
    using valid very what when where which while will with within without would""".split()  # noqa: SIM905 (words read as a paragraph)
)
"""Words that follow "password is" or "token:" in a fact that holds no secret."""


def secret_in(text: str, extra: Sequence[str] = ()) -> str | None:
    """The kind of secret `text` holds ("OpenAI key", "password", ...), or None; `extra` are
    the user's redaction rules (RE2 regexes: a match is "a redaction rule"). A rule RE2
    cannot read raises `UsageError` naming it."""
    rules = [_rule(rule) for rule in extra]  # every rule checked, matched or not
    found = _TOKEN_REGEX.search(text)
    if found is not None:
        return _TOKEN_KINDS[found.lastgroup]
    for kind, regex, plausible in _SAID_RULES:
        for match in regex.finditer(text):
            if plausible(match.group("value")):
                return kind
    if any(rule.search(text) is not None for rule in rules):
        return "a redaction rule"
    return None


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # else RE2 writes each bad pattern to stderr
    return options


@lru_cache(maxsize=256)
def _rule(rule: str) -> Any:
    try:
        return re2.compile(rule, _options())
    except re2.error as exc:
        why = exc.args[0] if exc.args else ""
        why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
        raise UsageError(
            f"redaction rule {rule!r} is not a regular expression RE2 reads ({why}): fix or "
            "remove it (RE2's syntax is Python's without backreferences or lookaround)"
        ) from None


def _value(value: str) -> str:
    return value.rstrip(".!?)]}>")


def _reference(value: str) -> bool:
    """A value that names where the secret is, or stands in for one: `$DB_PASSWORD`,
    `${...}`, `<your key>`, `os.environ[...]`, `~/.netrc`, `****`."""
    return (
        value[:1] in "$%{<[(~/"
        or value.startswith("./")
        or "environ" in value
        or "getenv" in value
        or "(" in value
        or len(set(value)) == 1
    )


def _password(value: str) -> bool:
    value = _value(value)
    return len(value) >= 4 and value.lower() not in _WORDS and not _reference(value)


def _key(value: str) -> bool:
    """A key or token is at least 8 characters, with a digit unless it is long."""
    value = _value(value)
    if len(value) < 8 or value.lower() in _WORDS or _reference(value):
        return False
    return len(value) >= 20 or any(c.isdigit() for c in value)


def _bearer(value: str) -> bool:
    """Not "Bearer authentication": a token has a digit or a symbol."""
    return any(c.isdigit() or c in "._~+/=-" for c in value) and not _reference(value)


def _in_url(value: str) -> bool:
    return not _reference(value)


_TOKEN_KINDS = {f"k{i}": kind for i, (kind, _) in enumerate(_TOKENS)}
_TOKEN_REGEX = re2.compile(
    "|".join(f"(?P<k{i}>{pattern})" for i, (_, pattern) in enumerate(_TOKENS)), _options()
)
_SAID_RULES: tuple[tuple[str, Any, Callable[[str], bool]], ...] = (
    ("password in a URL", re2.compile(_URL, _options()), _in_url),
    ("bearer token", re2.compile(_BEARER, _options()), _bearer),
    ("Authorization header", re2.compile(_AUTHORIZATION, _options()), _bearer),
    ("password", re2.compile(_SAID_PASSWORD, _options()), _password),
    ("generic API key", re2.compile(_SAID_KEY, _options()), _key),
)
