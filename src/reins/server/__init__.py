"""reins as a service: an HTTP API over the runs of one store (`reins[server]`: FastAPI and
uvicorn). `Runs(log, make_agent)` drives the runs it starts and resumes with the agents
`make_agent` builds from a `RunRequest`, and streams theirs and other processes' runs from the
log; `create_app(runs, token)` is the ASGI app.

Inside: `_runs` (the runs going on, answering and resuming them, following one's events),
`_app` (the routes), `_ws` (the same over a WebSocket), `_requests` and `_views` (what goes
in and out), `_webhooks` (a run's end told to a URL, signed),
`_token` (the bearer token: given, or made once and kept in the store), `_shared` (on a
PostgreSQL store, a stop or a steer for a run another server runs, sent to it through the store).
"""

from ._app import create_app
from ._requests import ResumeRequest, RunRequest
from ._runs import AgentFactory, Runs
from ._token import TOKEN_VARIABLE, server_token
from ._views import RunView
from ._webhooks import SIGNATURE, signature

__all__ = [
    "SIGNATURE",
    "TOKEN_VARIABLE",
    "AgentFactory",
    "ResumeRequest",
    "RunRequest",
    "RunView",
    "Runs",
    "create_app",
    "server_token",
    "signature",
]
