"""The next peak's upper bound, calibrated on every past window of the series' own history.

Advice provisions for the highest demand of the next day, which is the maximum of many noisy points.
A model's smooth path flattens that maximum, and a dozen backtest windows a few hours apart hold only
three or four days' worth of peak misses: the bound built on them (`intervals.PeakCalibration`) was both
too narrow where the level moved and too wide everywhere else (ServeGen: 83% of days covered, 54% over).

So the peak gets a predictor of its own, cheap enough to score at every past origin without refitting:

    P_k(t) = median of the last k daily peaks before t   (the peak of each of the k days before t)

k = 1 is yesterday's peak (follows a trend or a level shift after a day); k = 3 the median of three,
which does not copy one day's spike (a spiky web service's daily peak is one 5-minute burst). At every
step t of the history with a whole window after it, the realized peak R(t) of the next window is known,
so r(t) = log(R(t) / P_k(t)) is the predictor's miss on that window: a few thousand windows, starting at
every time of day, spanning all the days the history holds. The bound is P_k(now) x exp(Q_p(r)), Q_p the
empirical p quantile (p = 80%, 95%), a split-conformal bound on the series' own windows: no distribution
is assumed for the misses, which on real traffic are skewed (a regime shift or a burst is one long tail).

Overlapping windows are not independent (windows a few hours apart share their peak): the evidence is
the days the windows span, and below 3 days of windows the backtest-based bound is used instead. The
finite-sample conformal correction ((n + 1) p / n, intervals.conformal_quantiles) counted in days would
call for the largest miss ever seen with under 19 days; it is not applied, and the cover is measured by
the benchmark on real series instead.

Which k: the one whose bound would have over-provisioned least on the days it covered, in sample (the
advice's own objective at a fixed cover; each k's bound covers the same share of windows by construction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from forecasting.series import FloatArray, steps_per_day

__all__ = ["MIN_WINDOW_DAYS", "PEAK_DAYS", "DailyPeakBound"]

PEAK_DAYS = (1, 3)  # yesterday's peak; the median of the last three daily peaks
MIN_WINDOW_DAYS = 3.0  # days of window origins needed before this bound replaces the backtest's
_LEVELS = (0.80, 0.95)


def _trailing_day_maxima(values: FloatArray, day: int) -> FloatArray:
    """Element t - day is max(values[t - day : t]), for t = day .. len(values)."""
    return np.asarray(sliding_window_view(values, day).max(axis=1), dtype=np.float64)


def _predictor(maxima: FloatArray, day: int, k: int, origins: FloatArray) -> FloatArray:
    """P_k at each origin t (an index >= k x day): the median of the k daily peaks before t."""
    index = origins.astype(np.int64)
    peaks = np.stack([maxima[index - day - j * day] for j in range(k)])
    return np.asarray(np.median(peaks, axis=0), dtype=np.float64)


@dataclass(frozen=True)
class DailyPeakBound:
    """Bounds of the next window's peak: P_k(now) x exp(quantile of past log misses)."""

    days: int
    log_ratio_80: float
    log_ratio_95: float
    window_days: float
    over_provision: float

    @classmethod
    def fit(cls, values: FloatArray, actual: FloatArray, step_seconds: float, peak_steps: int) -> DailyPeakBound | None:
        """Calibrate on `values` (the regular history) against `actual` (NaN where a gap was filled).

        None when the windows would span under `MIN_WINDOW_DAYS` days for yesterday's peak.
        """
        day = steps_per_day(step_seconds)
        n, window = values.size, max(1, peak_steps)
        if day < 1 or n < day + window:
            return None
        maxima = _trailing_day_maxima(values, day)
        observed = np.where(np.isfinite(actual), actual, -np.inf)
        realized_all = sliding_window_view(observed, window).max(axis=1)  # element t: peak of [t, t + window)
        usable = [k for k in PEAK_DAYS if (n - window - k * day) / day >= MIN_WINDOW_DAYS]
        if not usable:
            return None
        first = max(usable) * day  # the same windows for every k: a paired comparison
        origins = np.arange(first, n - window + 1, dtype=np.float64)
        realized = realized_all[first : n - window + 1]
        fitted = [cls._calibrate(maxima, day, k, origins, realized) for k in usable]
        found = [f for f in fitted if f is not None]
        return min(found, key=lambda f: f.over_provision) if found else None

    @classmethod
    def _calibrate(
        cls, maxima: FloatArray, day: int, k: int, origins: FloatArray, realized: FloatArray
    ) -> DailyPeakBound | None:
        predicted = _predictor(maxima, day, k, origins)
        valid = (predicted > 0) & (realized > 0) & np.isfinite(realized)
        if int(valid.sum()) < day:  # under a day of windows with a peak on both sides
            return None
        misses = np.log(realized[valid] / predicted[valid])
        q80, q95 = (float(q) for q in np.quantile(misses, _LEVELS))
        covered = misses <= q95
        over = float(np.mean(np.exp(q95 - misses[covered])) - 1.0)
        span = (origins[valid][-1] - origins[valid][0] + 1) / day
        return cls(k, q80, q95, float(span), over)

    def predicted_peak(self, values: FloatArray, step_seconds: float) -> float:
        """P_k at the end of `values`: the median of its last k daily peaks."""
        day = steps_per_day(step_seconds)
        peaks = [float(np.max(values[values.size - (j + 1) * day : values.size - j * day])) for j in range(self.days)]
        return float(np.median(peaks))

    def upper(self, values: FloatArray, step_seconds: float) -> tuple[float, float]:
        """(80%, 95%) bounds of the peak of the window after `values`."""
        base = self.predicted_peak(values, step_seconds)
        return base * float(np.exp(self.log_ratio_80)), base * float(np.exp(self.log_ratio_95))

    def describe(self) -> str:
        what = "yesterday's peak" if self.days == 1 else f"the median of the last {self.days} daily peaks"
        return (
            f"next-peak bound: {what} x {np.exp(self.log_ratio_95):.2f} (95%), the quantile of its misses on "
            f"every window of {self.window_days:.1f} days of history (in-sample over-provision "
            f"{self.over_provision:.0%})"
        )
