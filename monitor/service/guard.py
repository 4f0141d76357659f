"""What a write must pass before its body is read: the bearer token, then a size cap.

FastAPI reads and parses a request body before it runs the route's dependencies, so without this an
unauthenticated client could make the service buffer a 300 MB body just to be told 401. This ASGI layer
sits in front of the app: for a method that carries a body it checks the token from the headers alone,
refuses a declared Content-Length over the cap with 413, and reads at most the cap from a chunked body
before handing the buffered body on. `require_token` (monitor.service.api) still checks the route itself.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence

from pydantic import SecretStr
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY_BYTES", "BodyGuard", "token_problem"]

MAX_BODY_BYTES = 64 * 1024  # an eval result or an acknowledgement is well under 4 kB
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def token_problem(expected: SecretStr | None, authorization: str | None) -> tuple[str, str] | None:
    """None when `authorization` carries the configured token; else (detail, RFC 6750 error code)."""
    if expected is None or not expected.get_secret_value():
        why = "no api_token configured" if expected is None else "an empty api_token (PLANWATCH_API_TOKEN='')"
        return f"writes are disabled: the service has {why}; set one to allow writes", ""
    scheme, _, credentials = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return "this route needs 'Authorization: Bearer <api_token>'", ""
    if not hmac.compare_digest(credentials.strip().encode(), expected.get_secret_value().encode()):
        return "the bearer token is not the configured api_token", "invalid_token"
    return None


class BodyGuard:
    """Guards the requests a route takes with a body; anything else (a 404, a 405) is the app's to answer."""

    def __init__(
        self, app: ASGIApp, token: SecretStr | None, routes: Sequence[BaseRoute], max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        self.app = app
        self.token = token
        self.routes = routes  # the app's own list: routers included later are seen
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY or not self._routed(scope):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        problem = token_problem(self.token, headers.get("authorization"))
        if problem is not None:
            challenge = f'Bearer realm="planwatch", error="{problem[1]}"' if problem[1] else 'Bearer realm="planwatch"'
            await _answer(send, 401, problem[0], [(b"www-authenticate", challenge.encode())])
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await _answer(send, 413, self._too_large(int(declared)))
            return
        body = await self._read(receive)
        if body is None:
            await _answer(send, 413, self._too_large(None))
            return
        await self.app(scope, _replay(body, receive), send)

    def _routed(self, scope: Scope) -> bool:
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes)

    def _too_large(self, size: int | None) -> str:
        said = f"{size:,} bytes" if size is not None else "more"
        return f"the request body is {said}; at most {self.max_body_bytes:,} bytes are accepted"

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it passes the cap."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect, as the server would

    return replay


async def _answer(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *(headers or [])],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})
