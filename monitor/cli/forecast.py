"""`planwatch forecast`: demand forecast with intervals, next peak and ramp times.

Offline mode reads a CSV (`--csv FILE`). The core is three reusable steps, so the live mode (Prometheus)
only has to produce a `Series`:  series -> `run_forecast(series, options)` -> `render_forecast(result, ...)`.
Bad input ends with exit status 2 and one line naming the file, the line and what is wrong.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from forecasting import (
    ForecastError,
    ForecastInputError,
    ForecastResult,
    ForecastSettings,
    Series,
    format_duration,
    is_business_hours,
    local_time,
    next_morning_ramp,
    parse_duration,
)
from forecasting import forecast as run_model_selection
from forecasting.csv_input import parse_csv_series
from monitor.cli.common import is_stdout, load_plan_or_exit, out_console
from monitor.cli.forecast_live import live_demand, pick_tier, replica_thresholds
from monitor.cli.prom_options import BearerFile, Headers, Insecure, make_source, parse_time
from monitor.source import HttpPrometheusSource, PrometheusUnreachable

__all__ = [
    "ForecastOptions",
    "OutputFormat",
    "forecast_to_json",
    "load_csv_series",
    "register",
    "render_forecast",
    "run_forecast",
]

EXIT_BAD_INPUT = 2
EXIT_MODEL_FAILED = 1
EXIT_UNREACHABLE = 3
_MAX_TABLE_ROWS = 48


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    png = "png"


@dataclass(frozen=True)
class ForecastOptions:
    """What the command line asked for, already parsed; the live mode builds the same thing."""

    horizon_seconds: float = 86_400.0
    step_seconds: float | None = None
    thresholds: tuple[float, ...] = ()
    timezone: str = "UTC"
    unit: str = "req/s"
    subject: str = ""  # what is forecast, for titles: "plan codebase-assistant, tier standard" or the CSV's name
    replica_thresholds: bool = False  # the thresholds are the demand n = 1, 2, ... replicas serve (live mode)


def load_csv_series(
    path: Path, *, time_column: str | None = None, value_column: str | None = None, timezone: str = "UTC"
) -> Series:
    """Read a CSV file into a Series; every problem is a ForecastInputError naming the file (and line)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ForecastInputError(f"cannot read: {exc.__class__.__name__}: {exc}", source=str(path)) from exc
    return parse_csv_series(
        text, source=str(path), time_column=time_column, value_column=value_column, timezone=timezone
    )


def run_forecast(series: Series, options: ForecastOptions) -> ForecastResult:
    """Pick, fit and forecast (forecasting.forecast) with the command-line options."""
    settings = ForecastSettings(
        horizon_seconds=options.horizon_seconds, step_seconds=options.step_seconds, thresholds=options.thresholds
    )
    return run_model_selection(series, settings)


def _round(value: float | None, digits: int = 4) -> float | None:
    """Rounded for JSON; None for missing or non-finite numbers (a MASE against a perfect baseline is inf)."""
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


def forecast_to_json(result: ForecastResult, *, include_backtest: bool = False) -> dict[str, Any]:
    """The JSON document: model, reason, forecast (80% bounds), next_peak, ramp [, backtest]."""
    document: dict[str, Any] = {
        "model": result.model,
        "reason": result.reason,
        "forecast": [
            {"timestamp": p.timestamp_s, "mean": _round(p.mean), "lower": _round(p.lower), "upper": _round(p.upper)}
            for p in result.points(80)
        ],
        "next_peak": {
            "timestamp": result.next_peak.timestamp_s,
            "value": _round(result.next_peak.value),
            "upper": _round(result.next_peak.upper),
        },
        "ramp": [
            {"threshold": c.threshold, "timestamp": c.timestamp_s, "earliest": c.earliest_s, "latest": c.latest_s}
            for c in result.ramp
        ],
    }
    if include_backtest:
        scores = result.backtest.scores if result.backtest else ()
        document["backtest"] = [
            {
                "model": s.model,
                "mae": _round(s.mae),
                "mase": _round(s.mase),
                "coverage_80": _round(s.coverage_80),
                "coverage_95": _round(s.coverage_95),
                "peak_error": _round(s.peak_error),
            }
            for s in scores
        ]
    return document


def _when(timestamp_s: float | None, timezone: str) -> str:
    if timestamp_s is None:
        return "not within horizon"
    return local_time(timestamp_s, timezone).strftime("%a %d %b %H:%M")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _summary_table(result: ForecastResult, options: ForecastOptions) -> Table:
    table = Table(title="Demand forecast", show_header=False, title_justify="left")
    table.add_column("", style="bold")
    table.add_column("")
    history = result.history
    table.add_row("model", result.model)
    table.add_row("why", result.reason)
    table.add_row(
        "history",
        f"{len(history)} points every {format_duration(history.step_seconds)}, "
        f"{_when(history.start_s, options.timezone)} to {_when(history.end_s, options.timezone)} ({options.timezone})",
    )
    if result.regularize_report is not None:
        table.add_row("cleaning", result.regularize_report.describe())
    table.add_row("intervals", f"from {result.calibration.samples} errors ({result.calibration.source})")
    peak = result.next_peak
    table.add_row(
        "next peak",
        f"{peak.value:.2f} {options.unit} at {_when(peak.timestamp_s, options.timezone)} "
        f"(80% upper {peak.upper:.2f}, 95% upper {peak.upper_95:.2f} {options.unit})",
    )
    ramp = next_morning_ramp(result.timestamps_s, result.mean, options.timezone)
    if ramp is not None:
        levels = f"half-way from {ramp.trough:.2f} to {ramp.peak:.2f} {options.unit}"
        table.add_row("morning ramp", f"{_when(ramp.timestamp_s, options.timezone)}: {levels}")
    return table


def _ramp_table(result: ForecastResult, options: ForecastOptions) -> Table:
    what = (
        "replica boundaries: the demand n replicas serve within the SLO"
        if options.replica_thresholds
        else ("threshold crossings")
    )
    table = Table(title=f"Ramp: upward {what} ({options.timezone})", title_justify="left")
    if options.replica_thresholds:
        table.add_column("needs", justify="right")
    table.add_column(f"threshold ({options.unit})", justify="right")
    table.add_column("expected (mean)")
    table.add_column("earliest (80% upper)")
    table.add_column("latest (80% lower)")
    for c in result.ramp:
        needs = [_replicas_above(c.threshold, options.thresholds)] if options.replica_thresholds else []
        table.add_row(
            *needs,
            f"{c.threshold:.3g}",
            _when(c.timestamp_s, options.timezone),
            _when(c.earliest_s, options.timezone),
            _when(c.latest_s, options.timezone),
        )
    return table


def _replicas_above(threshold: float, thresholds: tuple[float, ...]) -> str:
    """Above the demand n replicas serve, n + 1 are needed."""
    n = sorted(thresholds).index(threshold) + 1 if threshold in thresholds else None
    return "-" if n is None else f"{n + 1} replicas"


def _points_table(result: ForecastResult, options: ForecastOptions) -> Table:
    stride = max(1, round(3600.0 / result.step_seconds))
    stride *= max(1, -(-len(result.timestamps_s) // (stride * _MAX_TABLE_ROWS)))
    table = Table(title=f"Forecast every {format_duration(stride * result.step_seconds)}", title_justify="left")
    table.add_column(f"time ({options.timezone})")
    table.add_column(f"mean ({options.unit})", justify="right")
    table.add_column("80% interval", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_column("business hours")
    bands = result.bands
    period_s = stride * result.step_seconds
    on_the_hour = np.flatnonzero(np.mod(result.timestamps_s, period_s) == 0)
    first = int(on_the_hour[0]) if on_the_hour.size else stride - 1
    for i in range(first, len(result.timestamps_s), stride):
        ts = float(result.timestamps_s[i])
        table.add_row(
            _when(ts, options.timezone),
            f"{result.mean[i]:.2f}",
            f"{bands.lower_80[i]:.2f} - {bands.upper_80[i]:.2f}",
            f"{bands.lower_95[i]:.2f} - {bands.upper_95[i]:.2f}",
            "yes" if is_business_hours(ts, options.timezone) else "",
        )
    return table


def _backtest_table(result: ForecastResult, options: ForecastOptions) -> Table:
    report = result.backtest
    assert report is not None, "rendered only after a backtest"
    title = (
        f"Backtest: {format_duration(report.horizon_steps * report.step_seconds)} windows, "
        f"MASE against {report.baseline}, * picked"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("model", no_wrap=True)
    for name in (f"MAE ({options.unit})", "MASE", "80% cover", "95% cover", "peak error", "origins"):
        table.add_column(name, justify="right")
    for s in report.scores:
        picked = " *" if s.model == report.picked else ""
        table.add_row(
            s.model + picked,
            f"{s.mae:.3f}",
            f"{s.mase:.2f}",
            _percent(s.coverage_80),
            _percent(s.coverage_95),
            _percent(s.peak_error),
            str(s.origins),
        )
    return table


def _render_table(result: ForecastResult, options: ForecastOptions, console: Console, backtest: bool) -> None:
    console.print(_summary_table(result, options))
    if result.ramp:
        console.print(_ramp_table(result, options))
    console.print(_points_table(result, options))
    if backtest and result.backtest is None:
        console.print("Backtest: none, the history is too short (see why above).")
    elif backtest:
        console.print(_backtest_table(result, options))


def _render_png(result: ForecastResult, options: ForecastOptions, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    tz = local_time(0.0, options.timezone).tzinfo

    def dates(seconds: np.ndarray) -> np.ndarray:
        return np.asarray(mdates.date2num([datetime.fromtimestamp(float(s), tz) for s in seconds]))

    history = result.history.tail(round(3 * 86_400.0 / result.step_seconds))
    future, bands = dates(result.timestamps_s), result.bands
    fig, ax = plt.subplots(figsize=(12, 5), dpi=100)
    ax.plot(dates(history.timestamps_s), history.values, color="0.35", lw=1.0, label="history")
    ax.fill_between(future, bands.lower_95, bands.upper_95, color="tab:blue", alpha=0.15, label="95% interval")
    ax.fill_between(future, bands.lower_80, bands.upper_80, color="tab:blue", alpha=0.3, label="80% interval")
    ax.plot(future, result.mean, color="tab:blue", lw=1.6, label=f"forecast ({result.model})")
    peak = result.next_peak
    ax.plot(dates(np.array([peak.timestamp_s])), [peak.value], "v", color="tab:red", ms=9, label="next peak")
    ax.annotate(
        f"{peak.value:.1f}",
        (float(dates(np.array([peak.timestamp_s]))[0]), peak.value),
        xytext=(6, 6),
        textcoords="offset points",
        fontsize=8,
        color="tab:red",
    )
    for crossing in result.ramp:
        ax.axhline(crossing.threshold, color="tab:orange", lw=0.8, ls="--")
        if crossing.timestamp_s is not None:
            when = float(dates(np.array([crossing.timestamp_s]))[0])
            ax.axvline(when, color="tab:orange", lw=0.8)
            label = f"{crossing.threshold:g} at {_when(crossing.timestamp_s, options.timezone)[-5:]}"
            ax.annotate(
                label,
                (when, crossing.threshold),
                xytext=(-4, 4),
                textcoords="offset points",
                fontsize=8,
                color="tab:orange",
                ha="right",
            )
    ax.xaxis.set_major_locator(mdates.DayLocator(tz=tz))
    ax.xaxis.set_minor_locator(mdates.HourLocator(byhour=(6, 12, 18), tz=tz))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%a %d %b", tz=tz))
    ax.set_xlabel(f"time ({options.timezone})")
    ax.set_ylabel(options.unit)
    ax.set_ylim(bottom=0)
    subject = f"{options.subject}: " if options.subject else ""
    ax.set_title(f"{subject}demand forecast, {format_duration(options.horizon_seconds)} ahead ({result.model})")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


def render_forecast(
    result: ForecastResult,
    fmt: OutputFormat,
    out: Path | None,
    *,
    options: ForecastOptions | None = None,
    include_backtest: bool = False,
) -> None:
    """Write the result as a table or JSON (to `out`, or stdout) or as a PNG chart (to `out`, required)."""
    options = options or ForecastOptions()
    if fmt is OutputFormat.png:
        if out is None or is_stdout(out):
            raise ForecastInputError("--format png needs --out FILE.png")
        _render_png(result, options, out)
        typer.echo(f"wrote {out}", err=True)
        return
    out = None if is_stdout(out) else out
    if fmt is OutputFormat.json:
        text = json.dumps(forecast_to_json(result, include_backtest=include_backtest), indent=2)
        if out is None:
            sys.stdout.write(text + "\n")
        else:
            out.write_text(text + "\n", encoding="utf-8")
        return
    if out is None:
        _render_table(result, options, out_console(), include_backtest)
        return
    with out.open("w", encoding="utf-8") as handle:
        _render_table(result, options, out_console(handle), include_backtest)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _options(horizon: str, step: str | None, thresholds: list[float], timezone: str, unit: str) -> ForecastOptions:
    local_time(0.0, timezone)  # validates the timezone name
    return ForecastOptions(
        horizon_seconds=parse_duration(horizon),
        step_seconds=parse_duration(step) if step else None,
        thresholds=tuple(thresholds),
        timezone=timezone,
        unit=unit,
    )


def register(app: typer.Typer) -> None:
    """Add the `forecast` command to `app`."""

    @app.command("forecast")
    def forecast_command(
        plan_path: Annotated[
            Path | None, typer.Argument(metavar="[PLAN]", help="Live mode: the plan whose tier to forecast")
        ] = None,
        prometheus: Annotated[str | None, typer.Option("--prometheus", help="Live mode: query API base URL")] = None,
        tier: Annotated[str | None, typer.Option("--tier", help="Live mode: the tier (default: the only one)")] = None,
        history: Annotated[str, typer.Option("--history", help="Live mode: how much history to fit on")] = "28d",
        at: Annotated[
            str | None, typer.Option("--at", help="Live mode: forecast from this time (ISO 8601, Unix s)")
        ] = None,
        header: Headers = None,
        bearer_token_file: BearerFile = None,
        insecure: Insecure = False,
        csv_file: Annotated[Path | None, typer.Option("--csv", help="CSV of timestamp,value rows")] = None,
        time_column: Annotated[str | None, typer.Option(help="default: 'timestamp', else column 1")] = None,
        value_column: Annotated[str | None, typer.Option(help="default: 'value', else column 2")] = None,
        horizon: Annotated[str, typer.Option(help="how far ahead, e.g. 24h, 90m, 7d")] = "24h",
        step: Annotated[str | None, typer.Option(help="series step, e.g. 5m (default: inferred)")] = None,
        threshold: Annotated[
            list[float] | None, typer.Option(help="ramp threshold in value units; repeat for each replica step")
        ] = None,
        timezone: Annotated[
            str | None, typer.Option(help="IANA timezone for display and naive timestamps (live: the plan's)")
        ] = None,
        fmt: Annotated[OutputFormat, typer.Option("--format", help="table, json or png")] = OutputFormat.table,
        out: Annotated[Path | None, typer.Option(help="output file (required for png; '-' is stdout)")] = None,
        backtest: Annotated[bool, typer.Option("--backtest", help="also show the backtest of every model")] = False,
        unit: Annotated[str, typer.Option(help="unit label of the values")] = "req/s",
    ) -> None:
        """Forecast demand with 80%/95% intervals, the next peak and when thresholds will be crossed.

        Offline from a CSV (--csv FILE), or live: PLAN --prometheus URL [--tier T].
        """
        if (csv_file is None) == (plan_path is None or prometheus is None):
            raise _fail("give either --csv FILE, or PLAN with --prometheus URL (live mode)", EXIT_BAD_INPUT)
        try:
            if plan_path is not None and prometheus is not None:
                source = make_source(prometheus, header, bearer_token_file, insecure, 30.0)
                series, options = _live(
                    plan_path, source, tier, history, horizon, step, threshold, timezone, unit, parse_time(at)
                )
            else:
                assert csv_file is not None
                options = replace(_options(horizon, step, threshold or [], timezone or "UTC", unit),
                                  subject=csv_file.name)  # fmt: skip
                series = load_csv_series(
                    csv_file, time_column=time_column, value_column=value_column, timezone=options.timezone
                )
            result = run_forecast(series, options)
            render_forecast(result, fmt, out, options=options, include_backtest=backtest)
        except ForecastInputError as exc:
            raise _fail(str(exc), EXIT_BAD_INPUT) from None
        except ForecastError as exc:
            raise _fail(str(exc), EXIT_MODEL_FAILED) from None
        except PrometheusUnreachable as exc:
            raise _fail(f"cannot reach Prometheus at {exc.url}: {exc.reason}", EXIT_UNREACHABLE) from None
        except KeyError as exc:
            raise _fail(str(exc.args[0]), EXIT_BAD_INPUT) from None
        except OSError as exc:
            raise _fail(f"cannot write {out}: {exc}", EXIT_BAD_INPUT) from None


def _live(
    plan_path: Path, source: HttpPrometheusSource, tier_name: str | None, history: str, horizon: str, step: str | None,
    threshold: list[float] | None, timezone: str | None, unit: str, now: float | None,
) -> tuple[Series, ForecastOptions]:  # fmt: skip
    """The tier's demand history and the options: the plan's timezone, its replica steps as thresholds."""
    plan = load_plan_or_exit(plan_path)
    tier = pick_tier(plan, tier_name)
    step_seconds = parse_duration(step) if step else 300.0
    with source:
        demand = live_demand(source, plan, tier, parse_duration(history), step_seconds, now)
    if not np.isfinite(demand.series.values).any():
        raise ForecastInputError(
            f"no demand history for tier {tier.name} in the last {history}", source=demand.history.query
        )
    thresholds = list(threshold) if threshold else list(replica_thresholds(plan, tier))
    tz = timezone or plan.workload.business_hours.timezone
    options = _options(horizon, step or "5m", thresholds, tz, unit)
    return demand.series, replace(options, subject=f"plan {plan.name}, tier {tier.name}",
                                  replica_thresholds=not threshold)  # fmt: skip
