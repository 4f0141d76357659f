"""Which models to try, against which baseline, at which backtest origins; and which one to pick.

History decides (at a 24 h horizon, other horizons shift the thresholds by the backtest window):
- under 1 day: mean/drift, no backtest (no daily cycle seen yet);
- no room for a backtest window after 1 day of training: daily seasonal naive, not backtested;
- otherwise every model with enough history before the most recent origin is backtested. The MASE
  baseline is the weekly seasonal naive once two origins have two weeks of training each (weekly naive
  needs two weeks, weekly MSTL a day more), else the daily one; MSTL then runs daily + weekly, else daily.
Origins: the most recent window and the same time of week one and two weeks back (see `backtest_origins`),
and windows every few hours back from the latest one (see `calibration_origins`): a dozen windows, where
three held about three samples of a day-level error and the pick flipped on them.
The pick (`pick_model`) is the structurally simplest model whose window losses are not worse than the
lowest-MASE model's by more than one standard error of the paired difference (the one-standard-error
rule of Breiman et al., CART 1984, and Hastie, Tibshirani and Friedman, ESL 7.10): a richer model has
to beat a simpler one by more than the noise of the comparison. Windows a few hours apart overlap, so
the standard error counts the days they span, not the windows. On the real series this stopped the
pick from flipping between models day to day (ServeGen next-day MASE 1.13 -> about 0.9 with anchoring).
The peak that advice provisions for is bounded separately, on its own objective (`forecasting.peaks`):
a predictor of the next day's peak from past daily peaks, calibrated to cover on every past window of
the series, the predictor being the one that over-provisioned least.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from forecasting.backtest import ModelScore
from forecasting.calendar import WorkWeek
from forecasting.models import ForecastModel, make_model
from forecasting.series import SECONDS_PER_DAY, FloatArray

__all__ = [
    "DAY_AHEAD_MODELS",
    "FIRST_HOUR_SECONDS",
    "SIMPLEST_FIRST",
    "SelectionPlan",
    "backtest_origins",
    "calibration_origins",
    "loss_margin",
    "pick_model",
    "plan_selection",
    "simplicity_rank",
]

# Fewest fitted quantities first: copies the calendar vouches for (a week, the working week), a flat day (one
# median, no shape: it claims less than yesterday's shape copied, and is a day-ahead candidate only), yesterday's
# copy, medians, smoothing weights, a decomposition, two models at once.
SIMPLEST_FIRST = (
    "seasonal_naive_weekly",
    "seasonal_naive_workday",
    "day_median",
    "seasonal_naive_daily",
    "profile_level",
    "holt_winters",
    "holt_winters_damped",
    "mstl_daily",
    "mstl",
    "combined",
)

# Candidates for the day ahead only (`forecasting.day_ahead`): models with nothing to say about the first hour,
# which the first-hour pick keeps to itself (backtest windows of an hour or less have no day ahead).
DAY_AHEAD_MODELS = ("day_median",)
FIRST_HOUR_SECONDS = 3600.0


@dataclass(frozen=True)
class SelectionPlan:
    """`candidates` empty means no backtest: `baseline` is used as is, for the reason in `why`;
    `day_ahead` are backtested beside them for the day-ahead pick only."""

    candidates: tuple[ForecastModel, ...]
    baseline: ForecastModel
    origins: tuple[int, ...]
    backtest_horizon_steps: int
    skipped: tuple[str, ...]
    why: str
    day_ahead: tuple[ForecastModel, ...] = ()


def _days(steps: int, step_seconds: float) -> str:
    return f"{steps * step_seconds / SECONDS_PER_DAY:.1f} days"


def _default_labels(weekly: bool, work_week: WorkWeek | None) -> tuple[str, ...]:
    naive = ("seasonal_naive_daily", "seasonal_naive_workday") if work_week else ("seasonal_naive_daily",)
    if weekly:
        return (*naive, "seasonal_naive_weekly", "holt_winters", "mstl", "profile_level", "combined")
    return (*naive, "holt_winters", "mstl_daily", "profile_level", "combined")


def plan_selection(
    n_steps: int,
    step_seconds: float,
    horizon_steps: int,
    *,
    max_origins: int = 3,
    max_backtest_days: float = 7.0,
    model_labels: Sequence[str] | None = None,
    every_steps: int = 0,
    every_count: int = 0,
    work_week: WorkWeek | None = None,
) -> SelectionPlan:
    """Decide candidates, baseline and origins (indices into the history) from the history length.

    Origins: `max_origins` from `backtest_origins`, plus up to `every_count` windows `every_steps` apart.
    With a `work_week` (the plan's business days) the working-day naive is a candidate too, and the model
    of record when there is no room for a backtest yet.
    """
    history = _days(n_steps, step_seconds)
    cap = max(1, round(max_backtest_days * SECONDS_PER_DAY / step_seconds))
    window = min(horizon_steps, cap)
    daily, weekly = make_model("seasonal_naive_daily"), make_model("seasonal_naive_weekly")
    day_steps = daily.min_history_steps(step_seconds)
    if day_steps == 0 or n_steps < day_steps:
        why = f"{history} of history: mean/drift (no full daily cycle yet), wide intervals"
        return SelectionPlan((), make_model("mean_drift"), (), window, (), why)
    if n_steps - window < day_steps:
        naive, kind = (
            (make_model("seasonal_naive_workday", work_week), "working-day") if work_week else (daily, "daily")
        )
        why = f"{history} of history: {kind} seasonal naive (needs 1 day; fitted models need 2 days + a backtest)"
        return SelectionPlan((), naive, (), window, (), why)
    weekly_ok = n_steps - 2 * window >= weekly.min_history_steps(step_seconds)
    baseline = weekly if weekly_ok else daily
    labels = tuple(model_labels) if model_labels else _default_labels(weekly_ok, work_week)
    models = [make_model(label, work_week) for label in labels if label != baseline.label]
    room = n_steps - window
    candidates = tuple(m for m in models if m.min_history_steps(step_seconds) <= room)
    skipped = tuple(
        f"{m.label} (needs {_days(m.min_history_steps(step_seconds), step_seconds)} before a backtest window)"
        for m in models
        if m not in candidates
    )
    need = max([baseline.min_history_steps(step_seconds)] + [m.min_history_steps(step_seconds) for m in candidates])
    origins = backtest_origins(n_steps, window, step_seconds, need, max_origins)
    if every_steps > 0 and every_count > 0:
        origins = tuple(sorted({*origins, *calibration_origins(n_steps, window, need, every_steps, every_count)}))
    why = f"{history} of history, {len(origins)} backtest origin(s) x {window * step_seconds / 3600:g} h"
    later = not model_labels and window * step_seconds > FIRST_HOUR_SECONDS
    day_ahead = tuple(make_model(label) for label in DAY_AHEAD_MODELS) if later else ()
    day_ahead = tuple(m for m in day_ahead if m.min_history_steps(step_seconds) <= room)
    return SelectionPlan((baseline, *candidates), baseline, origins, window, skipped, why, day_ahead)


def backtest_origins(n_steps: int, window: int, step_seconds: float, need: int, max_origins: int) -> tuple[int, ...]:
    """Backtest origins (training lengths), most relevant first.

    The most recent window, then the windows at the same time of week as the forecast one and two weeks
    earlier (so a Saturday forecast is also judged on past Saturdays), then older consecutive windows.
    Each needs `need` steps of training before it and must end within the history.
    """
    week = round(7 * SECONDS_PER_DAY / step_seconds)
    preferred = [n_steps - window, n_steps - week, n_steps - 2 * week]
    preferred += [n_steps - k * window for k in range(2, max_origins + 2 * 7 + 1)]
    origins: list[int] = []
    for origin in preferred:
        if origin >= need and origin + window <= n_steps and origin not in origins:
            origins.append(origin)
        if len(origins) == max_origins:
            break
    return tuple(sorted(origins))


def calibration_origins(n_steps: int, window: int, need: int, spacing: int, count: int) -> tuple[int, ...]:
    """Up to `count` origins `spacing` steps apart, the latest window first, each with `need` steps before it."""
    latest = n_steps - window
    return tuple(sorted(o for o in (latest - k * spacing for k in range(count)) if o >= need))


def simplicity_rank(label: str) -> int:
    """Position in `SIMPLEST_FIRST`; an unknown (user-added) model ranks after all of them."""
    return SIMPLEST_FIRST.index(label) if label in SIMPLEST_FIRST else len(SIMPLEST_FIRST)


def loss_margin(losses: FloatArray, best: FloatArray, effective_windows: float) -> tuple[float, float]:
    """(mean paired loss difference to the best model, its standard error); SE is inf with < 2 windows."""
    difference = losses - best
    if difference.size < 2:
        return float(difference.mean()), float("inf")
    n = max(2.0, min(float(difference.size), effective_windows))
    return float(difference.mean()), float(np.std(difference, ddof=1) / np.sqrt(n))


def pick_model(
    scores: Sequence[ModelScore], window_losses: Mapping[str, FloatArray], effective_windows: float
) -> ModelScore:
    """The simplest model within one standard error of the lowest-MASE one on the paired window losses.

    `window_losses[model]` holds its MAE per backtest window (same windows for all models);
    `effective_windows` the number of independent windows (the days they span, as they overlap). With a
    single window there is no standard error and the lowest MASE is picked.
    """
    best = min(scores, key=lambda s: s.mase)
    if len(window_losses[best.model]) < 2:
        return best
    for score in sorted(scores, key=lambda s: (simplicity_rank(s.model), s.mase)):
        mean, se = loss_margin(window_losses[score.model], window_losses[best.model], effective_windows)
        if score is best or mean <= se:
            return score
    return best
