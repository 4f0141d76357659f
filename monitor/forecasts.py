"""From a tier's demand history to the outlook advice reads: the forecast's mean and its 80% upper bound.

This is the only place that speaks the forecasting package's types, so a change there is a change here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from forecasting import (
    ForecastInputError,
    ForecastResult,
    ForecastSettings,
    MeanDriftSettings,
    ModelChoice,
    Series,
    WorkWeek,
    forecast,
)
from monitor.advice import DemandOutlook
from monitor.observe.observer import DemandHistory
from monitor.plan.model import Plan

__all__ = [
    "TierForecast",
    "forecast_tier",
    "held_to_plan_peak",
    "history_series",
    "known_points",
    "recent_rise",
    "tier_forecast",
    "work_week",
]


@dataclass(frozen=True)
class TierForecast:
    """One tier's refit: the outlook (mean, upper = 80% bound), the lower bound, the next peak, the model."""

    tier: str
    fitted_at: float
    model: str
    reason: str
    step_seconds: float
    outlook: DemandOutlook
    lower: tuple[float, ...]
    next_peak_at: float | None
    next_peak_rps: float | None
    next_peak_upper_rps: float | None
    history_points: int
    backtest_mase: float | None = None
    # What the backtest decided, for the tier's next refit to keep while it is fresh (not shown to anyone).
    choice: ModelChoice | None = field(default=None, compare=False, repr=False)

    def reaches_past(self, now: float) -> bool:
        """The outlook still has points after `now`: a failed refit may keep it (serve, the replay)."""
        return bool(self.outlook.timestamps) and self.outlook.timestamps[-1] > now


def history_series(history: DemandHistory) -> Series:
    """A tier's demand history as the forecaster's series, the one conversion: every step of the grid kept, a
    step without data NaN (a gap the forecaster fills, never a zero). A caller that wants only the known
    points drops the NaN itself, where it can be seen."""
    values = np.array(history.values, dtype=np.float64)  # None converts to NaN
    return Series(np.array(history.timestamps, dtype=np.float64), values, name=f"demand {history.tier}")


def known_points(series: Series) -> int:
    """How many steps of the series carry data (the rest are gaps)."""
    return int(np.count_nonzero(np.isfinite(series.values)))


def work_week(plan: Plan) -> WorkWeek | None:
    """The plan's business days in its timezone, as the forecaster's working week; None when the plan tells
    no day from another (no business day, or all seven: the daily naive is then that model already)."""
    hours = plan.workload.business_hours
    days = frozenset(day.day_index for day in hours.weekdays)
    return WorkWeek(hours.timezone, days) if 0 < len(days) < 7 else None


_RISE_WINDOW_S = 3600.0
_RISE_HORIZON_S = MeanDriftSettings().drift_damping_hours * 3600.0  # as far as the mean/drift carries a trend


def forecast_tier(
    history: DemandHistory,
    now: float,
    horizon_seconds: float,
    previous: TierForecast | None = None,
    week: WorkWeek | None = None,
    plan_peak_rps: float | None = None,
) -> TierForecast:
    """Forecast a tier's demand from its history (gaps are the forecaster's to fill, never zeros); a refit
    hands in the tier's `previous` forecast, whose model choice it keeps while that is fresh
    (`forecasting.choice`), and the plan's working `week` (`work_week`), so that a Monday can look like Friday.
    With the tier's `plan_peak_rps`, a forecast on under a day of history is held to it (`held_to_plan_peak`).

    Advice plans on the 80% upper bound: a ramp that comes early is the one that breaks the SLO.
    """
    series = history_series(history)
    known = known_points(series)
    if known < 2:
        raise ForecastInputError(f"{known} point(s) of demand history", source=f"tier {history.tier}")
    settings = ForecastSettings(horizon_seconds=horizon_seconds, step_seconds=history.step_seconds, work_week=week)
    result = forecast(series, settings, previous.choice if previous is not None else None)
    fitted = tier_forecast(history.tier, now, result, known)
    if plan_peak_rps is None or fitted.outlook.daily_cycle:
        return fitted
    return held_to_plan_peak(fitted, plan_peak_rps, float(np.nanmax(series.values)), recent_rise(series))


def recent_rise(series: Series) -> float:
    """How fast demand is rising now (requests/s per second, 0 when it is not): the least-squares slope of the
    last hour's known points."""
    times, values = series.timestamps_s, series.values
    last = (times > times[-1] - _RISE_WINDOW_S) & np.isfinite(values)
    if np.count_nonzero(last) < 3:
        return 0.0
    return max(0.0, float(np.polyfit(times[last] - times[-1], values[last], 1)[0]))


def held_to_plan_peak(fitted: TierForecast, plan_peak_rps: float, seen_rps: float, rise: float = 0.0) -> TierForecast:
    """A forecast that has not seen a daily cycle, its every value held to the plan's peak demand for the tier,
    or to the highest demand seen if that is higher, plus the rise demand is on now carried as far as the
    mean/drift carries a trend (`recent_rise`).

    Why: on hours of history the forecaster has only a mean and a drift, both fitted over the whole history,
    and a first day's history is mostly the step from the night to the day: the drift is that step read as a
    trend, and the intervals (the spread of the history around its mean) are the step's size, so the upper
    bound sat far above any demand the day had and the advice held a tier at its maximum all afternoon
    (fleetsim's profile: standard 24 replicas from 12:45 to 19:30 where 7 served every minute). The plan's
    peak is the hypothesis production has not yet had a day to confirm, the one the advice already holds
    at the first opening (`monitor.advice.recommend`); demand above it once seen raises the ceiling with it,
    and a ramp still climbing past it (a first morning above the plan) keeps the forecast's own path as far
    as the climb now reaches, so the schedule still brings replicas ahead of it."""
    outlook = fitted.outlook
    ahead = np.clip(np.asarray(outlook.timestamps, dtype=float) - fitted.fitted_at, 0.0, _RISE_HORIZON_S)
    ceiling = max(plan_peak_rps, seen_rps) + rise * ahead
    mean, upper = np.minimum(outlook.mean, ceiling), np.minimum(outlook.upper, ceiling)
    if not (np.any(mean < outlook.mean) or np.any(upper < outlook.upper)):
        return fitted
    held = replace(outlook, mean=tuple(mean.tolist()), upper=tuple(upper.tolist()))
    return replace(
        fitted,
        outlook=held,
        lower=tuple(np.minimum(fitted.lower, ceiling).tolist()),
        next_peak_rps=None if fitted.next_peak_rps is None else min(fitted.next_peak_rps, float(ceiling.max())),
        next_peak_upper_rps=None
        if fitted.next_peak_upper_rps is None
        else min(fitted.next_peak_upper_rps, float(ceiling.max())),
        reason=f"{fitted.reason}; no daily cycle seen yet: held to the plan's peak of {plan_peak_rps:.3g} req/s"
        + (f" (the highest seen, {seen_rps:.3g}, above it)" if seen_rps > plan_peak_rps else "")
        + (f", rising {rise * 3600.0:.3g} req/s an hour as demand is now" if rise > 0 else ""),
    )


def tier_forecast(tier: str, now: float, result: ForecastResult, points: int) -> TierForecast:
    """A forecast run as a tier's forecast: what the API serves and `planwatch forecast --format json` prints
    (`monitor.export.forecast_shape`), fitted at `now` on `points` known steps of history."""
    # the 80% rows of `result.points(80)`, read as whole arrays (a replay refits every tier 1,344 times)
    stamps, mean = np.asarray(result.timestamps_s, dtype=float), np.asarray(result.mean, dtype=float)
    outlook = DemandOutlook(
        timestamps=tuple(stamps.tolist()),
        mean=tuple(mean.tolist()),
        upper=tuple(np.asarray(result.bands.upper_80, dtype=float).tolist()),
        model=result.model,
        daily_cycle=result.history.duration_days >= 1.0,
    )
    backtest = result.backtest
    return TierForecast(
        tier=tier,
        fitted_at=now,
        model=result.model,
        reason=result.reason,
        step_seconds=result.step_seconds,
        outlook=outlook,
        lower=tuple(np.asarray(result.bands.lower_80, dtype=float).tolist()),
        next_peak_at=result.next_peak.timestamp_s,
        next_peak_rps=result.next_peak.value,
        next_peak_upper_rps=result.next_peak.upper,
        history_points=points,
        backtest_mase=backtest.score(backtest.picked).mase if backtest else None,
        choice=result.choice,
    )
