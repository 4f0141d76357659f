"""`planwatch forecast`'s output: tables, a PNG chart, or the JSON document, whose forecast is the API's own
shape (`monitor.shapes.TierForecast`, built by `monitor.export.forecast_shape`) plus the ramp and, on request,
the backtest (`monitor.shapes.ForecastDocument`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from forecasting import (
    ForecastInputError,
    ForecastResult,
    Series,
    WorkWeek,
    format_duration,
    is_business_hours,
    local_time,
    next_morning_ramp,
)
from monitor import shapes
from monitor.cli.common import is_stdout, out_console
from monitor.cli.tables import print_table
from monitor.export import forecast_shape, without_nan
from monitor.forecasts import known_points, tier_forecast

__all__ = ["ForecastOptions", "forecast_to_json", "render_forecast"]

_MAX_TABLE_ROWS = 48


@dataclass(frozen=True)
class ForecastOptions:
    """What the command line asked for, already parsed; the live mode builds the same thing."""

    horizon_seconds: float = 86_400.0
    step_seconds: float | None = None
    thresholds: tuple[float, ...] = ()
    timezone: str = "UTC"
    unit: str = "req/s"
    subject: str = ""  # what is forecast, for titles: "plan codebase-assistant, tier standard" or the CSV's name
    name: str = ""  # the JSON's `name`, as the API's: the tier, or the CSV file's name without its suffix
    replica_thresholds: bool = False  # the thresholds are the demand n = 1, 2, ... replicas serve (live mode)
    work_week: WorkWeek | None = None  # the days demand follows as working days (live: the plan's business days)


def forecast_to_json(result: ForecastResult, series: Series, options: ForecastOptions, *,
                     include_backtest: bool = False) -> dict[str, Any]:  # fmt: skip
    """The JSON document: the forecast as the API serves it (`/v1/forecast`'s tier entry, fitted at the end of
    the history), then the ramp and, with `include_backtest`, every model's backtest scores."""
    fitted = tier_forecast(options.name or series.name, result.history.end_s, result, known_points(series))
    ramp = [shapes.RampCrossing(threshold=c.threshold, timestamp=c.timestamp_s, earliest=c.earliest_s,
                                latest=c.latest_s) for c in result.ramp]  # fmt: skip
    scores = result.backtest.scores if result.backtest else ()
    backtest = [
        shapes.BacktestScore(model=b.model, mae=b.mae, mase=b.mase, coverage_80=b.coverage_80,
                             coverage_95=b.coverage_95, peak_error=b.peak_error)
        for b in scores
    ]  # fmt: skip
    document = shapes.ForecastDocument(**dict(forecast_shape(fitted)), ramp=ramp, backtest=backtest)
    plain = shapes.dump(document, exclude=None if include_backtest else {"backtest"})
    return dict(without_nan(plain))  # a MASE against a perfect baseline is inf: null, as in every planwatch JSON


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
    print_table(console, _summary_table(result, options))
    if result.ramp:
        print_table(console, _ramp_table(result, options))
    print_table(console, _points_table(result, options))
    if backtest and result.backtest is None:
        console.print("Backtest: none, the history is too short (see why above).")
    elif backtest:
        print_table(console, _backtest_table(result, options))


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
    fmt: str,
    out: Path | None,
    *,
    series: Series,
    options: ForecastOptions | None = None,
    include_backtest: bool = False,
) -> None:
    """Write the result as a table or JSON (to `out`, or stdout) or as a PNG chart (to `out`, required);
    `fmt` is table, json or png (`monitor.cli.forecast.OutputFormat`)."""
    options = options or ForecastOptions()
    if fmt == "png":
        if out is None or is_stdout(out):
            raise ForecastInputError("--format png needs --out FILE.png")
        _render_png(result, options, out)
        typer.echo(f"wrote {out}", err=True)
        return
    out = None if is_stdout(out) else out
    if fmt == "json":
        text = json.dumps(forecast_to_json(result, series, options, include_backtest=include_backtest), indent=2)
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
