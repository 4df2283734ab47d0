"""The server's token: `$REINS_SERVER_TOKEN`, else one made at the first start and kept in the
store (mode 600, written once: two servers starting at once agree on the first one's)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ..core._errors import UsageError

TOKEN_FILE = "server.token"
TOKEN_VARIABLE = "REINS_SERVER_TOKEN"


def server_token(store: Path) -> tuple[str, bool]:
    """The token, and whether it was made just now (then it is shown once)."""
    if given := os.environ.get(TOKEN_VARIABLE, "").strip():
        return given, False
    path = store / TOKEN_FILE
    store.mkdir(parents=True, exist_ok=True)
    made = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        kept = path.read_text().strip()
        if not kept:
            raise UsageError(f"{path} is empty: delete it, and a new token is made") from None
        return kept, False
    with os.fdopen(fd, "w") as file:
        file.write(made + "\n")
    return made, True
