"""`planwatch report PLAN --prometheus URL --out report.html`: the design-review page, for people who do not
run Grafana. One evaluation (as `check`) plus each tier's demand forecast, rendered self-contained."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from monitor.cli.common import ExitCode, err_console, fail, is_stdout, load_plan_or_exit
from monitor.cli.prom_options import BearerFile, Headers, Insecure, PrometheusURL, Timeout, make_source, parse_time
from monitor.units import parse_duration

if TYPE_CHECKING:
    from monitor.advice import DemandOutlook
    from monitor.collector import PrometheusCollector
    from monitor.observe.collector import DemandHistory
    from monitor.plan.model import Plan

__all__ = ["register"]

_STEP_SECONDS = 300.0


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    prometheus: PrometheusURL,
    out: Annotated[Path, typer.Option("--out", help="Where to write the HTML page ('-' is stdout).")] = Path(
        "report.html"
    ),
    at: Annotated[str | None, typer.Option("--at", help="Evaluate at this time (ISO 8601 or Unix s).")] = None,
    window: Annotated[str, typer.Option("--window", help="Observation window.")] = "1h",
    long_window: Annotated[str, typer.Option("--long-window", help="Window for peak and average.")] = "7d",
    history: Annotated[str, typer.Option("--history", help="Demand history the forecast fits on.")] = "14d",
    horizon: Annotated[str, typer.Option("--horizon", help="How far ahead to forecast.")] = "24h",
    header: Headers = None,
    bearer_token_file: BearerFile = None,
    insecure: Insecure = False,
    timeout: Timeout = 30.0,
) -> None:
    """Write a self-contained HTML report: sizing, drift, triggers, forecast with the schedule, cost."""
    from monitor.collector import PrometheusCollector  # heavy imports at run time keep `planwatch --help` fast
    from monitor.evaluation import evaluate
    from monitor.report.html import ReportInputs, render_report
    from monitor.sizing.plan_sizing import size_plan
    from monitor.source import PrometheusUnreachable, QueryError

    plan = load_plan_or_exit(plan_path)
    now = parse_time(at) or time.time()
    try:
        history_s, horizon_s = parse_duration(history), parse_duration(horizon)
    except ValueError as exc:
        fail(str(exc))
    with make_source(prometheus, header, bearer_token_file, insecure, timeout) as source:
        collector = PrometheusCollector(source, long_window=long_window)
        try:
            observations = collector.collect(plan, now, window)
            histories = _histories(collector, plan, now, history_s)
        except PrometheusUnreachable as exc:
            fail(f"cannot reach Prometheus at {exc.url}: {exc.reason}", ExitCode.UNREACHABLE)
        except QueryError as exc:
            fail(f"Prometheus at {prometheus} refused a query ({exc.message}): {exc.query}", ExitCode.UNREACHABLE)
    outlooks = _outlooks(histories, now, horizon_s)
    result = evaluate(plan, size_plan(plan), observations, outlooks, (), {}, {}, now,
                      held_since=now - parse_duration(window))  # fmt: skip
    page = render_report(ReportInputs(result, histories, outlooks))
    if is_stdout(out):
        typer.echo(page)
        return
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    err_console.print(f"wrote {out}")


def _histories(collector: PrometheusCollector, plan: Plan, now: float, seconds: float) -> dict[str, DemandHistory]:
    serving = [t for t in plan.tiers if t.routing.share > 0]
    return {t.name: collector.demand_history(plan, t.name, now - seconds, now, _STEP_SECONDS) for t in serving}


def _outlooks(histories: dict[str, DemandHistory], now: float, horizon_s: float) -> dict[str, DemandOutlook]:
    """Each tier's forecast; a tier whose history cannot be forecast is reported without one, and says why."""
    from forecasting import ForecastError
    from monitor.service.forecasts import forecast_tier

    outlooks = {}
    for name, hist in histories.items():
        try:
            outlooks[name] = forecast_tier(hist, now, horizon_s).outlook
        except ForecastError as exc:
            err_console.print(f"[yellow]warning:[/] no forecast for tier {name}: {exc}", highlight=False)
    return outlooks
