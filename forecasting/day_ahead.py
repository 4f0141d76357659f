"""The day ahead may come from another model than the first hour: each horizon from the model that backtests
best at it, joined linearly over the second hour.

Why: the first hour and the rest of the day ask different things of a model. The first hour (the cold-start
horizon, where advice reads the bound) is about the series' short-term dynamics and the level now; the day
ahead is about its daily shape, if it has one that repeats. On ServeGen's production series, which has no
repeating daily shape, a flat day at the last day's median beats yesterday's copy over the next day (MASE
0.85 of it) but has nothing to say about the next hour; picked for the whole day it cost NAB's first hour
Holt-Winters' short-term dynamics (1 h MASE vs last value 0.892 -> 0.927). So the first-hour pick is made
as before (`forecasting.choosing`), and the day ahead is picked again, by the same one-standard-error rule,
among the same runs plus the day-ahead candidates (`selection.DAY_AHEAD_MODELS`), on the steps after the first hour.
Where it picks the same model, nothing changes.

The join: the path is the first-hour model's up to one hour, the day-ahead model's from two hours, and a
linear mix between (no jump in the path the advice and the ramp search read), in the backtest runs that
calibrate the intervals as in the forecast.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from forecasting.backtest import BacktestRun, ModelScore, mean_absolute_error, window_mae
from forecasting.models.base import any_guessed
from forecasting.selection import DAY_AHEAD_MODELS, FIRST_HOUR_SECONDS, pick_model
from forecasting.series import FloatArray

__all__ = ["day_ahead_pick", "far_weights", "spliced", "spliced_run"]

_JOIN_SECONDS = 3600.0  # the second hour: a linear mix of both
_COPIES = frozenset({"seasonal_naive_daily", "seasonal_naive_workday", "seasonal_naive_weekly"})


def far_weights(horizon_steps: int, step_seconds: float) -> FloatArray:
    """The day-ahead model's weight at each step ahead (1-based): 0 up to an hour, 1 from two hours."""
    ahead = np.arange(1, horizon_steps + 1, dtype=np.float64) * step_seconds
    return np.asarray(np.clip((ahead - FIRST_HOUR_SECONDS) / _JOIN_SECONDS, 0.0, 1.0), dtype=np.float64)


def spliced(near: FloatArray, far: FloatArray, step_seconds: float) -> FloatArray:
    """The joined path (or rows of paths: the last axis is the horizon)."""
    weights = far_weights(near.shape[-1], step_seconds)
    return np.asarray(near * (1.0 - weights) + far * weights, dtype=np.float64)


def spliced_run(near: BacktestRun, far: BacktestRun, step_seconds: float) -> BacktestRun:
    """The joined backtest windows, labelled as the first-hour model's (same windows, same actuals)."""
    forecast, guessed = spliced(near.forecast, far.forecast, step_seconds), any_guessed((near.guessed, far.guessed))
    return BacktestRun(near.model, near.actual, forecast, near.levels, guessed)


def _after_first_hour(run: BacktestRun, step_seconds: float) -> BacktestRun:
    keep = np.arange(1, run.actual.shape[1] + 1) * step_seconds > FIRST_HOUR_SECONDS
    guessed = None if run.guessed is None else run.guessed[:, keep]
    return BacktestRun(run.model, run.actual[:, keep], run.forecast[:, keep], run.levels, guessed)


def day_ahead_pick(
    runs: Mapping[str, BacktestRun], baseline: BacktestRun, *, step_seconds: float, effective_windows: float
) -> tuple[str, dict[str, ModelScore]] | None:
    """The model best after the first hour by the one-standard-error rule, and every model's score there
    (MAE, and MASE against the baseline over the same steps); None when the windows end within the first
    hour."""
    if baseline.actual.shape[1] * step_seconds <= FIRST_HOUR_SECONDS:
        return None
    later = {label: _after_first_hour(run, step_seconds) for label, run in runs.items()}
    baseline_mae = mean_absolute_error(_after_first_hour(baseline, step_seconds))
    scores = {label: _score(run, baseline_mae) for label, run in later.items()}
    losses = {label: window_mae(run) for label, run in later.items()}
    eligible = [score for label, score in scores.items() if _eligible(label, losses)]
    best = pick_model(eligible, losses, effective_windows)
    return best.model, scores


def _eligible(label: str, losses: Mapping[str, FloatArray]) -> bool:
    """A model without a daily shape (`DAY_AHEAD_MODELS`) only where it beats every seasonal copy after the
    first hour on most windows (the median paired loss difference is negative): a shape that repeats is one
    a copy gets right on most days (noise-free weekdays: the daily naive has no error there). The mean
    difference and its standard error would not say so where the windows hold a weekend: the copy's misses
    there make the comparison too noisy, and the flat day, ranked simpler, would win by default."""
    if label not in DAY_AHEAD_MODELS:
        return True
    mine = losses[label]
    return all(float(np.median(mine - loss)) < 0.0 for copy, loss in losses.items() if copy in _COPIES)


def _score(run: BacktestRun, baseline_mae: float) -> ModelScore:
    mae = mean_absolute_error(run)
    mase = mae / baseline_mae if baseline_mae > 0 else (1.0 if mae == 0 else float("inf"))
    return ModelScore(run.model, mae, mase, None, None, None, run.actual.shape[0])
