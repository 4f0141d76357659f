"""The mean of several models' forecasts: a combination is steadier than any one pick.

On a few backtest windows the best model is picked partly by luck, and real demand (outages, a client
arriving, a level that grows) fools each model on different days. The mean of two models that fail in
different ways, Holt-Winters (weights fitted, follows the level fast) and the robust profile (medians,
ignores accidents), errs less on average than either (the forecast-combination result of Bates and
Granger, and of the M competitions). It is one more candidate: the backtest still decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from forecasting.models.base import FittedModel, ForecastModel, PointForecast, any_guessed
from forecasting.series import RegularSeries

__all__ = ["Combination"]


@dataclass(frozen=True, eq=False)
class _FittedCombination:
    name: str
    parts: tuple[FittedModel, ...]
    notes: tuple[str, ...]

    def forecast(self, horizon_steps: int) -> PointForecast:
        paths = [part.forecast(horizon_steps) for part in self.parts]
        mean = np.mean([path.mean for path in paths], axis=0)
        return PointForecast(self.name, paths[0].timestamps_s, mean, any_guessed(path.guessed for path in paths))


class Combination:
    """Equal-weight mean of `parts` (equal weights: estimated weights are noisy on a few windows)."""

    name: ClassVar[str] = "combined"

    def __init__(self, parts: tuple[ForecastModel, ...], label: str = "combined") -> None:
        if not parts:
            raise ValueError("a combination needs at least one model")
        self.parts = parts
        self._label = label

    @property
    def label(self) -> str:
        return self._label

    @property
    def seasons_days(self) -> tuple[float, ...]:
        return tuple(sorted({days for part in self.parts for days in part.seasons_days}))

    def min_history_steps(self, step_seconds: float) -> int:
        return max(part.min_history_steps(step_seconds) for part in self.parts)

    def fit(self, series: RegularSeries) -> _FittedCombination:
        fitted = tuple(part.fit(series) for part in self.parts)
        notes = tuple(
            f"{part.label}: {note}" for part, done in zip(self.parts, fitted, strict=True) for note in done.notes
        )
        return _FittedCombination(self.label, fitted, notes)
