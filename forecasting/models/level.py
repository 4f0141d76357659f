"""Level and trend of a deseasonalized series (log scale): what MSTL leaves for a model to carry forward.

Three questions, each answered from the data with a stated test rather than assumed:
- has the level shifted (a new customer, a lost one)? two-sample t-test on daily means at the best split;
- is there a slope? least-squares line through daily means, t-test on the slope;
- how fast does the remainder's level move? simple exponential smoothing, alpha chosen on day-ahead error.
Daily means are used for the tests because errors within a day are correlated (a busy day is busy all
day), so days, not points, are the independent observations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from forecasting.series import FloatArray

__all__ = ["Shift", "Slope", "daily_means", "ses_level", "significant_shift", "significant_slope", "step_left"]

_ALPHAS = np.concatenate(([0.0], np.geomspace(0.002, 0.2, 20)))


def daily_means(values: FloatArray, blocks_per_day: int) -> FloatArray:
    """Means of whole days, aligned to the end of `values` (a leading partial day is dropped)."""
    days = values.size // blocks_per_day
    return np.asarray(values[values.size - days * blocks_per_day :].reshape(days, blocks_per_day).mean(axis=1))


@dataclass(frozen=True)
class Slope:
    """A proven trend: the fitted line's value at the end of the data and its slope, per block."""

    level_at_end: float
    per_block: float
    t_statistic: float


@dataclass(frozen=True)
class Shift:
    """A proven level shift of `size` (log units) that started `days_ago` whole days before the end."""

    size: float
    days_ago: int
    t_statistic: float


def significant_slope(deseasonalized: FloatArray, blocks_per_day: int, t_min: float) -> Slope | None:
    """Least-squares line through the daily means; None unless |slope| >= t_min standard errors.

    Needs 4 days at least (2 degrees of freedom for the scatter around the line).
    """
    means = daily_means(deseasonalized, blocks_per_day)
    days = means.size
    if days < 4:
        return None
    x = np.arange(days, dtype=np.float64) - (days - 1) / 2.0
    slope = float(np.dot(x, means) / np.dot(x, x))
    residual = means - means.mean() - slope * x
    standard_error = float(np.sqrt(np.dot(residual, residual) / (days - 2) / np.dot(x, x)))
    t = slope / standard_error if standard_error > 0 else (np.inf if slope else 0.0)
    if abs(t) < t_min:
        return None
    end = float(means.mean() + slope * ((days - 1) / 2.0 + 0.5))  # the line at the end of the last day
    return Slope(end, slope / blocks_per_day, float(t))


def significant_shift(deseasonalized: FloatArray, blocks_per_day: int, t_min: float) -> Shift | None:
    """The most significant step in the daily means, if |t| >= t_min; at least 3 days before it.

    For each split k: t = (mean(after) - mean(before)) / (s x sqrt(1/k_before + 1/k_after)), s the
    pooled standard deviation of the days around their segment means. t_min is high (5 by default)
    because the best of ~10 splits is taken, which inflates t under no shift.
    """
    means = daily_means(deseasonalized, blocks_per_day)
    best: Shift | None = None
    for split in range(3, means.size):
        before, after = means[:split], means[split:]
        scatter = np.sum((before - before.mean()) ** 2) + np.sum((after - after.mean()) ** 2)
        if means.size <= 2:
            continue
        pooled = float(np.sqrt(scatter / (means.size - 2)))
        step = float(after.mean() - before.mean())
        spread = pooled * np.sqrt(1.0 / before.size + 1.0 / after.size)
        t = step / spread if spread > 0 else (np.inf if step else 0.0)
        if abs(t) >= t_min and (best is None or abs(t) > abs(best.t_statistic)):
            best = Shift(step, int(after.size), float(t))
    return best


def step_left(deseasonalized: FloatArray, blocks_per_day: int, days_ago: int, window_blocks: int) -> float:
    """Step still left between the last `days_ago` days and the days before, after a shift was removed.

    The first decomposition lets the seasonal components absorb part of a step (they average the days
    after it with the days before), so the step measured then is too small; measured again on the
    re-decomposed series, the remainder of it is added.
    """
    means = daily_means(deseasonalized[-window_blocks:], blocks_per_day)
    if days_ago >= means.size:
        return 0.0
    return float(means[-days_ago:].mean() - means[:-days_ago].mean())


def ses_level(remainder: FloatArray, lead_steps: int) -> tuple[float, float]:
    """(alpha, final level) of simple exponential smoothing l_t = a r_t + (1 - a) l_{t-1}, l_0 = 0.

    alpha is picked from a grid (0 included) by the mean absolute error of l_{t-lead} as a forecast
    of r_t, i.e. by how well the smoothed level would have predicted `lead_steps` ahead.
    """
    best = (np.inf, 0.0, 0.0)
    for alpha in _ALPHAS:
        level = np.zeros_like(remainder) if alpha == 0.0 else lfilter([alpha], [1.0, alpha - 1.0], remainder)
        lead = min(lead_steps, remainder.size - 1)
        error = float(np.mean(np.abs(remainder[lead:] - level[: remainder.size - lead])))
        if error < best[0]:
            best = (error, float(alpha), float(level[-1]))
    return best[1], best[2]
