"""Which models to try, against which baseline, at which backtest origins; and which one to pick.

History decides (at a 24 h horizon, other horizons shift the thresholds by the backtest window):
- under 1 day: mean/drift, no backtest (no daily cycle seen yet);
- no room for a backtest window after 1 day of training: daily seasonal naive, not backtested;
- otherwise every model with enough history before the most recent origin is backtested. The MASE
  baseline is the weekly seasonal naive once two origins have two weeks of training each (weekly naive
  needs two weeks, weekly MSTL a day more), else the daily one; MSTL then runs daily + weekly, else daily.
Origins: the most recent window and the same time of week one and two weeks back (see `backtest_origins`).
The path's model is the lowest MASE; models within 2% of it are split by the lower peak error. The peak
that advice provisions for is chosen separately, on its own objective (see the pipeline): its bound is
calibrated to cover, and the estimate whose misses scatter least gives the least over-provision. Adding
peak error to MASE in one score was tried on the real series and picked yesterday's copy more often,
for a worse path and no tighter peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forecasting.backtest import ModelScore
from forecasting.models import ForecastModel, make_model
from forecasting.series import SECONDS_PER_DAY

__all__ = ["SelectionPlan", "backtest_origins", "calibration_origins", "pick_model", "plan_selection"]

_TIE_TOLERANCE = 0.02


@dataclass(frozen=True)
class SelectionPlan:
    """`candidates` empty means no backtest: `baseline` is used as is, for the reason in `why`."""

    candidates: tuple[ForecastModel, ...]
    baseline: ForecastModel
    origins: tuple[int, ...]
    backtest_horizon_steps: int
    skipped: tuple[str, ...]
    why: str


def _days(steps: int, step_seconds: float) -> str:
    return f"{steps * step_seconds / SECONDS_PER_DAY:.1f} days"


def _default_labels(weekly: bool) -> tuple[str, ...]:
    if weekly:
        return ("seasonal_naive_daily", "seasonal_naive_weekly", "holt_winters", "mstl", "profile_level", "combined")
    return ("seasonal_naive_daily", "holt_winters", "mstl_daily", "profile_level", "combined")


def plan_selection(
    n_steps: int,
    step_seconds: float,
    horizon_steps: int,
    *,
    max_origins: int = 3,
    max_backtest_days: float = 7.0,
    model_labels: Sequence[str] | None = None,
) -> SelectionPlan:
    """Decide candidates, baseline and origins (indices into the history) from the history length."""
    history = _days(n_steps, step_seconds)
    cap = max(1, round(max_backtest_days * SECONDS_PER_DAY / step_seconds))
    window = min(horizon_steps, cap)
    daily, weekly = make_model("seasonal_naive_daily"), make_model("seasonal_naive_weekly")
    day_steps = daily.min_history_steps(step_seconds)
    if day_steps == 0 or n_steps < day_steps:
        why = f"{history} of history: mean/drift (no full daily cycle yet), wide intervals"
        return SelectionPlan((), make_model("mean_drift"), (), window, (), why)
    if n_steps - window < day_steps:
        why = f"{history} of history: daily seasonal naive (needs 1 day; fitted models need 2 days + a backtest)"
        return SelectionPlan((), daily, (), window, (), why)
    weekly_ok = n_steps - 2 * window >= weekly.min_history_steps(step_seconds)
    baseline = weekly if weekly_ok else daily
    labels = tuple(model_labels) if model_labels else _default_labels(weekly_ok)
    models = [make_model(label) for label in labels if label != baseline.label]
    room = n_steps - window
    candidates = tuple(m for m in models if m.min_history_steps(step_seconds) <= room)
    skipped = tuple(
        f"{m.label} (needs {_days(m.min_history_steps(step_seconds), step_seconds)} before a backtest window)"
        for m in models
        if m not in candidates
    )
    need = max([baseline.min_history_steps(step_seconds)] + [m.min_history_steps(step_seconds) for m in candidates])
    origins = backtest_origins(n_steps, window, step_seconds, need, max_origins)
    why = f"{history} of history, {len(origins)} backtest origin(s) x {window * step_seconds / 3600:g} h"
    return SelectionPlan((baseline, *candidates), baseline, origins, window, skipped, why)


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


def pick_model(scores: Sequence[ModelScore]) -> ModelScore:
    """Lowest MASE; among models within 2% of it, the lowest peak error (then the lowest MASE)."""
    best = min(s.mase for s in scores)
    close = [s for s in scores if s.mase <= best * (1 + _TIE_TOLERANCE)]
    return min(close, key=lambda s: (s.peak_error if s.peak_error is not None else float("inf"), s.mase))
