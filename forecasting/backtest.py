"""Rolling-origin backtest: refit each model on the history as it was at a few recent origins, forecast
the horizon, and compare with what happened.

Metrics, per model, over all origins and horizon steps:
- MAE  = mean |actual - forecast|
- MASE = MAE / MAE of the baseline seasonal naive on the same windows (so the baseline scores exactly 1;
  below 1 means better than repeating last week, or last day when less than two weeks exist)
- coverage_80 / coverage_95: share of actuals inside the bands, each origin's bands calibrated on the
  *other* origins' errors only (leave-one-origin-out), so the check is out of sample; the errors' scale
  by level (`ErrorScale`), a smooth nuisance, is the one all origins give (fitted once, not per origin)
- peak_error = mean over origins of |max forecast - max actual| / max actual over the first day
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from forecasting.anchoring import recent_level
from forecasting.errors import ForecastModelError
from forecasting.intervals import IntervalCalibration
from forecasting.models.base import ForecastModel
from forecasting.series import FloatArray, RegularSeries

__all__ = [
    "BacktestReport",
    "BacktestRun",
    "ModelScore",
    "mean_absolute_error",
    "nan_row_max",
    "run_backtest",
    "score_run",
    "window_mae",
]


@dataclass(frozen=True)
class ModelScore:
    """One model's backtest. mae, mase and peak_error come from the windows all models share; the
    coverages from `origins` windows (more for the picked model, whose intervals use more)."""

    model: str
    mae: float
    mase: float
    coverage_80: float | None
    coverage_95: float | None
    peak_error: float | None
    origins: int


@dataclass(frozen=True, eq=False)
class BacktestRun:
    """(origins x horizon) actuals and forecasts of one model; `levels`: the recent level at each origin."""

    model: str
    actual: FloatArray
    forecast: FloatArray
    levels: FloatArray
    guessed: NDArray[np.bool_] | None = None  # steps the model guessed (`PointForecast.guessed`)

    @property
    def fitted_actual(self) -> FloatArray:
        """The actuals with the guessed steps unseen (NaN): what anchors, intervals and peak bounds are fitted
        on. A guess (Saturday copied from Friday in a first week without a weekend) is scored, as it is what
        the model did, but its errors say nothing of the model's paths once the history has a day of that
        kind, and what is fitted on them is applied at every later refit: on fleetsim's profile, whose
        weekends are quiet, the first Saturday's copied day made the flat level win the first hour of the
        second week's morning ramps and set their 80% bound near twice the ramp (tests/forecasting)."""
        if self.guessed is None:
            return self.actual
        return np.where(self.guessed, np.nan, self.actual)

    def with_forecast(self, forecast: FloatArray) -> BacktestRun:
        """The same windows with another forecast (the anchored one)."""
        return BacktestRun(self.model, self.actual, forecast, self.levels, self.guessed)


@dataclass(frozen=True)
class BacktestReport:
    baseline: str
    horizon_steps: int
    step_seconds: float
    origins_s: tuple[float, ...]
    scores: tuple[ModelScore, ...]
    picked: str
    notes: tuple[str, ...] = ()

    def score(self, model: str) -> ModelScore:
        return next(s for s in self.scores if s.model == model)


def run_backtest(
    series: RegularSeries,
    model: ForecastModel,
    origins: Sequence[int],
    horizon_steps: int,
    filled: NDArray[np.bool_] | None = None,
) -> BacktestRun:
    """Fit on `series.head(origin)` and forecast `horizon_steps`, for each origin (an index).

    Steps in `filled` (gaps regularize filled) are NaN in `actual`: a model is not scored against values
    the filling invented (a gap filled from the day before would reward repeating the day before). The
    recent level at each origin is what the short-horizon anchor (`forecasting.anchoring`) blends toward.
    """
    values = series.values if filled is None else np.where(filled, np.nan, series.values)
    actual = np.stack([values[o : o + horizon_steps] for o in origins])
    paths = [model.fit(series.head(o)).forecast(horizon_steps) for o in origins]
    forecast = np.stack([path.mean for path in paths])
    if not np.all(np.isfinite(forecast)):
        raise ForecastModelError(model.label, "backtest forecast is not finite")
    levels = np.array([recent_level(series.values[:o], series.step_seconds) for o in origins])
    guessed = None
    if any(path.guessed is not None for path in paths):
        blank = np.zeros(horizon_steps, dtype=bool)
        guessed = np.stack([blank if path.guessed is None else path.guessed for path in paths])
    return BacktestRun(model.label, actual, forecast, levels, guessed)


def mean_absolute_error(run: BacktestRun) -> float:
    """Mean |actual - forecast| over the observed steps (filled gaps are NaN and left out)."""
    errors = np.abs(run.actual - run.forecast)
    seen = np.isfinite(errors)
    return float(errors[seen].mean()) if np.any(seen) else float("nan")


def window_mae(run: BacktestRun) -> FloatArray:
    """MAE of each window (row) over its observed steps: the paired losses that model choice compares."""
    errors = np.abs(run.actual - run.forecast)
    seen = np.isfinite(errors)
    total = np.where(seen, errors, 0.0).sum(axis=1)
    return np.asarray(total / np.maximum(seen.sum(axis=1), 1), dtype=np.float64)


def nan_row_max(values: FloatArray) -> FloatArray:
    """Max of each row over its finite values; 0 for a row with none (so it counts as no peak)."""
    finite = np.where(np.isfinite(values), values, -np.inf)
    return np.asarray(np.maximum(finite.max(axis=1), 0.0), dtype=np.float64)


def _coverage(run: BacktestRun, floor: float, step_seconds: float) -> tuple[float | None, float | None]:
    rows = run.actual.shape[0]
    if rows < 2:
        return None, None
    inside_80, inside_95 = [], []
    scales = IntervalCalibration.from_errors(run.actual, run.forecast, floor=floor, step_seconds=step_seconds).scales
    for held_out in range(rows):
        others = [r for r in range(rows) if r != held_out]
        calibration = IntervalCalibration.from_errors(
            run.actual[others], run.forecast[others], floor=floor, step_seconds=step_seconds, scales=scales
        )
        bands = calibration.bands(run.forecast[held_out])
        actual = run.actual[held_out]
        seen = np.isfinite(actual)
        inside_80.append(((bands.lower_80 <= actual) & (actual <= bands.upper_80))[seen])
        inside_95.append(((bands.lower_95 <= actual) & (actual <= bands.upper_95))[seen])
    return float(np.mean(np.concatenate(inside_80))), float(np.mean(np.concatenate(inside_95)))


def _peak_error(run: BacktestRun, peak_window_steps: int) -> float | None:
    window = slice(0, max(1, peak_window_steps))
    actual_peak = nan_row_max(run.actual[:, window])
    forecast_peak = run.forecast[:, window].max(axis=1)
    valid = actual_peak > 0
    if not np.any(valid):
        return None
    return float(np.mean(np.abs(forecast_peak[valid] - actual_peak[valid]) / actual_peak[valid]))


def score_run(
    run: BacktestRun, baseline_mae: float, *, floor: float, step_seconds: float, peak_window_steps: int
) -> ModelScore:
    mae = mean_absolute_error(run)
    mase = mae / baseline_mae if baseline_mae > 0 else (1.0 if mae == 0 else float("inf"))
    coverage_80, coverage_95 = _coverage(run, floor, step_seconds)
    return ModelScore(
        run.model, mae, mase, coverage_80, coverage_95, _peak_error(run, peak_window_steps), run.actual.shape[0]
    )
