"""`planwatch forecast` when it runs: the options parsed, the series read (a CSV, or a tier's demand history from
Prometheus), the forecast run and rendered. Imported only by the command's body (`monitor.cli.forecast`), so
`planwatch forecast --help` does not load the forecasting stack.

The core is three reusable steps, so the live mode only has to produce a `Series`:
series -> `run_forecast(series, options)` -> `render_forecast(result, ...)`. Bad input ends with exit
status 2 and one line naming the file, the line and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import typer

from forecasting import (
    ForecastError,
    ForecastInputError,
    ForecastResult,
    ForecastSettings,
    Series,
    WorkWeek,
    format_duration,
    local_time,
)
from forecasting import forecast as run_model_selection
from forecasting.csv_input import parse_csv_series
from monitor.cli.common import load_plan_or_exit, option_seconds
from monitor.cli.forecast_live import live_demand, pick_tier, replica_thresholds
from monitor.cli.forecast_render import ForecastOptions, render_forecast
from monitor.cli.prom_options import make_source, parse_time
from monitor.forecasts import work_week
from monitor.plan.model import Weekday
from monitor.source import HttpPrometheusSource, PrometheusUnreachable

__all__ = ["load_csv_series", "parse_workdays", "run_command", "run_forecast"]

EXIT_BAD_INPUT = 2
EXIT_MODEL_FAILED = 1
EXIT_UNREACHABLE = 3


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
        horizon_seconds=options.horizon_seconds,
        step_seconds=options.step_seconds,
        thresholds=options.thresholds,
        work_week=options.work_week,
    )
    return run_model_selection(series, settings)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _options(
    horizon_seconds: float, step_seconds: float | None, thresholds: list[float], timezone: str, unit: str
) -> ForecastOptions:
    local_time(0.0, timezone)  # validates the timezone name
    return ForecastOptions(
        horizon_seconds=horizon_seconds,
        step_seconds=step_seconds,
        thresholds=tuple(thresholds),
        timezone=timezone,
        unit=unit,
    )


def run_command(
    *, plan_path: Path | None, prometheus: str | None, tier: str | None, history: str, at: str | None,
    header: list[str] | None, bearer_token_file: Path | None, insecure: bool, csv_file: Path | None,
    time_column: str | None, value_column: str | None, horizon: str, step: str | None, threshold: list[float] | None,
    timezone: str | None, fmt: str, out: Path | None, backtest: bool, unit: str, workdays: str | None = None,
) -> None:  # fmt: skip
    """The command's body: read, forecast, render; every failure an exit status with one line."""
    if (csv_file is None) == (plan_path is None or prometheus is None):
        raise _fail("give either --csv FILE, or PLAN with --prometheus URL (live mode)", EXIT_BAD_INPUT)
    if workdays is not None and csv_file is None:
        raise _fail("--workdays is for --csv; live mode takes the plan's business days", EXIT_BAD_INPUT)
    # Every duration is checked before Prometheus is asked anything: a bad one exits 2 naming its option.
    windows = _Windows(option_seconds("--horizon", horizon), option_seconds("--step", step) if step else None,
                       option_seconds("--history", history))  # fmt: skip
    try:
        if plan_path is not None and prometheus is not None:
            source = make_source(prometheus, header, bearer_token_file, insecure, 30.0)
            series, options = _live(plan_path, source, tier, windows, threshold, timezone, unit, parse_time(at))
        else:
            assert csv_file is not None
            options = replace(_options(windows.horizon, windows.step, threshold or [], timezone or "UTC", unit),
                              subject=csv_file.name, name=csv_file.stem)  # fmt: skip
            if workdays is not None:
                options = replace(options, work_week=WorkWeek(options.timezone, parse_workdays(workdays)))
            series = load_csv_series(
                csv_file, time_column=time_column, value_column=value_column, timezone=options.timezone
            )
        result = run_forecast(series, options)
        render_forecast(result, fmt, out, options=options, include_backtest=backtest, series=series)
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


@dataclass(frozen=True)
class _Windows:
    """--horizon, --step (None: the series' own) and --history, in seconds."""

    horizon: float
    step: float | None
    history: float


def _live(
    plan_path: Path, source: HttpPrometheusSource, tier_name: str | None, windows: _Windows,
    threshold: list[float] | None, timezone: str | None, unit: str, now: float | None,
) -> tuple[Series, ForecastOptions]:  # fmt: skip
    """The tier's demand history and the options: the plan's timezone, its replica steps as thresholds."""
    plan = load_plan_or_exit(plan_path)
    tier = pick_tier(plan, tier_name)
    step_seconds = windows.step or 300.0
    with source:
        demand = live_demand(source, plan, tier, windows.history, step_seconds, now)
    if not np.isfinite(demand.series.values).any():
        raise ForecastInputError(
            f"no demand history for tier {tier.name} in the last {format_duration(windows.history)}",
            source=demand.history.query,
        )
    thresholds = list(threshold) if threshold else list(replica_thresholds(plan, tier))
    tz = timezone or plan.workload.business_hours.timezone
    options = _options(windows.horizon, step_seconds, thresholds, tz, unit)
    return demand.series, replace(options, subject=f"plan {plan.name}, tier {tier.name}", name=tier.name,
                                  replica_thresholds=not threshold, work_week=work_week(plan))  # fmt: skip


def parse_workdays(text: str) -> frozenset[int]:
    """`--workdays`: day names as a plan writes them (mon,tue,...), or a range (mon-fri)."""
    names = [day.value for day in Weekday]
    days: set[int] = set()
    for part in (p.strip().lower() for p in text.split(",")):
        first, _, last = part.partition("-")
        if first not in names or (last and last not in names):
            raise ForecastInputError(f"--workdays {text!r}: {part!r} is not a day or a range of days (e.g. mon-fri)")
        start, stop = names.index(first), names.index(last or first)
        days.update(range(start, stop + 1) if start <= stop else [*range(start, 7), *range(stop + 1)])
    return frozenset(days)
