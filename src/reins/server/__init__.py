"""reins as a service: an HTTP API over the runs of one store (`reins[server]`: FastAPI and
uvicorn). `create_app(runs, make_agent, token)` is the ASGI app; `Runs` drives the runs it
starts and streams theirs and other processes' runs from the log; `RunRequest` is what a
client asks for, which `make_agent` turns into an agent.

Inside: `_runs` (the runs going on, and following one's events), `_app` (the routes),
`_token` (the bearer token: given, or made once and kept in the store).
"""

from ._app import AgentFactory, RunRequest, RunView, create_app
from ._runs import Runs
from ._token import TOKEN_VARIABLE, server_token

__all__ = [
    "TOKEN_VARIABLE",
    "AgentFactory",
    "RunRequest",
    "RunView",
    "Runs",
    "create_app",
    "server_token",
]
