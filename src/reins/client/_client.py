"""`Client`: reins' HTTP API as Python calls, and a run's stream as the typed events a run in
process yields. An error the server answers with becomes the error reins raises in process
(404: `RunNotFound`, 409: `SessionBusy`, 401 and 4xx: `UsageError`); a server that cannot be
reached is `ServerUnreachable`."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import httpx

from ..core._errors import ReinsError, RunNotFound, SessionBusy, UsageError
from ..core._events import EVENT, RunFinished, StreamEvent, SubagentEvent
from ._sse import messages

TOKEN_VARIABLE = "REINS_SERVER_TOKEN"
"""Where a token not given is taken from (as `reins serve` does)."""

RECONNECTS = 5
"""A dropped stream is read again after its last event this many times in a row at most."""


class ServerUnreachable(ReinsError):
    """The server did not answer (not running, wrong address, the connection dropped)."""


class Client:
    """A client of one server (`url`, e.g. `http://127.0.0.1:8765`) with its `token` (none:
    `$REINS_SERVER_TOKEN`)."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        token = token or os.environ.get(TOKEN_VARIABLE, "").strip()
        if not token:
            raise UsageError(f"no token for {url}: give one, or set {TOKEN_VARIABLE}")
        self.url = url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout, read=None),  # a stream waits as long as its run
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- runs

    def run(self, goal: str, **fields: Any) -> RemoteRun:
        """A run of `goal` (started when first iterated): its events as they come, until it
        ends. `fields` are the rest of `POST /api/runs`: `session_id`, `model`, `workspace`,
        `mode`, `max_steps`, `time_budget`, `webhook`."""
        return RemoteRun(self, {"goal": goal, **fields})

    async def start(self, goal: str, **fields: Any) -> tuple[str, str]:
        """Start a run; its run id and session id."""
        started = await self._call("POST", "/api/runs", {"goal": goal, **fields})
        return started["run_id"], started["session_id"]

    async def events(self, run_id: str, after: int = 0) -> AsyncIterator[StreamEvent]:
        """The run's events after the `after`-th, until its stream ends (a waiting run's goes
        on when it is answered); a dropped connection is picked up after the last event."""
        tries = 0
        while True:
            try:
                async with self._http.stream(
                    "GET", f"/api/runs/{run_id}/events", params={"after": after}
                ) as response:
                    if response.is_error:
                        await response.aread()
                        _raise_for(response)
                    async for message in messages(response):
                        event = _event(message.data)
                        if message.id is not None:
                            after = int(message.id)
                            tries = 0
                        yield event
                return
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                tries += 1
                if tries > RECONNECTS:
                    raise ServerUnreachable(f"{self.url}: the stream dropped: {exc}") from None
                await asyncio.sleep(0.2 * tries)
            except httpx.TransportError as exc:
                raise ServerUnreachable(f"{self.url}: {exc or type(exc).__name__}") from None

    async def view(self, run_id: str) -> dict[str, Any]:
        """The run's state: status, stop reason, answer, steps, usage, cost, awaiting."""
        view: dict[str, Any] = await self._call("GET", f"/api/runs/{run_id}")
        return view

    async def steer(self, run_id: str, text: str) -> None:
        await self._call("POST", f"/api/runs/{run_id}/steer", {"text": text})

    async def stop(self, run_id: str) -> None:
        await self._call("POST", f"/api/runs/{run_id}/stop")

    async def approve(
        self, run_id: str, call_id: str, approve: bool = True, *, always: bool = False
    ) -> None:
        """Answer an approval the run waits on (the run goes on with it)."""
        body = {"approve": approve, "always": always}
        await self._call("POST", f"/api/runs/{run_id}/approvals/{call_id}", body)

    async def answer(self, run_id: str, question_id: str, text: str | None) -> None:
        """Answer the run's question (None: dismissed)."""
        await self._call("POST", f"/api/runs/{run_id}/answers/{question_id}", {"text": text})

    async def resume(self, run_id: str, **fields: Any) -> None:
        """Go on with a stopped run: `max_steps`, `time_budget`, `token_budget`,
        `cost_budget` (new totals), `approvals`, `answers`."""
        await self._call("POST", f"/api/runs/{run_id}/resume", fields)

    # -- sessions

    async def sessions(self, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """A page of the store's sessions, the latest active first: `{sessions, total}`."""
        page: dict[str, Any] = await self._call(
            "GET", "/api/sessions", params={"offset": offset, "limit": limit}
        )
        return page

    async def session(self, session_id: str) -> dict[str, Any]:
        shown: dict[str, Any] = await self._call("GET", f"/api/sessions/{session_id}")
        return shown

    async def compact(self, session_id: str) -> dict[str, Any]:
        done: dict[str, Any] = await self._call("POST", f"/api/sessions/{session_id}/compact")
        return done

    async def remove(self, session_id: str) -> None:
        await self._call("DELETE", f"/api/sessions/{session_id}")

    async def _call(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        try:
            response = await self._http.request(method, path, json=body, params=params)
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"{self.url}: {exc or type(exc).__name__}") from None
        _raise_for(response)
        return response.json() if response.content else None


class RemoteRun:
    """A run on a server as an async iterable of its events; started when first iterated.
    While iterating, `steer`, `stop`, `approve` and `answer` act on it; `finished` is its
    last `run_finished` (a run that waited has one each time it stopped to wait)."""

    def __init__(self, client: Client, request: dict[str, Any]) -> None:
        self.client = client
        self.request = request
        self.run_id = ""
        self.session_id = ""
        self.finished: RunFinished | None = None

    async def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if not self.run_id:
            self.run_id, self.session_id = await self.client.start(**self.request)
        async for event in self.client.events(self.run_id):
            if isinstance(event, RunFinished):
                self.finished = event
            yield event

    async def steer(self, text: str) -> None:
        await self.client.steer(self.run_id, text)

    async def stop(self) -> None:
        await self.client.stop(self.run_id)

    async def approve(self, call_id: str, approve: bool = True, *, always: bool = False) -> None:
        await self.client.approve(self.run_id, call_id, approve, always=always)

    async def answer(self, question_id: str, text: str | None) -> None:
        await self.client.answer(self.run_id, question_id, text)


def _event(data: str) -> StreamEvent:
    """A stream's event, typed: a journal event, or a subagent's wrapped with its path."""
    if data.startswith('{"subagent"'):
        wrapped = json.loads(data)
        return SubagentEvent(tuple(wrapped["subagent"]), EVENT.validate_python(wrapped["event"]))
    return EVENT.validate_json(data)


def _raise_for(response: httpx.Response) -> None:
    if not response.is_error:
        return
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text
    if isinstance(detail, list) and detail:  # pydantic's: the first field's complaint
        first = detail[0]
        detail = f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg')}"
    said = f"{response.request.method} {response.request.url.path}: {detail}"
    match response.status_code:
        case 401:
            raise UsageError(f"{said}: the server refused the token (see REINS_SERVER_TOKEN)")
        case 404:
            raise RunNotFound(said)
        case 409:
            raise SessionBusy(said)
        case status if status < 500:
            raise UsageError(said)
        case _:
            raise ServerUnreachable(f"{said} (HTTP {response.status_code})")
