"""The model plugin shape: a small class with validated settings, `fit(series) -> fitted`, `fitted.forecast(h)`.

A model only produces the mean path. Prediction intervals are not the model's business: they are
calibrated from the model's own backtest errors (see `forecasting.intervals`), which is honest for every
model alike and avoids trusting in-sample likelihood intervals that ignore model misspecification.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from forecasting.series import FloatArray, RegularSeries

__all__ = ["FittedModel", "ForecastModel", "PointForecast", "any_guessed"]


@dataclass(frozen=True, eq=False)
class PointForecast:
    """The mean path after the end of the training series; never negative.

    `guessed` marks steps the model had nothing of their kind to base on (the working-day naive's day off
    in a first week with none): what is fitted on a model's backtest errors leaves them out
    (`forecasting.backtest.BacktestRun.fitted_actual`)."""

    model: str
    timestamps_s: FloatArray
    mean: FloatArray
    guessed: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        mean = np.maximum(np.asarray(self.mean, dtype=np.float64), 0.0)
        mean.setflags(write=False)
        object.__setattr__(self, "mean", mean)


def any_guessed(masks: Iterable[NDArray[np.bool_] | None]) -> NDArray[np.bool_] | None:
    """Steps guessed in any of the masks (a path mixed from several is a guess where one of them is)."""
    known = [mask for mask in masks if mask is not None]
    return np.logical_or.reduce(known) if known else None


@runtime_checkable
class FittedModel(Protocol):
    """A model fitted to one series, able to forecast any number of steps after its end."""

    @property
    def name(self) -> str: ...

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings caught while fitting (e.g. a ConvergenceWarning), for the forecast's reason."""
        ...

    def forecast(self, horizon_steps: int) -> PointForecast: ...


@runtime_checkable
class ForecastModel(Protocol):
    """A forecasting method with its settings; `fit` must not mutate the model."""

    name: ClassVar[str]

    @property
    def label(self) -> str:
        """Name plus the settings that matter, for reasons and reports."""
        ...

    @property
    def seasons_days(self) -> tuple[float, ...]:
        """The seasonal periods the model represents, in days: (1.0,) daily, (1.0, 7.0) daily + weekly."""
        ...

    def min_history_steps(self, step_seconds: float) -> int:
        """Fewest points `fit` accepts at this step (e.g. two daily cycles)."""
        ...

    def fit(self, series: RegularSeries) -> FittedModel: ...
