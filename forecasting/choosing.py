"""How a forecast's model is chosen: backtest the plan's candidates, anchor each, pick by the one-standard-error
rule, calibrate the pick's intervals and the peak bound, and say why (`choose`, returning the `ModelChoice`
a later refit may keep). Histories too short for a backtest, or constant, get their model without one.

Pure, like the pipeline that calls it (`forecasting.pipeline.forecast`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from forecasting.anchoring import HorizonAnchor, first_hour_paths
from forecasting.backtest import (
    BacktestReport,
    BacktestRun,
    ModelScore,
    mean_absolute_error,
    run_backtest,
    score_run,
    window_mae,
)
from forecasting.choice import ModelChoice
from forecasting.day_ahead import day_ahead_pick, spliced_run
from forecasting.errors import ForecastInputError, ForecastModelError
from forecasting.intervals import IntervalCalibration, PeakCalibration, relative_floor
from forecasting.models import Combination, ForecastModel
from forecasting.models.base import any_guessed
from forecasting.selection import SelectionPlan, loss_margin, pick_model
from forecasting.series import RegularSeries, steps_per_day

__all__ = ["choose"]


_DAY_COPIES = frozenset({"seasonal_naive_daily", "seasonal_naive_workday"})


def _fallback_calibration(
    history: RegularSeries, model: ForecastModel, floor: float, inflation: float
) -> IntervalCalibration:
    """Intervals for models that could not be backtested.

    Daily seasonal naive with a day of differences: relative errors y(t) vs y(t - 1 day), which are
    exactly its one-day-ahead errors in the past; the same for the working-day naive, which on a history
    this short (under a day and a backtest window) copies the day before too. Otherwise (mean/drift): the
    spread of the history around its mean, inflated by `inflation`, since the daily cycle has not been seen.
    """
    values = history.values
    period = steps_per_day(history.step_seconds)
    if model.label in _DAY_COPIES and values.size - period >= 12:
        reference = values[:-period]
        relative = (values[period:] - reference) / (np.maximum(reference, 0.0) + floor)
        return IntervalCalibration.from_relative_errors(
            relative, floor=floor, source="day-over-day differences", inflation=1.0
        )
    centre = float(np.mean(values))
    relative = (values - centre) / (max(centre, 0.0) + floor)
    return IntervalCalibration.from_relative_errors(
        relative, floor=floor, source=f"spread of the history x{inflation:g}", inflation=inflation
    )


def _backtest(
    history: RegularSeries, plan: SelectionPlan, filled: NDArray[np.bool_] | None
) -> tuple[dict[str, BacktestRun], float, tuple[str, ...]]:
    """Backtest every candidate, cheap ones first; returns runs, the baseline's MAE, skip/failure notes.

    When the daily seasonal naive backtests 1.5x worse than the weekly one, the weekly pattern is strong
    and models that only know a daily season are not fitted (they cannot win, and they cost the most).
    """
    runs: dict[str, BacktestRun] = {}
    notes: list[str] = []
    for model in sorted((*plan.candidates, *plan.day_ahead), key=lambda m: m.label not in _CHEAP_MODELS):
        if model.label not in _CHEAP_MODELS and 7.0 not in model.seasons_days and _weekly_pattern_dominates(runs):
            notes.append(f"{model.label} skipped (daily naive >= 1.5x weekly naive: strong weekly pattern)")
            continue
        try:
            runs[model.label] = _combined_run(model, runs) or run_backtest(
                history, model, plan.origins, plan.backtest_horizon_steps, filled
            )
        except (ForecastModelError, ForecastInputError) as exc:
            notes.append(f"{model.label} failed: {exc}")
    baseline = runs[plan.baseline.label]
    return runs, mean_absolute_error(baseline), tuple(notes)


def _combined_run(model: ForecastModel, runs: Mapping[str, BacktestRun]) -> BacktestRun | None:
    """A combination's backtest is the mean of its parts' (same origins): no second fit of each part."""
    if not isinstance(model, Combination) or not all(part.label in runs for part in model.parts):
        return None
    parts = [runs[part.label] for part in model.parts]
    forecast = np.mean([run.forecast for run in parts], axis=0)
    guessed = any_guessed(run.guessed for run in parts)
    return BacktestRun(model.label, parts[0].actual, np.maximum(forecast, 0.0), parts[0].levels, guessed)


_CHEAP_MODELS = frozenset({"seasonal_naive_daily", "seasonal_naive_weekly"})
_WEEKLY_DOMINANCE = 1.5


def _weekly_pattern_dominates(runs: Mapping[str, BacktestRun]) -> bool:
    daily, weekly = runs.get("seasonal_naive_daily"), runs.get("seasonal_naive_weekly")
    if daily is None or weekly is None:
        return False
    weekly_mae, daily_mae = mean_absolute_error(weekly), mean_absolute_error(daily)
    return daily_mae >= _WEEKLY_DOMINANCE * weekly_mae


def _anchored(run: BacktestRun, step_seconds: float) -> tuple[BacktestRun, HorizonAnchor]:
    """The run with its first hours blended toward each origin's recent level, by the anchor it fits best
    (over the whole windows, and over their first hour on its own: `anchoring.HorizonAnchor`)."""
    anchor = HorizonAnchor.fit(run.fitted_actual, run.forecast, run.levels, step_seconds)
    if not anchor.anchored:
        return run, anchor
    forecast = np.stack([anchor.apply(row, level) for row, level in zip(run.forecast, run.levels, strict=True)])
    return run.with_forecast(forecast), anchor


def _calibration(
    raw: BacktestRun, anchored: BacktestRun, anchor: HorizonAnchor, floor: float, step_seconds: float
) -> IntervalCalibration:
    """The picked model's intervals: by horizon bucket on its anchored windows, and when its first hour is
    anchored, each step of that hour on its own, from the hour blocks the anchor was fitted on (a path
    anchored at a block's start stands in for a forecast made then only when the anchor, not the fit at
    the window's origin, sets its level)."""
    calibration = IntervalCalibration.from_errors(
        anchored.fitted_actual, anchored.forecast, floor=floor, step_seconds=step_seconds
    )
    if not anchor.first_hour_anchored:
        return calibration
    return calibration.with_first_steps(*first_hour_paths(raw.fitted_actual, raw.forecast, raw.levels, anchor))


def _peak_calibration(
    history: RegularSeries,
    plan: SelectionPlan,
    picked: str,
    runs: Mapping[str, BacktestRun],
    peak_window: int,
) -> PeakCalibration | None:
    """The peak bound of short histories (under `peaks.MIN_WINDOW_DAYS` of day-long windows; with more,
    `peaks.DailyPeakBound` calibrates on every past window instead): from the picked model or the daily
    seasonal naive, whichever misses peaks more evenly.

    Two estimates of the next peak: the picked model's maximum and yesterday's (the daily naive's). Each
    is debiased and bounded by its own misses on the same windows, so at the same cover the one whose
    misses scatter less gives the tighter bound; smooth models trade a better path for a peak they
    flatten, and yesterday's peak is often the better guess of today's.
    """
    spanned = _days_spanned(plan, history.step_seconds)
    labels = [picked] + (["seasonal_naive_daily"] if "seasonal_naive_daily" in runs else [])
    found = [
        PeakCalibration.from_windows(
            label, runs[label].fitted_actual, runs[label].forecast, peak_steps=peak_window, days_spanned=spanned
        )
        for label in dict.fromkeys(labels)
    ]
    valid = [c for c in found if c is not None]
    return min(valid, key=lambda c: c.sd) if valid else None


def _days_spanned(plan: SelectionPlan, step_seconds: float) -> float:
    """Days the backtest windows cover: the independent samples of a day-level error (windows overlap)."""
    return (max(plan.origins) - min(plan.origins) + plan.backtest_horizon_steps) * step_seconds / 86_400.0


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _reason(
    plan: SelectionPlan,
    best: ModelScore,
    scores: tuple[ModelScore, ...],
    notes: tuple[str, ...],
    margin: tuple[float, float] | None = None,
) -> str:
    """Why this model, with the numbers: its MASE and peak error, and every other model's MASE."""
    coverage = f"backtest 80% coverage {_percent(best.coverage_80)} over {best.origins} origin(s)"
    if len(scores) == 1:
        text = f"{plan.why}: {best.model} (the only model with enough history), {coverage}"
    else:
        others = ", ".join(f"{s.model} {s.mase:.2f}" for s in sorted(scores, key=lambda s: s.mase) if s is not best)
        peak = "n/a" if best.peak_error is None else f"{best.peak_error:.1%}"
        text = (
            f"{plan.why}: picked {best.model}, MASE {best.mase:.2f} against {plan.baseline.label} "
            f"(MAE {best.mae:.3g}), peak error {peak}, {coverage}; others: {others}"
        )
        text += _why_not_lowest(best, scores, margin)
    if plan.skipped:
        text += f"; not tried: {', '.join(plan.skipped)}"
    if notes:
        text += f"; {'; '.join(notes)}"
    return text


def _why_not_lowest(best: ModelScore, scores: tuple[ModelScore, ...], margin: tuple[float, float] | None) -> str:
    """When a model with a lower MASE lost: it was not better by more than one standard error."""
    lowest = min(scores, key=lambda s: s.mase)
    if lowest is best or lowest.mase >= best.mase or margin is None:
        return ""
    mean, se = margin
    return (
        f"; {lowest.model}'s lower MASE is within one standard error of the paired window losses "
        f"({mean:.3g} vs {se:.3g}), so the simpler {best.model} is kept"
    )


def choose(
    history: RegularSeries,
    filled: NDArray[np.bool_] | None,
    plan: SelectionPlan,
    *,
    peak_window_seconds: float,
    fallback_spread_inflation: float,
) -> ModelChoice:
    """Backtest the plan's candidates, anchor each, pick by the one-SE rule, calibrate the pick's intervals.

    Every candidate runs on the same windows (the same time of week one and two weeks back, and a dozen
    every 6 h), each with the short-horizon anchor it fits best, so that scores, intervals and the peak
    bound are those of the path the forecast will give. MASE stays against the plain baseline.
    """
    step = history.step_seconds
    if _constant(history.values):
        return _constant_selection(history, plan)
    if not plan.candidates or not plan.origins:
        floor = relative_floor(history.values, evidence_days=0.0)
        calibration = _fallback_calibration(history, plan.baseline, floor, fallback_spread_inflation)
        return ModelChoice(plan.baseline, calibration, plan.why, None)
    floor = relative_floor(history.values, evidence_days=_days_spanned(plan, step))
    peak_window = min(max(1, round(peak_window_seconds / step)), plan.backtest_horizon_steps)
    raw, baseline_mae, notes = _backtest(history, plan, filled)
    fitted = {label: _anchored(run, step) for label, run in raw.items()}
    runs = {label: run for label, (run, _) in fitted.items()}
    scores = tuple(
        score_run(run, baseline_mae, floor=floor, step_seconds=step, peak_window_steps=peak_window)
        for run in runs.values()
    )
    first_hour = {m.label for m in plan.candidates}
    near = tuple(s for s in scores if s.model in first_hour)
    losses = {label: window_mae(run) for label, run in runs.items() if label in first_hour}
    spanned = _days_spanned(plan, step)
    best = pick_model(near, losses, spanned)
    lowest = min(near, key=lambda s: s.mase)
    margin = loss_margin(losses[lowest.model], losses[best.model], spanned)
    model = next(m for m in plan.candidates if m.label == best.model)
    run = runs[best.model]
    far = day_ahead_pick(runs, raw[plan.baseline.label], step_seconds=step, effective_windows=spanned)
    far_model, day_ahead = None, ""
    if far is not None and far[0] != best.model:
        label, later = far
        far_model = next(m for m in (*plan.candidates, *plan.day_ahead) if m.label == label)
        run = spliced_run(run, runs[label], step)
        day_ahead = _day_ahead_reason(later[label], later[best.model])
    calibration = _calibration(raw[best.model], run, fitted[best.model][1], floor, step)
    peak = _peak_calibration(history, plan, best.model, {**runs, best.model: run}, peak_window)
    origins_s = tuple(float(history.timestamps_s[o - 1]) for o in plan.origins)
    report = BacktestReport(
        plan.baseline.label, plan.backtest_horizon_steps, step, origins_s, scores, best.model, notes
    )
    anchors = {label: anchor for label, (_, anchor) in fitted.items()}
    reason = _reason(plan, best, near, notes, margin) + f"; {anchors[best.model].describe()}" + day_ahead
    return ModelChoice(model, calibration, reason, report, peak, anchors, far=far_model)


def _day_ahead_reason(far: ModelScore, near: ModelScore) -> str:
    """Why the day ahead comes from another model: its MASE after the first hour against the first-hour pick's."""
    return (
        f"; the day ahead (after the first hour, joined over the second) from {far.model}: MASE {far.mase:.2f} "
        f"there ({near.model} {near.mase:.2f}), the simplest within one standard error of the best"
    )


def _constant(values: NDArray[np.float64]) -> bool:
    return bool(values.size) and bool(np.all(values == values[0]))


def _constant_selection(history: RegularSeries, plan: SelectionPlan) -> ModelChoice:
    """A history that never moved (an idle tier's zero, a stuck gauge): every candidate forecasts that value
    and backtests with no error, so the plan's baseline is kept with no spread and the backtest, which
    cost an idle tier as much as a busy one at every refit, is not run."""
    value = float(history.values[0])
    # With zero quantiles the floor scales nothing: the bands are the value whatever it is.
    calibration = IntervalCalibration(
        relative_floor(history.values), (0,), ((0.0,) * 4,), len(history), "constant history"
    )
    reason = (
        f"{plan.why}: the history is {value:g} at all {len(history)} steps, so every model forecasts {value:g} "
        f"with no error; kept {plan.baseline.label} with no spread, not backtested"
    )
    return ModelChoice(plan.baseline, calibration, reason, None, constant=True)
