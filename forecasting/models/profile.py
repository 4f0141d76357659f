"""Robust daily profile with a local level, a damped trend and a decaying short-term offset (numpy only).

    z = log(y + c) on block means;  day d, slot j:  z[d, j] = level_d + s_j + r
    s_j      = median over the last `profile_days` of (z[d, j] - median_j z[d, j])   (the shape of a day)
    x        = z - s                                                                  (deseasonalized)
    forecast z(T+h) = level + trend x (phi + ... + phi^days(h)) + offset x rho^h + s_(slot of T+h)

- level: the median of x over the last day (a day's worth of slots, so no time of day is favoured);
- offset: the median of x over the last `offset_hours` minus the level, decaying with rho, the lag-one
  autocorrelation of x around its daily level, so the first hours start from where demand is now;
- trend: the Theil-Sen slope of the daily medians of x (robust to an outage day), used only when the
  days agree on its sign (|slope| > its median absolute deviation), damped by `trend_damping_per_day`.
  After a level shift (a step in the daily means at |t| >= `shift_t_min`, the test MSTL uses), the slope
  is refitted on the days since the step only: across it a step reads as a slope, and a 50% step three
  days ago extrapolated as +9%/day put the next peak 17% high.
Medians, not means, because real traffic has outages and spikes that a mean would copy into every day.
Real production demand changes by tens of percent from day to day and grows; a profile fitted over
a week and re-levelled on the last day follows that, where repeating yesterday copies its accidents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from forecasting.errors import ForecastInputError
from forecasting.models.base import PointForecast
from forecasting.models.level import significant_shift
from forecasting.models.resample import LogTransform, block_means, decimation_factor, upsample
from forecasting.series import FloatArray, RegularSeries, steps_per_day

__all__ = ["ProfileLevel", "ProfileLevelSettings"]


class ProfileLevelSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fit_step_minutes: float = Field(default=15.0, gt=0.0, description="fit on block means of about this step")
    profile_days: int = Field(default=7, ge=2, description="days whose median shape is the daily profile")
    offset_hours: float = Field(default=1.0, gt=0.0, description="window of the current offset from the level")
    trend_days: int = Field(default=7, ge=3, description="daily medians the trend is fitted on")
    trend_damping_per_day: float = Field(default=0.8, gt=0.0, le=1.0)
    shift_t_min: float = Field(default=5.0, gt=0.0, description="|t| of a level step that restarts the trend")
    min_history_days: float = Field(default=2.0, ge=2.0)


@dataclass(frozen=True, eq=False)
class _FittedProfile:
    name: str
    series: RegularSeries
    factor: int
    profile: FloatArray
    next_slot: int
    level: float
    offset: float
    rho: float
    trend_per_day: float
    damping_per_day: float
    transform: LogTransform
    last_block: float
    notes: tuple[str, ...] = ()

    def forecast(self, horizon_steps: int) -> PointForecast:
        coarse_steps = -(-horizon_steps // self.factor) + 1
        h = np.arange(1, coarse_steps + 1, dtype=np.float64)
        days_ahead = h / self.profile.size
        phi = self.damping_per_day
        damped = days_ahead if phi >= 1.0 else phi * (1.0 - phi**days_ahead) / (1.0 - phi)
        slots = (self.next_slot + np.arange(coarse_steps)) % self.profile.size
        z = self.level + self.trend_per_day * damped + self.offset * self.rho**h + self.profile[slots]
        mean = upsample(self.transform.inverse(z), self.factor, horizon_steps, self.last_block)
        return PointForecast(self.name, self.series.future_timestamps(horizon_steps), mean)


def _robust_trend(daily: FloatArray) -> float:
    """Theil-Sen slope of the daily medians, or 0 when it is within the scatter of the pairwise slopes."""
    if daily.size < 3:
        return 0.0
    i, j = np.triu_indices(daily.size, k=1)
    slopes = (daily[j] - daily[i]) / (j - i)
    slope = float(np.median(slopes))
    spread = float(np.median(np.abs(slopes - slope)))
    return slope if abs(slope) > spread else 0.0


def _lag_one_autocorrelation(values: FloatArray) -> float:
    centred = values - values.mean()
    denominator = float(np.dot(centred, centred))
    if denominator <= 0.0:
        return 0.0
    return float(np.clip(np.dot(centred[1:], centred[:-1]) / denominator, 0.0, 0.99))


class ProfileLevel:
    """A week's median daily shape on log block means, re-levelled on the last day, a damped robust trend."""

    name: ClassVar[str] = "profile_level"

    def __init__(self, settings: ProfileLevelSettings | None = None) -> None:
        self.settings = settings or ProfileLevelSettings()

    @property
    def label(self) -> str:
        return self.name

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return (1.0,)

    def min_history_steps(self, step_seconds: float) -> int:
        return max(2 * steps_per_day(step_seconds), round(self.settings.min_history_days * 86_400.0 / step_seconds))

    def fit(self, series: RegularSeries) -> _FittedProfile:
        day_fine = steps_per_day(series.step_seconds)
        if day_fine == 0 or len(series) < self.min_history_steps(series.step_seconds):
            raise ForecastInputError(
                f"{self.label} needs {self.min_history_steps(series.step_seconds)} points, has {len(series)}"
            )
        factor = decimation_factor(day_fine, round(1440.0 / self.settings.fit_step_minutes))
        day = day_fine // factor
        coarse = block_means(series.values, factor)
        transform = LogTransform.for_values(coarse)
        z = transform.forward(coarse)
        days = min(self.settings.profile_days, z.size // day)
        recent = z[z.size - days * day :].reshape(days, day)  # row d: one day, aligned to the end
        shape = np.median(recent - np.median(recent, axis=1, keepdims=True), axis=0)
        shape -= shape.mean()
        x = z - np.tile(shape, -(-z.size // day))[-z.size :]  # the last block is the profile's last slot
        trend_days = min(self.settings.trend_days, x.size // day)
        by_day = x[x.size - trend_days * day :].reshape(trend_days, day)
        daily = np.median(by_day, axis=1)
        shift = significant_shift(x[x.size - trend_days * day :], day, self.settings.shift_t_min)
        trend = _robust_trend(daily if shift is None else daily[-shift.days_ago :])
        level = float(daily[-1]) + 0.5 * trend  # the last day's median sits half a day before its end
        window = max(1, round(self.settings.offset_hours * 3600.0 / (series.step_seconds * factor)))
        offset = float(np.median(x[-window:])) - level
        return _FittedProfile(
            name=self.label,
            series=series,
            factor=factor,
            profile=shape,
            next_slot=0,  # rows end at the last block, so the next block is slot 0 of a new row
            level=level,
            offset=offset,
            rho=_lag_one_autocorrelation((by_day - daily[:, None]).ravel()),
            trend_per_day=trend,
            damping_per_day=self.settings.trend_damping_per_day,
            transform=transform,
            last_block=float(coarse[-1]),
        )
