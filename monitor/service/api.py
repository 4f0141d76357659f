"""The HTTP API: thin routes over the cached snapshot (reads never wait on Prometheus) and the state store.

Reads return the bodies the jobs rendered; `?tier=` and trigger filters render a small body on the fly.
Writes (`POST /v1/evals`, acknowledgements) need the bearer token; reads need it when `protect_reads` is
set. /healthz, /readyz and /metrics are always open: probes and scrapers carry no token.
The context, the token checks and the helpers the routes share are in monitor.service.api_deps.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from monitor.measurements.export import record_to_dict
from monitor.measurements.record import ordered
from monitor.plan.model import FLEET
from monitor.service import schemas, views
from monitor.service.api_deps import (
    JSON,
    PROBLEMS,
    ApiContext,
    Ctx,
    TierParam,
    check_tier,
    evaluated,
    field_error,
    json_body,
    read_access,
    require_token,
    view,
)
from monitor.service.guard import MAX_BODY_BYTES, BodyGuard
from monitor.service.jobs import with_fresh_acknowledgements
from monitor.service.metrics_cache import MetricsCache, Same
from monitor.service.pages import add_pages
from monitor.service.results import Snapshot
from monitor.service.state import NoOpenEpisode, StateNotWritable, TooManyAcknowledgements
from monitor.shapes import dump
from monitor.triggers import CATALOG, EvalResult

__all__ = ["ApiContext", "create_app"]


class TriggerFilter(StrEnum):
    OPEN = "open"
    ACTIVE = "active"
    PENDING = "pending"
    ALL = "all"


def _read_routes() -> APIRouter:
    r = APIRouter(prefix="/v1", dependencies=[Depends(read_access)], tags=["results"], responses=PROBLEMS)

    @r.get("/plan", summary="The capacity plan being held (validated, quantities in seconds and bytes)")
    async def plan(ctx: Ctx) -> Response:
        return json_body(ctx.results.current().bodies["plan"])

    @r.get("/sizing", summary="The plan's sizing per tier with formulas (as `planwatch size --format json`)")
    async def sizing(ctx: Ctx) -> Response:
        return json_body(ctx.results.current().bodies["sizing"])

    @r.get("/evaluation", summary="The latest evaluation whole", responses={200: {"model": schemas.EvaluationResponse}})
    async def evaluation(ctx: Ctx) -> Response:
        return json_body(evaluated(ctx).bodies["evaluation"])

    @r.get(
        "/observations",
        summary="What production did per tier",
        responses={200: {"model": schemas.ObservationsResponse}},
    )
    async def observations(ctx: Ctx, tier: TierParam = None) -> Response:
        return view(ctx, "observations", tier, views.observations_body)

    @r.get(
        "/drift", summary="Each plan assumption against production", responses={200: {"model": schemas.DriftResponse}}
    )
    async def drift(ctx: Ctx, tier: TierParam = None) -> Response:
        return view(ctx, "drift", tier, views.drift_body)

    @r.get(
        "/recommendations",
        summary="Replicas per tier now, with the reason, costs and schedule",
        responses={200: {"model": schemas.RecommendationsResponse}},
    )
    async def recommendations(ctx: Ctx, tier: TierParam = None) -> Response:
        return view(ctx, "recommendations", tier, views.recommendations_body)

    @r.get(
        "/schedule",
        summary="Upcoming scale-ups, in the order they must start",
        responses={200: {"model": schemas.ScheduleResponse}},
    )
    async def schedule(ctx: Ctx, tier: TierParam = None) -> Response:
        return view(ctx, "schedule", tier, views.schedule_body)

    @r.get(
        "/forecast",
        summary="Demand forecast per tier (mean, 80% band, next peak)",
        responses={200: {"model": schemas.ForecastResponse}},
    )
    async def forecast(ctx: Ctx, tier: TierParam = None) -> Response:
        return view(ctx, "forecast", tier, views.forecast_body)

    @r.get("/measurements", summary="The measurement plan's record: each item measured, partly or not yet")
    async def measurements(ctx: Ctx) -> dict[str, Any]:
        items = await run_in_threadpool(ctx.store.measurement_record)
        return record_to_dict(ordered(items.values()))

    @r.get("/evals", summary="Every posted eval result", response_model=schemas.EvalsResponse)
    def evals(ctx: Ctx) -> dict[str, Any]:
        return {"evals": [e.model_dump() for e in ctx.store.evals(latest_only=False)]}

    return r


def _trigger_routes() -> APIRouter:
    r = APIRouter(prefix="/v1", tags=["triggers"], responses=PROBLEMS)

    @r.get(
        "/triggers",
        summary="Revisit-the-design triggers: open ones (default), active, pending, or all episodes",
        dependencies=[Depends(read_access)],
        responses={200: {"model": schemas.TriggersResponse}},
    )
    async def triggers(
        ctx: Ctx,
        state: Annotated[TriggerFilter, Query(description="open = pending and active; all = history too")] = (
            TriggerFilter.OPEN
        ),
        tier: TierParam = None,
        limit: Annotated[int, Query(ge=1, le=10_000, description="Episodes for state=all, newest first.")] = 100,
    ) -> Response:
        s = evaluated(ctx)
        check_tier(s, tier)
        if state is TriggerFilter.ALL:  # the only read that touches the state file: off the event loop
            return json_body(await run_in_threadpool(_history, ctx, s, limit, tier))
        if state is TriggerFilter.OPEN and tier is None:
            return json_body(s.bodies["triggers"])
        return json_body(views.encode(views.triggers_body(s, state.value, tier)))

    @r.post(
        "/triggers/{trigger_id}/ack",
        summary="Acknowledge a trigger that holds on a tier: records who knows; hides nothing",
        status_code=201,
        dependencies=[Depends(require_token)],
        response_model=schemas.AckResponse,
        responses={
            409: {
                "model": schemas.Problem,
                "description": "The trigger does not hold on that tier now, or its "
                "episode has the most acknowledgements one keeps.",
            },
        },
    )
    def acknowledge(
        ctx: Ctx, body: schemas.AckRequest, trigger_id: Annotated[str, Path(examples=["prompt-p95-above-plan"])]
    ) -> schemas.AckResponse:
        if trigger_id not in {d.id for d in CATALOG}:
            raise HTTPException(404, f"no trigger {trigger_id!r}; known: {', '.join(d.id for d in CATALOG)}")
        plan = ctx.results.current().plan
        if body.tier not in {t.name for t in plan.tiers} | {FLEET}:
            raise field_error("tier", f"no tier named {body.tier!r} in plan {plan.name} (nor {FLEET!r})")
        try:
            ack = ctx.store.acknowledge(trigger_id, body.tier, body.by, body.comment, ctx.clock())
        except (NoOpenEpisode, TooManyAcknowledgements) as exc:
            raise HTTPException(409, str(exc)) from None
        ctx.results.update(with_fresh_acknowledgements(ctx.store))
        return schemas.AckResponse(trigger=trigger_id, tier=body.tier, by=ack.by, comment=ack.comment, at=ack.at,
                                   episode_id=ack.episode_id)  # fmt: skip

    @r.post(
        "/evals",
        summary="Post a quality eval result; the next evaluation judges the quality triggers on it",
        status_code=201,
        dependencies=[Depends(require_token)],
        response_model=schemas.EvalResponse,
        tags=["evals"],
    )
    def post_eval(ctx: Ctx, result: EvalResult) -> schemas.EvalResponse:
        plan = ctx.results.current().plan
        if result.model not in plan.models:
            raise field_error("model", f"{result.model!r} is not a model of the plan; models: {', '.join(plan.models)}")
        if not result.submitted_at:
            result = result.model_copy(update={"submitted_at": ctx.clock()})
        id_ = ctx.store.add_eval(result)
        return schemas.EvalResponse(
            id=id_, eval=result.model_dump(), regression=result.regression, failed=result.failed
        )

    return r


def _history(ctx: ApiContext, s: Snapshot, limit: int, tier: str | None) -> bytes:
    episodes = ctx.store.history(limit, tier)
    acks = ctx.store.acknowledgements(e.id for e in episodes)
    return views.encode(views.history_body(s, episodes, acks))


def _ops_routes() -> APIRouter:
    r = APIRouter(tags=["operations"])

    @r.get("/healthz", summary="The process is alive")
    async def healthz() -> dict[str, str]:
        return {"status": "alive"}

    @r.get(
        "/readyz",
        summary="Ready after the first evaluation with data; 503 with the reasons while degraded",
        response_model=schemas.ReadinessResponse,
        responses={503: {"model": schemas.ReadinessResponse, "description": "Starting or degraded, with reasons."}},
    )
    async def readyz(ctx: Ctx) -> JSONResponse:
        ready, body = views.readiness(ctx.results.current(), ctx.clock(), ctx.settings.data_age_limit_seconds)
        if ctx.store.write_problem is not None:  # results may still serve; what is posted or learnt is not kept
            ready = False
            body = body.model_copy(update={"status": "degraded", "reasons": [*body.reasons, ctx.store.write_problem]})
        return JSONResponse(dump(body), status_code=200 if ready else 503)

    @r.get(
        "/metrics",
        summary="Prometheus exposition of the latest results and the plan's assumptions",
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics(request: Request) -> Response:
        cache: MetricsCache = request.app.state.metrics
        return Response(cache.body(), media_type=CONTENT_TYPE_LATEST)

    return r


async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 whose Allow lists every method of the path: GET and POST /v1/evals live on different routers, and
    Starlette would name only the first router's."""
    methods: set[str] = set()
    for route in request.app.routes:
        if isinstance(route, APIRoute) and route.path_regex.match(request.url.path):
            methods |= route.methods or set()
    allow = ", ".join(sorted(methods))
    return JSONResponse({"detail": "Method Not Allowed"}, status_code=405, headers={"Allow": allow})


async def _not_writable(request: Request, exc: Exception) -> JSONResponse:
    """A write the state file refused: 503 saying so (a full or read-only disk is not a bug of the request)."""
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "60"})


async def _validation_problem(request: Request, exc: Exception) -> JSONResponse:
    """422 whose `message` names each field in words: 'body.tier: Field required'."""
    assert isinstance(exc, RequestValidationError)
    # Not the offending input back: it may be huge, or NaN/Infinity, which JSON cannot carry.
    errors = jsonable_encoder([{k: e[k] for k in ("type", "loc", "msg") if k in e} for e in exc.errors()])
    message = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
    return JSONResponse({"detail": errors, "message": message}, status_code=422)


def _metrics_key(ctx: ApiContext) -> tuple[object, ...]:
    """What the exposition depends on: the snapshot (by identity), the minute (business hours are judged at
    scrape time, to the minute) and the state file's skipped rows."""
    return (Same(ctx.results.current()), int(ctx.clock() // 60), tuple(ctx.store.unreadable_rows.items()))


def create_app(
    ctx: ApiContext, lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None
) -> FastAPI:
    app = FastAPI(
        title="planwatch advisor",
        summary="Holds an LLM serving fleet against its capacity plan: drift, triggers, forecasts, scale advice.",
        version="1",
        lifespan=lifespan,
        docs_url=None,  # served by monitor.service.pages from local assets: they work offline
        redoc_url=None,
    )
    app.state.planwatch = ctx
    app.state.metrics = MetricsCache(ctx.registry, lambda: _metrics_key(ctx))
    app.add_middleware(BodyGuard, token=ctx.settings.api_token, routes=app.routes)
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(RequestValidationError, _validation_problem)
    app.add_exception_handler(StateNotWritable, _not_writable)
    for router in (_read_routes(), _trigger_routes(), _ops_routes()):
        app.include_router(router)
    openapi = app.openapi
    app.openapi = lambda: _as_served(openapi(), ctx)  # type: ignore[method-assign]
    add_pages(app, ctx.settings.evaluation_interval, read_access)
    return app


def _as_served(doc: dict[str, Any], ctx: ApiContext) -> dict[str, Any]:
    """The generated document, made to say what this service does: reads are open unless protect_reads, and
    a tier or model outside the plan is not a valid value (the plan is fixed for the process's life)."""
    if doc.get("x-planwatch-served"):
        return doc
    for item in doc["paths"].values():
        for method, op in item.items():
            if method == "get" and not ctx.settings.protect_reads:
                op.pop("security", None)
                op.get("responses", {}).pop("401", None)
            if method == "post":
                op["responses"].update(_WRITE_PROBLEMS)
    for param in doc["paths"]["/v1/triggers/{trigger_id}/ack"]["post"]["parameters"]:
        if param["name"] == "trigger_id":
            param["schema"]["enum"] = [d.id for d in CATALOG]
    plan = ctx.results.current().plan
    schemas_ = doc["components"]["schemas"]
    schemas_["AckRequest"]["properties"]["tier"]["enum"] = [t.name for t in plan.tiers] + [FLEET]
    schemas_["EvalResult"]["properties"]["model"]["enum"] = list(plan.models)
    doc["x-planwatch-served"] = True
    return doc


_PROBLEM_BODY = {JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
_WRITE_PROBLEMS = {
    "400": {"description": "The body is not JSON.", "content": _PROBLEM_BODY},
    "413": {"description": f"The body is over {MAX_BODY_BYTES:,} bytes.", "content": _PROBLEM_BODY},
}
