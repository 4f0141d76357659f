"""`planwatch report PLAN --prometheus URL --out report.html`: the design-review page, for people who do not
run Grafana. The evaluation `check` makes (with each tier's demand forecast), rendered self-contained."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.common import err_console, fail, is_stdout, load_plan_or_exit
from monitor.cli.prom_options import BearerFile, Headers, Insecure, PrometheusURL, Timeout, make_source, parse_time

__all__ = ["register"]


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
    history: Annotated[str, typer.Option("--history", help="Demand history the forecast fits on.")] = "28d",
    horizon: Annotated[str, typer.Option("--horizon", help="How far ahead to forecast.")] = "24h",
    header: Headers = None,
    bearer_token_file: BearerFile = None,
    insecure: Insecure = False,
    timeout: Timeout = 30.0,
) -> None:
    """Write a self-contained HTML report: sizing, drift, triggers, forecast with the schedule, cost."""
    from monitor.cli.live import evaluate_live, exit_on_prometheus_errors, forecast_windows, validate_windows
    from monitor.measurements import judge_plan
    from monitor.measurements.collect import read_measurements
    from monitor.report.html import ReportInputs, render_report

    validate_windows(window, long_window)
    windows = forecast_windows(history, horizon)
    plan = load_plan_or_exit(plan_path)
    now = parse_time(at) or time.time()
    with make_source(prometheus, header, bearer_token_file, insecure, timeout) as source:
        live = evaluate_live(source, plan, now, window, long_window=long_window, windows=windows)
        with exit_on_prometheus_errors(source.settings.url):
            sizing = live.evaluation.sizing
            record = judge_plan(plan, sizing, read_measurements(source, plan, sizing, now, long_window))
    for note in live.forecast_notes:
        err_console.print(f"[yellow]warning:[/] {note}", highlight=False)
    histories = live.fitted.histories if live.fitted else {}
    page = render_report(ReportInputs(live.evaluation, histories, live.evaluation.outlooks, tuple(record)))
    if is_stdout(out):
        typer.echo(page)
        return
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    err_console.print(f"wrote {out}")
