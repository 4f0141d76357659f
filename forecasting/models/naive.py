"""Baselines: seasonal naive (daily, weekly, working-day) and, for under a day of history, a mean/drift model.

Seasonal naive repeats the last season: y(T + h) = y(T + h - m x ceil(h / m)), m the period in steps.
It is the yardstick of the backtest (MASE divides by its error) and the model of record when history is
too short for anything fitted. The working-day naive repeats the last day of the same kind (a Monday
copies Friday), given the plan's working week.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from forecasting.calendar import WorkWeek
from forecasting.errors import ForecastInputError
from forecasting.models.base import PointForecast
from forecasting.series import SECONDS_PER_DAY, FloatArray, RegularSeries, steps_per_day, steps_per_week

__all__ = ["MeanDrift", "MeanDriftSettings", "SeasonalNaive", "SeasonalNaiveSettings", "WorkdayNaive"]


class SeasonalNaiveSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    season: Literal["daily", "weekly"] = "daily"
    min_history_days: float | None = Field(
        default=None, ge=0.0, description="history needed to fit; None: 1 day (daily), 14 days (weekly)"
    )


@dataclass(frozen=True, eq=False)
class _FittedSeasonalNaive:
    name: str
    last_season: FloatArray
    series: RegularSeries
    notes: tuple[str, ...] = ()

    def forecast(self, horizon_steps: int) -> PointForecast:
        period = self.last_season.size
        mean = self.last_season[np.arange(horizon_steps) % period]
        return PointForecast(self.name, self.series.future_timestamps(horizon_steps), mean)


class SeasonalNaive:
    """Repeat the last day (or week) of history."""

    name: ClassVar[str] = "seasonal_naive"

    def __init__(self, settings: SeasonalNaiveSettings | None = None) -> None:
        self.settings = settings or SeasonalNaiveSettings()

    @classmethod
    def daily(cls) -> SeasonalNaive:
        return cls(SeasonalNaiveSettings(season="daily"))

    @classmethod
    def weekly(cls) -> SeasonalNaive:
        return cls(SeasonalNaiveSettings(season="weekly"))

    @property
    def label(self) -> str:
        return f"seasonal_naive_{self.settings.season}"

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return (1.0,) if self.settings.season == "daily" else (7.0,)

    def period_steps(self, step_seconds: float) -> int:
        return (steps_per_day if self.settings.season == "daily" else steps_per_week)(step_seconds)

    def min_history_steps(self, step_seconds: float) -> int:
        period = self.period_steps(step_seconds)
        days = self.settings.min_history_days
        if days is None:
            days = 1.0 if self.settings.season == "daily" else 14.0
        wanted = round(days * SECONDS_PER_DAY / step_seconds)
        return max(period, wanted) if period else 0

    def fit(self, series: RegularSeries) -> _FittedSeasonalNaive:
        period = self.period_steps(series.step_seconds)
        if period == 0 or len(series) < period:
            raise ForecastInputError(
                f"{self.label} needs one {self.settings.season} season ({period} steps), history has {len(series)}"
            )
        return _FittedSeasonalNaive(self.label, series.values[-period:].copy(), series)


@dataclass(frozen=True, eq=False)
class _FittedWorkdayNaive:
    name: str
    series: RegularSeries
    work_week: WorkWeek
    notes: tuple[str, ...] = ()

    def forecast(self, horizon_steps: int) -> PointForecast:
        values, period = self.series.values, steps_per_day(self.series.step_seconds)
        n = values.size
        ahead = np.arange(1, horizon_steps + 1)
        # Lags in whole days, per step: the daily naive's (the last day that is history) and up to six more.
        first = -(-ahead // period)
        lags = first[:, None] + np.arange(7)[None, :]
        source = n - 1 + ahead[:, None] - lags * period
        timestamps = self.series.future_timestamps(horizon_steps)
        working = self.work_week.working(np.concatenate((self.series.timestamps_s, timestamps)))
        target = working[n:][:, None]
        same = (source >= 0) & (working[np.maximum(source, 0)] == target)
        # The nearest day of the same kind; none in the history (a first week without a weekend): the last day.
        found = same.any(axis=1)
        pick = np.where(found, np.argmax(same, axis=1), 0)
        chosen = source[np.arange(horizon_steps), pick]
        return PointForecast(self.name, timestamps, values[chosen], None if found.all() else ~found)


class WorkdayNaive:
    """Repeat the last day of the same kind: a working day copies the last working day (Monday: Friday), a
    day off the last day off, at the same clock time; where the history has no day of that kind yet, the
    last day (the daily naive).

    It knows the week from the plan, not from the data, so it is right from the first week of history,
    when no weekly season can be fitted yet (the weekly naive needs two weeks).
    """

    name: ClassVar[str] = "seasonal_naive_workday"

    def __init__(self, work_week: WorkWeek) -> None:
        self.work_week = work_week

    @property
    def label(self) -> str:
        return self.name

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return (1.0, 7.0)

    def min_history_steps(self, step_seconds: float) -> int:
        return steps_per_day(step_seconds)

    def fit(self, series: RegularSeries) -> _FittedWorkdayNaive:
        period = steps_per_day(series.step_seconds)
        if period == 0 or len(series) < period:
            raise ForecastInputError(f"{self.name} needs one day ({period} steps), history has {len(series)}")
        return _FittedWorkdayNaive(self.name, series, self.work_week)


class MeanDriftSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    level_window_hours: float = Field(default=1.0, gt=0.0, description="the level is the mean of this window")
    drift_damping_hours: float = Field(
        default=3.0, gt=0.0, description="the drift adds at most this many hours of the fitted slope"
    )


@dataclass(frozen=True, eq=False)
class _FittedMeanDrift:
    name: str
    level: float
    slope_per_step: float
    max_drift_steps: float
    series: RegularSeries
    notes: tuple[str, ...] = ()

    def forecast(self, horizon_steps: int) -> PointForecast:
        steps = np.arange(1, horizon_steps + 1, dtype=np.float64)
        drift = self.slope_per_step * np.minimum(steps, self.max_drift_steps)
        return PointForecast(self.name, self.series.future_timestamps(horizon_steps), self.level + drift)


class MeanDrift:
    """For under a day of history: the recent mean plus a capped linear drift.

    level = mean of the last `level_window_hours`; slope = least-squares slope over the whole history;
    forecast(h) = level + slope x min(h, drift cap). The cap stops a morning ramp seen in a few hours of
    history from being extrapolated to the sky; the intervals around it are wide (see the pipeline).
    """

    name: ClassVar[str] = "mean_drift"

    def __init__(self, settings: MeanDriftSettings | None = None) -> None:
        self.settings = settings or MeanDriftSettings()

    @property
    def label(self) -> str:
        return self.name

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return ()

    def min_history_steps(self, step_seconds: float) -> int:
        return 2

    def fit(self, series: RegularSeries) -> _FittedMeanDrift:
        if len(series) < 2:
            raise ForecastInputError(f"{self.name} needs at least 2 points, history has {len(series)}")
        step = series.step_seconds
        window = max(1, round(self.settings.level_window_hours * 3600.0 / step))
        level = float(np.mean(series.values[-window:]))
        x = np.arange(len(series), dtype=np.float64)
        slope = float(np.polyfit(x, series.values, 1)[0])
        cap = self.settings.drift_damping_hours * 3600.0 / step
        return _FittedMeanDrift(self.name, level, slope, cap, series)
