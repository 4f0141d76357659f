"""Series in, `ForecastResult` out: regularize, plan, choose the model (backtest, pick, calibrate:
`forecasting.choosing`, or keep the previous refit's choice), fit it, find the peak and the ramp.

Pure: no clock (the end of the history is "now"), no I/O. `forecast_many` runs several tiers, optionally in
worker processes (statsmodels holds the GIL, so threads would not help).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from forecasting.anchoring import HorizonAnchor, recent_level
from forecasting.calendar import WorkWeek
from forecasting.choice import ModelChoice, plan_signature
from forecasting.choosing import choose
from forecasting.day_ahead import spliced
from forecasting.errors import ForecastModelError
from forecasting.events import next_peak, ramp_crossings
from forecasting.models import FittedModel, ForecastModel, PointForecast, make_model
from forecasting.peaks import DailyPeakBound
from forecasting.regularizing import RegularizeReport, regularize
from forecasting.result import ForecastResult
from forecasting.selection import plan_selection
from forecasting.series import RegularSeries, Series

__all__ = ["ForecastSettings", "forecast", "forecast_many"]


class ForecastSettings(BaseModel):
    """What to forecast and how hard to look for the model; durations in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    horizon_seconds: float = Field(default=86_400.0, gt=0.0)
    step_seconds: float | None = Field(default=None, gt=0.0, description="None: inferred from the data")
    thresholds: tuple[float, ...] = Field(default=(), description="ramp thresholds, e.g. replica steps")
    max_origins: int = Field(default=3, ge=1, le=10, description="same-time-of-week backtest origins")
    calibration_origins: int = Field(
        default=12, ge=1, le=28, description="more origins, spaced as below: model choice and intervals"
    )
    calibration_spacing_seconds: float = Field(
        default=6 * 3600.0, gt=0.0, description="between calibration origins (windows overlap: more peaks seen)"
    )
    max_backtest_days: float = Field(default=7.0, gt=0.0, description="cap on each backtest window")
    models: tuple[str, ...] | None = Field(default=None, description="model labels; None: chosen by history")
    peak_window_seconds: float = Field(default=86_400.0, gt=0.0, description="next peak is searched here")
    max_interpolate_seconds: float = Field(default=1800.0, ge=0.0, description="longer gaps: seasonal fill")
    fallback_spread_inflation: float = Field(
        default=2.0, ge=1.0, description="widening of the un-backtested intervals of the short-history models"
    )
    work_week: WorkWeek | None = Field(
        default=None, description="the plan's business days: a Monday can copy Friday (seasonal_naive_workday)"
    )


def _regular(
    series: Series | RegularSeries, settings: ForecastSettings
) -> tuple[RegularSeries, RegularizeReport | None, NDArray[np.bool_] | None]:
    """The regular history, what regularize did, and which steps it filled (None: all observed)."""
    if isinstance(series, RegularSeries):
        return series, None, None
    done = regularize(series, settings.step_seconds, max_interpolate_seconds=settings.max_interpolate_seconds)
    return done.series, done.report, done.filled


def _fit_final(model: ForecastModel, history: RegularSeries) -> FittedModel:
    try:
        return model.fit(history)
    except ForecastModelError:
        raise
    except (ValueError, np.linalg.LinAlgError) as exc:
        raise ForecastModelError(model.label, str(exc)) from exc


def _anchored_path(point: PointForecast, anchor: HorizonAnchor, level: float) -> PointForecast:
    return PointForecast(point.model, point.timestamps_s, anchor.apply(point.mean, level))


def forecast(
    series: Series | RegularSeries, settings: ForecastSettings | None = None, previous: ModelChoice | None = None
) -> ForecastResult:
    """Forecast `series` over `settings.horizon_seconds` with the model that backtests best.

    `previous`, the choice of an earlier forecast of the same series (`ForecastResult.choice`), is kept
    instead of a new backtest while `ModelChoice.reusable` says so (a service refitting every 15 minutes)."""
    settings = settings or ForecastSettings()
    history, report, filled = _regular(series, settings)
    step = history.step_seconds
    horizon_steps = max(1, math.ceil(settings.horizon_seconds / step))
    plan = plan_selection(
        len(history),
        step,
        horizon_steps,
        max_origins=settings.max_origins,
        max_backtest_days=settings.max_backtest_days,
        model_labels=settings.models,
        every_steps=max(1, round(settings.calibration_spacing_seconds / step)),
        every_count=settings.calibration_origins,
        work_week=settings.work_week,
    )
    signature = plan_signature(plan, step)
    spacing = settings.calibration_spacing_seconds
    if previous is not None and previous.reusable(history.end_s, signature, spacing):
        selection = previous
    else:
        chosen = choose(
            history,
            filled,
            plan,
            peak_window_seconds=settings.peak_window_seconds,
            fallback_spread_inflation=settings.fallback_spread_inflation,
        )
        selection = replace(chosen, made_at_s=history.end_s, signature=signature)
    fitted = _fit_final(selection.model, history)
    level = recent_level(history.values, step)
    point = _anchored_path(fitted.forecast(horizon_steps), selection.anchor(selection.model.label, step), level)
    if selection.far is not None:
        far = _fit_final(selection.far, history)
        later = _anchored_path(far.forecast(horizon_steps), selection.anchor(selection.far.label, step), level)
        point = PointForecast(selection.label, point.timestamps_s, spliced(point.mean, later.mean, step))
    reason = selection.describe(history.end_s, spacing)
    reason += f"; model notes: {'; '.join(fitted.notes)}" if fitted.notes else ""
    bands = selection.calibration.bands(point.mean)
    peak_window = max(1, round(settings.peak_window_seconds / step))
    peak = next_peak(point.timestamps_s, point.mean, bands.upper_80, bands.upper_95, peak_window)
    actual = history.values if filled is None else np.where(filled, np.nan, history.values)
    daily = DailyPeakBound.fit(history.values, actual, step, min(peak_window, horizon_steps))
    if daily is not None:
        upper_80, upper_95 = daily.upper(history.values, step)
        peak = replace(peak, upper=max(upper_80, peak.value), upper_95=max(upper_95, peak.value))
        reason += f"; {daily.describe()}"
    elif selection.peak is not None:
        reference = point if selection.peak.reference == selection.model.label else None
        if reference is None:
            reference_model = make_model(selection.peak.reference, settings.work_week)
            path = _fit_final(reference_model, history).forecast(horizon_steps)
            reference = _anchored_path(path, selection.anchor(selection.peak.reference, step), level)
        upper_80, upper_95 = selection.peak.upper(float(np.max(reference.mean[:peak_window])))
        peak = replace(peak, upper=max(upper_80, peak.value), upper_95=max(upper_95, peak.value))
    ramp = ramp_crossings(
        point.timestamps_s,
        point.mean,
        bands.lower_80,
        bands.upper_80,
        settings.thresholds,
        last_timestamp_s=history.end_s,
        last_value=float(history.values[-1]),
    )
    return ForecastResult(
        selection.label,
        reason,
        history,
        point.timestamps_s,
        point.mean,
        bands,
        peak,
        ramp,
        selection.calibration,
        selection.report,
        report,
        selection,
    )


def forecast_many(
    series_by_name: Mapping[str, Series | RegularSeries], settings: ForecastSettings | None = None, *, workers: int = 1
) -> dict[str, ForecastResult]:
    """`forecast` for several series (tiers); `workers` > 1 spreads them over that many processes."""
    names = list(series_by_name)
    if workers <= 1 or len(names) <= 1:
        return {name: forecast(series_by_name[name], settings) for name in names}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(forecast, series_by_name[name], settings) for name in names}
        return {name: futures[name].result() for name in names}
