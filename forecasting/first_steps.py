"""The first hour's bands, each step on its own, by whether the forecast path rises, falls or holds over it.

Why each step: errors grow with the lead inside the first hour (10 minutes ahead demand is mostly where it
is now, an hour ahead it has moved), and one quantile for the hour is too wide at the first step and too
narrow at the last. The first hour is where the advice reads the bound (a cold start and the margin ahead).
The first hour of every backtest window at every hour (`anchoring.first_hour_paths`) gives hundreds of
errors per step. They are read in the units of their own `ErrorScale` (fitted on these blocks: at short
leads the Poisson term weighs more than over a day), and each step's spread relative to the hour's, its
`lead` factor (the mean |error| at the step over that of the hour), turns one set of quantiles into one per
step: u / lead is pooled over the hour's steps, its conformal quantiles taken, and multiplied back by each
step's lead. A group of 30 blocks then has 360 errors for its quantiles, not 30 per step.

Why by the path's move: a ramp hour misses by more than a flat one (when the ramp comes, how steep), and a
morning ramp is two or three of a day's 24 hours: pooled, its misses are the tail a 90% bound leaves out,
at the very hour the advice scales for. So the blocks are split by the path's move over the hour in units
of one step's error spread at its level, m = (path[last] - path[0]) / (s(mean of the path) x sigma), sigma
the robust standard deviation of the errors u (median |u| / 0.6745, which the ramps' misses do not move): a
path that moves by more than twice that (`_SIGNIFICANT_MOVE`, about what noise alone exceeds one time in
twenty) rises or falls, any other holds. Each group has its own quantiles (Mondrian conformal prediction:
coverage holds within each group, Vovk et al. 2005), and a forecast's first hour takes its own path's.

Why not terciles of the moves (what this did before): a third of the blocks were called rising whatever
they did. On fleetsim's daily profile a third of the hours had no demand (a move of exactly 0), so every
hour with a positive move, noise included, was "rising" beside the morning ramps, and a flat afternoon
whose path (yesterday's copy) ended a little higher than it began took the ramps' bound: 10-35% above the
forecast where its own hours missed by 5%.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from forecasting.conformal import Four, conformal_quantiles, four
from forecasting.error_scale import ErrorScale, informative
from forecasting.series import FloatArray

__all__ = ["FirstSteps"]

_SIGNIFICANT_MOVE = 2.0  # in units of one step's error spread: beyond it, the path moves by more than noise


@dataclass(frozen=True)
class FirstSteps:
    """Quantiles for each of the first steps (the first hour), in units of `scale`, by the path's move."""

    scale: ErrorScale
    lead: tuple[float, ...]  # each step's spread over the hour's
    quantiles: tuple[tuple[Four, ...], ...]  # [falling, holding, rising][step]
    samples: int  # blocks
    sigma: float  # the robust standard deviation of u: a move's unit with the scale
    groups: tuple[int, int, int]  # blocks per group (one with under `min_step_samples` errors in all takes the pooled)

    @classmethod
    def from_blocks(
        cls, actual: FloatArray, forecast: FloatArray, floor: float, min_step_samples: int
    ) -> FirstSteps | None:
        """From (blocks x steps) actuals and the paths forecast for them; None when a step has fewer than
        `min_step_samples` informative errors."""
        if actual.ndim != 2 or actual.shape[1] == 0:
            return None
        seen = informative(actual, forecast)
        if int(seen.sum(axis=0).min()) < min_step_samples:
            return None
        scale = ErrorScale.fit(actual, forecast, floor)
        u = np.where(seen, (actual - forecast) / scale.of(forecast), np.nan)
        lead = _lead(u)
        pooled = _table(u, lead)
        sigma = _robust_sd(u)
        group = _group(_moves(forecast, scale, sigma))
        counts = tuple(int(np.count_nonzero(group == g)) for g in range(3))
        quantiles = tuple(
            _table(u[group == g], lead) if np.isfinite(u[group == g]).sum() >= min_step_samples else pooled
            for g in range(3)
        )
        lead_factors = tuple(float(x) for x in lead)
        return cls(scale, lead_factors, quantiles, actual.shape[0], sigma, (counts[0], counts[1], counts[2]))

    def table(self, mean: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(steps x 4) quantiles and the scale of each step for a path whose first element is one step ahead."""
        steps = min(len(self.lead), mean.size)
        path = np.asarray(mean[: len(self.lead)], dtype=np.float64)
        g = int(_group(_moves(path[None, :], self.scale, self.sigma))[0]) if path.size else 1
        return np.asarray(self.quantiles[g], dtype=np.float64)[:steps], self.scale.of(path[:steps])

    def describe(self) -> str:
        falling, holding, rising = self.groups
        return (
            f"the first {len(self.lead)} steps each from {self.samples} hour blocks ({rising} rising, {holding} "
            f"holding, {falling} falling by more than {_SIGNIFICANT_MOVE:g} error spreads), errors "
            f"{self.scale.describe()}"
        )


def _lead(u: FloatArray) -> FloatArray:
    """Each step's mean |u| over the hour's (1 where the hour has no spread)."""
    per_step = np.nanmean(np.abs(u), axis=0)
    overall = float(np.nanmean(np.abs(u)))
    if not overall > 0.0:
        return np.ones(u.shape[1])
    return np.asarray(np.maximum(per_step / overall, 1e-6), dtype=np.float64)


def _table(u: FloatArray, lead: FloatArray) -> tuple[Four, ...]:
    """The conformal quantiles of u / lead over all steps, times each step's lead."""
    q = conformal_quantiles((u / lead[None, :]).ravel())
    return tuple(four(q * factor) for factor in lead)


def _robust_sd(u: FloatArray) -> float:
    """median |u| / 0.6745: a normal's standard deviation from its median absolute value (1 if no spread)."""
    finite = np.abs(u[np.isfinite(u)])
    sd = float(np.median(finite)) / 0.6745 if finite.size else 0.0
    return sd if sd > 0.0 else 1.0


def _moves(paths: FloatArray, scale: ErrorScale, sigma: float) -> FloatArray:
    """Each path's move from its first to its last step, in units of one step's error spread at its mean level."""
    spread = scale.of(np.mean(paths, axis=1)) * sigma
    return np.asarray((paths[:, -1] - paths[:, 0]) / spread, dtype=np.float64)


def _group(moves: FloatArray) -> NDArray[np.intp]:
    """0 falling, 2 rising (beyond the significant move either way), 1 holding."""
    return np.where(moves < -_SIGNIFICANT_MOVE, 0, np.where(moves > _SIGNIFICANT_MOVE, 2, 1))
