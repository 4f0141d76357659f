"""A flat day ahead: the median of the last day, at every step.

For demand with no daily shape that repeats (ServeGen's production series: its hourly means relative to
each day's mean move by 30-40%, at a different hour every day), yesterday's shape copied forward adds
yesterday's noise to the forecast; a constant at the day's median does not (ServeGen, next day: MASE 0.85
of the daily naive's). It is a day-ahead candidate only (`forecasting.horizons`): its first hour is where
a series' short-term dynamics matter, and the model picked for the first hour keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from forecasting.errors import ForecastInputError
from forecasting.models.base import PointForecast
from forecasting.series import RegularSeries, steps_per_day

__all__ = ["DayMedian"]


@dataclass(frozen=True, eq=False)
class _FittedDayMedian:
    name: str
    level: float
    series: RegularSeries
    notes: tuple[str, ...] = ()

    def forecast(self, horizon_steps: int) -> PointForecast:
        mean = np.full(horizon_steps, self.level)
        return PointForecast(self.name, self.series.future_timestamps(horizon_steps), mean)


class DayMedian:
    """The median of the last day of history (its finite values), forecast flat."""

    name: ClassVar[str] = "day_median"

    @property
    def label(self) -> str:
        return self.name

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return ()

    def min_history_steps(self, step_seconds: float) -> int:
        return steps_per_day(step_seconds)

    def fit(self, series: RegularSeries) -> _FittedDayMedian:
        period = steps_per_day(series.step_seconds)
        last = series.values[-period:] if period else series.values[:0]
        finite = last[np.isfinite(last)]
        if period == 0 or len(series) < period or finite.size == 0:
            raise ForecastInputError(f"{self.name} needs one day ({period} steps), history has {len(series)}")
        return _FittedDayMedian(self.name, float(np.median(finite)), series)
