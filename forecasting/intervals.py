"""Prediction intervals from observed forecast errors (empirical quantiles by horizon bucket).

Errors are taken relative to the forecast level, because demand errors scale with demand (a 5% busier
day moves the noon peak by 5% and the 3 a.m. trough by almost nothing):

    u = (actual - forecast) / (forecast + floor),   floor = 10% of the mean of the history

For each horizon bucket (first hour, 1-6 h, 6-24 h, 1-3 days, beyond) the 2.5%, 10%, 90% and 97.5%
quantiles of the errors give the bands:  bound = forecast + q x (forecast + floor), clipped at zero.

Errors within one backtest window are not independent: a busy day is busy all day, so each window
carries one draw of a window-level offset b (the mean of its u). A handful of windows is a handful of
draws, whose empirical quantiles are too narrow (3 windows contain the next one only half the time).
So u = b + e is split: the within-window part e is plentiful and used as observed; the offset of the
next window is predicted from the k observed ones as mean(b) + sd(b) x sqrt(1 + 1/k) x t(k - 1), the
Student-t prediction interval for one more draw. The bands are quantiles of b_new + e. With one window
only the pooled errors are used. Coverage is checked in the backtest by calibrating on the other windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from forecasting.series import FloatArray

__all__ = ["Bands", "IntervalCalibration", "PeakCalibration", "conformal_quantiles", "relative_floor"]

_BUCKET_EDGES_S = (3600.0, 6 * 3600.0, 86_400.0, 3 * 86_400.0)
_QUANTILES = (0.025, 0.10, 0.90, 0.975)
_FLOOR_FRACTION = 0.10
_SHORT_HISTORY_FLOOR_FRACTION = 1.0
_SHORT_HISTORY_DAYS = 2.0
_GRID = (np.arange(100) + 0.5) / 100  # both parts of b_new + e are summarised by 100 equal-probability points


def conformal_quantiles(errors: FloatArray) -> FloatArray:
    """The 2.5/10/90/97.5% quantiles with the split-conformal finite-sample correction.

    For the next error to fall below the upper bound with probability at least p when the bound is
    taken from n exchangeable past errors, the bound is their ceil((n + 1) p)-th smallest, i.e. the
    (n + 1) p / n quantile (Vovk et al. 2005; Lei et al. 2018); symmetrically for the lower bounds.
    Negligible for hundreds of errors, it widens the bands of short histories, whose sample is small.
    """
    ordered = np.sort(errors[np.isfinite(errors)])
    n = ordered.size
    ranks = [  # 1-based order statistics; the 1e-9 keeps (n + 1) p = 18.000000000000004 at 18
        min(n, math.ceil((n + 1) * p - 1e-9)) if p > 0.5 else max(1, math.floor((n + 1) * p + 1e-9)) for p in _QUANTILES
    ]
    return np.asarray(ordered[np.array(ranks) - 1], dtype=np.float64)


def relative_floor(history: FloatArray, evidence_days: float = float("inf")) -> float:
    """10% of the mean absolute history: keeps relative errors finite where demand is near zero.

    With under 2 days of errors (`evidence_days`: the days the backtest windows span, 0 without a
    backtest) the floor is the whole mean: the errors then come from one day, whose references are often
    near zero where they matter (a service ramping up, an outage, a night), and an error relative to a
    near-zero forecast, applied at the peak, made bounds 4-15x the observed peak. In units of the mean
    level, such an error adds about its own size at the peak instead of multiplying it. Once two days of
    windows show how errors scale with the level, the proportional model is kept.
    """
    fraction = _SHORT_HISTORY_FLOOR_FRACTION if evidence_days < _SHORT_HISTORY_DAYS else _FLOOR_FRACTION
    return max(fraction * float(np.mean(np.abs(history))), 1e-9)


@dataclass(frozen=True, eq=False)
class Bands:
    """80% and 95% bounds around a mean path; lower <= mean <= upper, all >= 0."""

    lower_80: FloatArray
    upper_80: FloatArray
    lower_95: FloatArray
    upper_95: FloatArray


@dataclass(frozen=True)
class IntervalCalibration:
    """Quantiles of relative errors, per horizon bucket; `source` says where the errors came from."""

    floor: float
    bucket_starts: tuple[int, ...]
    quantiles: tuple[tuple[float, float, float, float], ...]
    samples: int
    source: str

    @classmethod
    def from_errors(
        cls,
        actual: FloatArray,
        forecast: FloatArray,
        *,
        floor: float,
        step_seconds: float,
        source: str = "backtest",
        min_bucket_samples: int = 30,
    ) -> IntervalCalibration:
        """From (origins x horizon) arrays of actuals and forecasts made at each origin."""
        actual2d, forecast2d = np.atleast_2d(actual), np.atleast_2d(forecast)
        relative = (actual2d - forecast2d) / (np.maximum(forecast2d, 0.0) + floor)  # NaN: a filled gap
        relative = relative[np.isfinite(relative).any(axis=1)]
        if relative.size == 0:
            raise ValueError("no observed step to calibrate intervals on")
        horizon = relative.shape[1]
        starts = _bucket_starts(horizon, step_seconds, relative.shape[0], min_bucket_samples)
        stops = (*starts[1:], horizon)
        offsets = np.nanmean(relative, axis=1)
        next_offsets = _next_window_offsets(offsets)
        quantiles = []
        for a, b in zip(starts, stops, strict=True):
            block = relative[:, a:b] if next_offsets is None else relative[:, a:b] - offsets[:, None]
            observed = block[np.isfinite(block)]
            if observed.size == 0:  # a bucket that only held filled gaps: the pooled errors stand in
                observed = (relative - (0.0 if next_offsets is None else offsets[:, None]))[np.isfinite(relative)]
            if next_offsets is None:
                q = conformal_quantiles(observed)
            else:  # the Student-t offsets already carry the finite-sample widening
                q = np.quantile((next_offsets[:, None] + np.quantile(observed, _GRID)[None, :]).ravel(), _QUANTILES)
            quantiles.append((float(q[0]), float(q[1]), float(q[2]), float(q[3])))
        return cls(floor, starts, tuple(quantiles), int(np.isfinite(relative).sum()), source)

    @classmethod
    def from_relative_errors(
        cls, relative: FloatArray, *, floor: float, source: str, inflation: float = 1.0
    ) -> IntervalCalibration:
        """One bucket for all horizons, from relative errors computed by the caller (fallback models)."""
        q = conformal_quantiles(relative) * inflation
        return cls(floor, (0,), ((float(q[0]), float(q[1]), float(q[2]), float(q[3])),), int(relative.size), source)

    def bands(self, mean: FloatArray) -> Bands:
        """Bounds for a mean path whose element i is i + 1 steps ahead."""
        bucket = np.searchsorted(np.asarray(self.bucket_starts), np.arange(mean.size), side="right") - 1
        table = np.asarray(self.quantiles)[bucket]
        scale = np.maximum(mean, 0.0) + self.floor

        def bound(column: int, lower: bool) -> FloatArray:
            raw = mean + table[:, column] * scale
            side = np.minimum(raw, mean) if lower else np.maximum(raw, mean)
            return np.asarray(np.maximum(side, 0.0), dtype=np.float64)

        return Bands(bound(1, True), bound(2, False), bound(0, True), bound(3, False))


@dataclass(frozen=True)
class PeakCalibration:
    """Bounds for the highest demand of the next window, from how past windows' peaks beat the forecast's.

    Advice provisions for the peak, and the peak of a day is the maximum of many noisy points: it lies
    above the forecast's smooth maximum more often than any single point lies above its band. So the
    peak gets its own calibration: for each backtest window i, r_i = log(max actual / max forecast); the
    next window's r is predicted as mean(r) + sd(r) x sqrt(1 + 1/k) x t(k - 1) (Student-t, k windows),
    and the bound is max forecast x exp(that quantile). The bound is one-sided (a capacity is provisioned
    for the peak, nothing is provisioned below it): the 95% bound is the 95% quantile, covered on 95% of
    days. Windows are taken every few hours, so they overlap and share days: k and the degrees of freedom
    count the days they span, not the windows. `reference` names the model whose peak is scaled (the
    one whose peak misses scatter least, see the pipeline) and `sd` that scatter.
    """

    reference: str
    log_ratio_80: float
    log_ratio_95: float
    sd: float
    windows: int

    @classmethod
    def from_windows(
        cls, reference: str, actual: FloatArray, forecast: FloatArray, *, peak_steps: int, days_spanned: float
    ) -> PeakCalibration | None:
        """None when fewer than 2 windows have a positive peak on both sides."""
        observed = np.atleast_2d(actual)[:, :peak_steps]
        actual_peak = np.where(np.isfinite(observed), observed, -np.inf).max(axis=1)
        forecast_peak = np.atleast_2d(forecast)[:, :peak_steps].max(axis=1)
        valid = (actual_peak > 0) & (forecast_peak > 0)
        if int(valid.sum()) < 2:
            return None
        ratios = np.log(actual_peak[valid] / forecast_peak[valid])
        k = ratios.size
        days = max(2.0, min(k, days_spanned))
        sd = float(np.std(ratios, ddof=1))
        scale = sd * np.sqrt(1.0 + 1.0 / days)
        q80, q95 = (float(ratios.mean() + scale * student_t.ppf(q, df=days - 1.0)) for q in (0.80, 0.95))
        return cls(reference, q80, q95, sd, k)

    def upper(self, forecast_peak: float) -> tuple[float, float]:
        """(80%, 95%) bounds of the next window's peak; never below the forecast's own peak."""
        return (
            max(forecast_peak, forecast_peak * float(np.exp(self.log_ratio_80))),
            max(forecast_peak, forecast_peak * float(np.exp(self.log_ratio_95))),
        )


def _next_window_offsets(offsets: FloatArray) -> FloatArray | None:
    """Equal-probability points of the Student-t prediction of one more window offset (None if k < 2)."""
    k = offsets.size
    if k < 2:
        return None
    scale = float(np.std(offsets, ddof=1)) * np.sqrt(1.0 + 1.0 / k)
    return np.asarray(offsets.mean() + scale * student_t.ppf(_GRID, df=k - 1), dtype=np.float64)


def _bucket_starts(horizon: int, step_seconds: float, rows: int, min_samples: int) -> tuple[int, ...]:
    """0-based first index of each bucket; an edge starts a bucket only if both sides get `min_samples`."""
    edges = sorted({int(np.ceil(edge / step_seconds)) for edge in _BUCKET_EDGES_S})
    starts = [0]
    for edge in edges:
        if edge <= starts[-1] or edge >= horizon:
            continue
        if (edge - starts[-1]) * rows >= min_samples and (horizon - edge) * rows >= min_samples:
            starts.append(edge)
    return tuple(starts)
