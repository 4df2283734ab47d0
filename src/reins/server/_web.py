"""The web page of `reins serve`: the static files of `web/` (`index.html` at `/`, the rest
under `/web/`), served with no token (they hold no data: the page asks for the token and
sends it with each API call) and a strict Content-Security-Policy: scripts, styles and
connections to this server only, no inline script, and markup made only by the sanitizer
(Trusted Types), so a model's or a tool's text cannot run script in the page.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

WEB = Path(__file__).parent / "web"

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types dompurify",
    )
)
"""The page's Content-Security-Policy. `trusted-types dompurify`: the sanitizer's policy is
the only one that may make HTML (`web/markdown.js`)."""

HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _Assets(StaticFiles):
    """The page's files, each with the page's headers."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def mount_web(app: FastAPI) -> None:
    """Serve the page at `/` and its files under `/web/` (after the API's routes, which keep
    theirs, and `/docs`)."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers=HEADERS)

    app.mount("/web", _Assets(directory=WEB), name="web")
