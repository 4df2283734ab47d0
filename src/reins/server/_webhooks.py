"""Webhooks: a run's view POSTed to the URL its request named when it finishes or waits,
signed like GitHub's (`X-Reins-Signature: sha256=HMAC(key, body)`, the key the server's
token), so the receiver knows the server sent it and nobody changed it."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging

import httpx

_logger = logging.getLogger(__name__)

SIGNATURE = "X-Reins-Signature"
TRIES = 3
TIMEOUT_S = 10.0


def signature(key: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


async def deliver(url: str, body: bytes, key: bytes) -> bool:
    """POST `body` to `url`, tried again after a connection error or a 5xx (1 s, then 2 s);
    whether it was taken (a 2xx). A failure is logged, never raised: the run is done."""
    headers = {"Content-Type": "application/json", SIGNATURE: signature(key, body)}
    async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as client:
        for attempt in range(TRIES):
            try:
                response = await client.post(url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if response.is_success:
                    return True
                failure = f"HTTP {response.status_code}"
                if response.status_code < 500:
                    break  # the receiver refuses it: asking again changes nothing
            if attempt + 1 < TRIES:
                await asyncio.sleep(2**attempt)
    _logger.warning("webhook %s not delivered: %s", url, failure)
    return False
