"""What every route of the HTTP API stands on: the context the app carries, the bearer-token dependencies,
and the helpers that turn the cached snapshot into a response or refuse a request.

Kept apart from monitor.service.api, which holds the routes and assembles the app, so that each reads alone;
nothing here knows a route, and this module imports nothing of monitor.service.api.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry

from monitor.plan.model import FLEET
from monitor.service import schemas, views
from monitor.service.guard import token_problem
from monitor.service.results import Results, Snapshot
from monitor.service.settings import Settings
from monitor.service.state import StateStore
from monitor.shapes import Shape

__all__ = [
    "JSON",
    "PROBLEMS",
    "ApiContext",
    "Credentials",
    "Ctx",
    "TierParam",
    "check_tier",
    "evaluated",
    "field_error",
    "json_body",
    "read_access",
    "require_token",
    "view",
]

JSON = "application/json"


@dataclass(frozen=True)
class ApiContext:
    settings: Settings
    results: Results
    store: StateStore
    registry: CollectorRegistry
    clock: Callable[[], float]


_bearer = HTTPBearer(auto_error=False, description="The api_token of the configuration (or PLANWATCH_API_TOKEN).")


async def _context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.planwatch
    return ctx


Ctx = Annotated[ApiContext, Depends(_context)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _unauthorized(detail: str, error: str = "") -> HTTPException:
    challenge = f'Bearer realm="planwatch", error="{error}"' if error else 'Bearer realm="planwatch"'
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": challenge})


async def require_token(ctx: Ctx, request: Request, credentials: Credentials) -> None:
    """The configured token, compared in constant time. No (or an empty) token configured: writes are refused.
    For writes, BodyGuard has already checked the same before the body was read."""
    problem = token_problem(ctx.settings.api_token, request.headers.get("authorization"))
    if problem is not None:
        raise _unauthorized(*problem)


async def read_access(ctx: Ctx, request: Request, credentials: Credentials) -> None:
    if ctx.settings.protect_reads:
        await require_token(ctx, request, credentials)


TierParam = Annotated[str | None, Query(description="Only this tier.", examples=["standard"])]
PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": schemas.Problem, "description": "Missing or wrong bearer token."},
    404: {"model": schemas.Problem, "description": "No such tier or trigger."},
    503: {
        "model": schemas.Problem,
        "description": "No evaluation yet (the first runs at startup); for writes, the "
        "state file is not writable (disk full, read-only).",
    },
}


def json_body(body: bytes, code: int = 200) -> Response:
    return Response(body, status_code=code, media_type=JSON)


def evaluated(ctx: ApiContext) -> Snapshot:
    s = ctx.results.current()
    if s.evaluation is None:
        retry = str(int(ctx.settings.evaluation_interval))
        raise HTTPException(503, "no evaluation yet: the first runs at startup", headers={"Retry-After": retry})
    return s


def check_tier(s: Snapshot, tier: str | None) -> None:
    """A plan tier, or `fleet` (all tiers together: observations, drift and triggers have that view)."""
    names = [t.name for t in s.plan.tiers] + [FLEET]
    if tier is not None and tier not in names:
        raise HTTPException(404, f"no tier named {tier!r}; tiers: {', '.join(names)}")


def field_error(field: str, message: str) -> RequestValidationError:
    """A body field that validates alone but not against the plan: the same 422 as a schema error."""
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": "value_error"}])


def view(ctx: ApiContext, key: str, tier: str | None, render: Callable[[Snapshot, str], Shape]) -> Response:
    """The cached body, or one tier's rendered on the fly."""
    s = evaluated(ctx) if key != "forecast" else ctx.results.current()
    if tier is None:
        return json_body(s.bodies[key])
    check_tier(s, tier)
    return json_body(views.encode(render(s, tier)))
