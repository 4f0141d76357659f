"""How far a forecast's errors spread at each level of demand: the unit the interval quantiles are taken in.

A rate of requests over a step of `d` seconds is a count over d, and a count's noise is at least Poisson:
variance r / d, a relative spread 1 / sqrt(r d) that is large at a quiet hour and small at a busy one. On
top of it, what the model misses (a busier day, a ramp that came early) grows with the level. So

    s(f)^2 = poisson x max(f, resolution) + proportional x (f + floor)^2,   f = max(forecast, 0)

and the errors are read as u = (actual - forecast) / s(forecast), whose quantiles hold at any level; a bound
is forecast + q x s(forecast). The two coefficients are fitted on the backtest's own errors (`fit`). The
resolution is the smallest positive demand the errors show (one request in a step, for a count read as a
rate; at most the floor): a forecast of 0 says under one request per step, not that none can come, and the
errors there are read at that rate's Poisson spread (at 0 they would be divided by nothing).

Why not errors relative to the level alone (s = f + floor, `relative`, what a history too short to fit on
still uses): pooled over a day, the quiet hours' relative errors (Poisson at a tenth of the level) were
applied at the busy ones. On fleetsim's daily profile the long-context tier's afternoon errors spread 5%
(1 / sqrt(2.4 req/s x 300 s), twice, for yesterday's copy), while its 80% bound stood 10-35% above the
forecast (8-10% in these units). On the real series the fit takes what their errors show (on ServeGen's
first hours a square-root term far above Poisson's, an overdispersed count; relative errors where the
levels vary little), and the bands cover as before or better (benchmarks/bench_forecast_real.py: the 80%
band 1 h ahead covers 77.1% on ServeGen and 79.5% on NAB, 74.3% and 78.1% relative to the level).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forecasting.series import FloatArray

__all__ = ["ErrorScale", "informative"]

_MIN_LEVEL_SPAN = 2.0  # below this ratio of high to low levels the two terms cannot be told apart
_ITERATIONS = 4  # reweighting rounds of the variance fit (it settles in two or three)
_MAX_WEIGHT = 1e6  # of one squared error against the mean's, in the reweighting


@dataclass(frozen=True)
class ErrorScale:
    """s(f) = sqrt(poisson x max(f, resolution) + proportional x (f + floor)^2), f the forecast clipped at 0."""

    floor: float
    poisson: float = 0.0
    proportional: float = 1.0
    resolution: float = 0.0

    @classmethod
    def relative(cls, floor: float) -> ErrorScale:
        """s = f + floor: errors relative to the level, kept finite near zero by the floor."""
        return cls(floor)

    def of(self, forecast: FloatArray) -> FloatArray:
        level = np.maximum(forecast, 0.0)
        variance = self.poisson * np.maximum(level, self.resolution) + self.proportional * (level + self.floor) ** 2
        return np.asarray(np.sqrt(np.maximum(variance, 1e-18)), dtype=np.float64)

    def describe(self) -> str:
        if self.poisson == 0.0 and self.proportional == 1.0:
            return f"relative to the level + {self.floor:.3g}"
        return (
            f"in units of sqrt({self.poisson:.3g} x max(level, {self.resolution:.3g}) + {self.proportional:.3g} x "
            f"(level + {self.floor:.3g})^2)"
        )

    @classmethod
    def fit(cls, actual: FloatArray, forecast: FloatArray, floor: float) -> ErrorScale:
        """The two coefficients by weighted least squares of the squared errors on max(f, resolution) and
        (f + floor)^2, each weighted by the inverse square of its fitted variance (a squared error's spread
        grows with its variance, so unweighted the busiest points alone decide), both kept >= 0.

        Steps where the forecast and the actual are both exactly zero say nothing about the spread at any
        level (no demand was expected, none came) and are left out. Falls back to `relative` when the levels
        span less than 2x (one level cannot tell the terms apart) or too few errors are left."""
        f = np.maximum(np.asarray(forecast, dtype=np.float64), 0.0)
        e = np.asarray(actual, dtype=np.float64) - np.asarray(forecast, dtype=np.float64)
        seen = informative(actual, forecast)
        f, e = f[seen], e[seen]
        if f.size < 10 or float(np.max(f) + floor) < _MIN_LEVEL_SPAN * float(np.min(f) + floor):
            return cls.relative(floor)
        observed = np.asarray(actual, dtype=np.float64)[seen]
        positive = observed[observed > 0.0]
        resolution = min(float(positive.min()), floor) if positive.size else floor
        columns = np.stack([np.maximum(f, resolution), (f + floor) ** 2], axis=1)
        target = e * e
        coef = _nonnegative_fit(columns, target, np.ones(f.size))
        for _ in range(_ITERATIONS):
            variance = columns @ coef
            if not np.all(variance > 0.0):
                break
            # capped: a point whose fitted variance is near 0 would otherwise take all the weight
            coef = _nonnegative_fit(columns, target, np.minimum((variance.mean() / variance) ** 2, _MAX_WEIGHT))
        if not np.all(np.isfinite(coef)) or not np.any(coef > 0.0):
            return cls.relative(floor)
        return cls(floor, float(coef[0]), float(coef[1]), resolution)


def informative(actual: FloatArray, forecast: FloatArray) -> np.ndarray:
    """Steps with an observed actual that are not a zero forecast met by zero demand."""
    a, f = np.asarray(actual, dtype=np.float64), np.asarray(forecast, dtype=np.float64)
    return np.asarray(np.isfinite(a) & np.isfinite(f) & ~((a == 0.0) & (f <= 0.0)), dtype=bool)


def _nonnegative_fit(columns: FloatArray, target: FloatArray, weights: FloatArray) -> FloatArray:
    """Weighted least squares of `target` on two `columns` with both coefficients >= 0 (the 2x2 normal
    equations; where one comes out negative, the better of the two one-column fits)."""
    wx = columns * weights[:, None]
    gram, rhs = columns.T @ wx, wx.T @ target
    det = float(gram[0, 0] * gram[1, 1] - gram[0, 1] ** 2)
    if det > 1e-12 * float(gram[0, 0] * gram[1, 1]):
        both = np.linalg.solve(gram, rhs)
        if np.all(both >= 0.0):
            return np.asarray(both, dtype=np.float64)
    best, best_loss = np.zeros(2), np.inf
    for j in range(2):
        if gram[j, j] <= 0.0:
            continue
        coef = np.zeros(2)
        coef[j] = max(0.0, float(rhs[j] / gram[j, j]))
        residual = target - columns @ coef
        loss = float(np.sum(weights * residual**2))
        if loss < best_loss:
            best, best_loss = coef, loss
    return best
