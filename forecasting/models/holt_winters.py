"""Holt-Winters exponential smoothing with daily seasonality (statsmodels ExponentialSmoothing).

    z = log(y + c);  level l, optional damped trend b, daily seasonal s (period m = one day of blocks)
    z(T+h) = l_T + (phi + ... + phi^h) b_T + s_{T+h-m}

It adapts fast (the smoothing weights are fitted), which helps after level shifts, but with only a daily
season it cannot know that Saturday is quiet: on weekly traffic MSTL usually wins the backtest. Fitted on
15-minute block means of the last two weeks with heuristic initial states: estimating 96 initial seasonal
states by likelihood takes seconds and is not more accurate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from statsmodels.tsa.holtwinters import ExponentialSmoothing, HoltWintersResults

from forecasting.errors import ForecastInputError, ForecastModelError
from forecasting.models._warnings import collect_warnings
from forecasting.models.base import PointForecast
from forecasting.models.resample import LogTransform, block_means, decimation_factor, upsample
from forecasting.series import SECONDS_PER_DAY, RegularSeries, steps_per_day

__all__ = ["HoltWinters", "HoltWintersSettings"]


class HoltWintersSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    damped_trend: bool = Field(default=False, description="add a damped additive trend (4x slower fit)")
    fit_step_minutes: float = Field(default=15.0, gt=0.0)
    fit_window_days: float = Field(default=14.0, gt=0.0)
    log_transform: bool = True
    min_history_days: float = Field(default=2.0, ge=2.0, description="two daily cycles at least")


@dataclass(frozen=True, eq=False)
class _FittedHoltWinters:
    name: str
    series: RegularSeries
    factor: int
    results: HoltWintersResults
    transform: LogTransform | None
    last_block: float
    notes: tuple[str, ...] = field(default=())

    def forecast(self, horizon_steps: int) -> PointForecast:
        coarse_steps = -(-horizon_steps // self.factor) + 1
        ignored: list[str] = []  # forecasting replays the fitted recursion; fit-time warnings are in `notes`
        with collect_warnings(ignored):
            z = np.asarray(self.results.forecast(coarse_steps), dtype=np.float64)
        if not np.all(np.isfinite(z)):
            raise ForecastModelError(self.name, "forecast is not finite")
        coarse = self.transform.inverse(z) if self.transform else np.maximum(z, 0.0)
        mean = upsample(coarse, self.factor, horizon_steps, self.last_block)
        return PointForecast(self.name, self.series.future_timestamps(horizon_steps), mean)


class HoltWinters:
    """Additive Holt-Winters on log block means, daily season."""

    name: ClassVar[str] = "holt_winters"

    def __init__(self, settings: HoltWintersSettings | None = None) -> None:
        self.settings = settings or HoltWintersSettings()

    @property
    def label(self) -> str:
        return "holt_winters_damped" if self.settings.damped_trend else "holt_winters"

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return (1.0,)

    def min_history_steps(self, step_seconds: float) -> int:
        day = steps_per_day(step_seconds)
        return max(2 * day, round(self.settings.min_history_days * SECONDS_PER_DAY / step_seconds))

    def fit(self, series: RegularSeries) -> _FittedHoltWinters:
        day_fine = steps_per_day(series.step_seconds)
        if day_fine == 0 or len(series) < self.min_history_steps(series.step_seconds):
            raise ForecastInputError(
                f"{self.label} needs {self.min_history_steps(series.step_seconds)} points, has {len(series)}"
            )
        factor = decimation_factor(day_fine, round(1440.0 / self.settings.fit_step_minutes))
        window = series.tail(round(self.settings.fit_window_days * SECONDS_PER_DAY / series.step_seconds))
        coarse = block_means(window.values, factor)
        transform = LogTransform.for_values(coarse) if self.settings.log_transform else None
        z = transform.forward(coarse) if transform else coarse
        damped = self.settings.damped_trend
        notes: list[str] = []
        try:
            with collect_warnings(notes):
                model = ExponentialSmoothing(
                    z,
                    trend="add" if damped else None,
                    damped_trend=damped,
                    seasonal="add",
                    seasonal_periods=day_fine // factor,
                    initialization_method="heuristic",
                )
                # No brute-force grid for the starting smoothing weights: from statsmodels' default start the
                # optimizer reaches the same minimum (ServeGen and NAB, 90 windows each: SSE within 0.02%, log
                # forecasts within 1e-5 at the median), 3.5x faster (12x with the damped trend).
                results = model.fit(use_brute=False)
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise ForecastModelError(self.label, f"fit failed: {exc}") from exc
        return _FittedHoltWinters(self.label, series, factor, results, transform, float(coarse[-1]), tuple(notes))
