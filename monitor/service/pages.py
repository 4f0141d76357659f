"""The pages a person opens: `/` (a live status page) and the API docs, all working without internet.

FastAPI's own /docs and /redoc load Swagger UI and ReDoc from a CDN, so on an offline machine they are blank.
Here the same pages load the assets the `fastapi-offline` package ships, served from this process.
`/` is the report's answer section (status, actions, schedule, triggers) for the latest snapshot, refreshed
by the browser every evaluation interval.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from monitor.report.answer import ANSWER_CSS, answer_section
from monitor.service.results import Snapshot
from monitor.service.views import readiness

__all__ = ["ASSETS", "add_pages", "render_status_page"]

ASSETS = "/assets"
_PAGE_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5rem auto;max-width:1200px;color:#222}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f5f5f5}
.ok{color:#1a7f37}.warn,.warning{color:#9a6700}.breach,.critical{color:#cf222e;font-weight:600}.unknown{color:#8250df}
nav a{margin-right:1rem}small{color:#666}
"""


def _assets_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def add_pages(app: FastAPI, refresh_seconds: float, read_access: Callable[..., Awaitable[None]]) -> None:
    """Mount the doc assets and add `/`, `/docs` and `/redoc` (create the app with docs_url=None, redoc_url=None).
    `/` shows what the read routes show, so it takes their `read_access` dependency."""
    app.mount(ASSETS, StaticFiles(directory=_assets_dir()), name="assets")
    app.include_router(_router(app, refresh_seconds, read_access))


def _router(app: FastAPI, refresh_seconds: float, read_access: Callable[..., Awaitable[None]]) -> APIRouter:
    r = APIRouter(include_in_schema=False)

    @r.get("/", response_class=HTMLResponse, dependencies=[Depends(read_access)])
    async def status_page(request: Request) -> HTMLResponse:
        ctx = request.app.state.planwatch
        limit = ctx.settings.data_age_limit_seconds
        return HTMLResponse(render_status_page(ctx.results.current(), ctx.clock(), limit, refresh_seconds))

    @r.get("/docs", response_class=HTMLResponse)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title}: API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    @r.get("/redoc", response_class=HTMLResponse)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title}: API",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )

    return r


def render_status_page(s: Snapshot, now: float, data_age_limit_seconds: float, refresh_seconds: float) -> str:
    """The latest snapshot as a page; before the first evaluation, what the service is waiting for."""
    ready, body = readiness(s, now, data_age_limit_seconds)
    state = "ready" if ready else f"{body.status}: " + "; ".join(body.reasons)
    waiting = "<p>No evaluation yet: the first runs at startup.</p>"
    main = answer_section(s.evaluation) if s.evaluation is not None else waiting
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="refresh" content="{max(5, round(refresh_seconds))}">'
        f"<title>planwatch: {html.escape(s.plan.name)}</title><style>{_PAGE_CSS}{ANSWER_CSS}</style></head><body>"
        f"<h1>planwatch: {html.escape(s.plan.name)}</h1>"
        f"<p><small>service {html.escape(state)}; Prometheus {html.escape(s.source.url)}</small></p>"
        "<nav><a href=/docs>API docs</a><a href=/redoc>ReDoc</a><a href=/v1/recommendations>recommendations</a>"
        "<a href=/v1/schedule>schedule</a><a href=/v1/triggers>triggers</a><a href=/v1/drift>drift</a>"
        "<a href=/metrics>metrics</a></nav>" + main + "</body></html>"
    )
