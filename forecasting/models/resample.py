"""Helpers shared by the statsmodels-backed models: decimation, upsampling, a log transform.

Why decimate: STL/MSTL and Holt-Winters cost grows with the number of points and the seasonal period
(MSTL on 28 days at 5 minutes with a weekly period of 2016 steps takes ~20 s). Demand is smooth over a
quarter of an hour, so the models are fitted on 15-minute block means (period 96 per day) and the forecast
is interpolated back to the series step; the interpolation error on a morning ramp is ~0.2% of the mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forecasting.series import FloatArray

__all__ = ["LogTransform", "block_means", "decimation_factor", "upsample"]


def decimation_factor(steps_per_day: int, target_steps_per_day: int) -> int:
    """Smallest divisor k of the daily period with steps_per_day / k <= target (1 when already coarse).

    A divisor keeps the coarse daily (and weekly) periods whole numbers of blocks.
    """
    if steps_per_day <= target_steps_per_day:
        return 1
    for k in range(2, steps_per_day + 1):
        if steps_per_day % k == 0 and steps_per_day // k <= target_steps_per_day:
            return k
    return 1


def block_means(values: FloatArray, factor: int) -> FloatArray:
    """Means of consecutive blocks of `factor` values, aligned to the end (leading remainder dropped)."""
    if factor == 1:
        return values.copy()
    usable = values.size // factor * factor
    return np.asarray(values[values.size - usable :].reshape(-1, factor).mean(axis=1), dtype=np.float64)


def upsample(coarse_forecast: FloatArray, factor: int, horizon_steps: int, last_block: float) -> FloatArray:
    """Fine-step forecast from block-mean forecasts by linear interpolation between block centres.

    Fine step j (1-based after the end) sits j + (factor - 1) / 2 fine steps after the last observed
    block's centre, and forecast block b's centre sits b x factor after it, so the path starts from the
    last observed block mean and passes through each forecast block's mean at its centre.
    """
    if factor == 1:
        return np.asarray(coarse_forecast[:horizon_steps], dtype=np.float64)
    centres = np.concatenate(([0.0], factor * np.arange(1, coarse_forecast.size + 1, dtype=np.float64)))
    knots = np.concatenate(([last_block], coarse_forecast))
    fine = (factor - 1) / 2.0 + np.arange(1, horizon_steps + 1, dtype=np.float64)
    return np.asarray(np.interp(fine, centres, knots), dtype=np.float64)


@dataclass(frozen=True)
class LogTransform:
    """z = log(y + offset), offset = `fraction` x mean(y) (floored at 1e-9) so zeros are allowed.

    Traffic changes multiplicatively (a new customer scales every hour of the day), which a log turns
    into additive shifts that the decompositions handle; the offset keeps quiet nights from dominating.
    """

    offset: float

    @classmethod
    def for_values(cls, values: FloatArray, fraction: float = 0.02) -> LogTransform:
        return cls(offset=max(fraction * float(np.mean(np.maximum(values, 0.0))), 1e-9))

    def forward(self, values: FloatArray) -> FloatArray:
        return np.asarray(np.log(np.maximum(values, 0.0) + self.offset), dtype=np.float64)

    def inverse(self, values: FloatArray) -> FloatArray:
        return np.asarray(np.maximum(np.exp(values) - self.offset, 0.0), dtype=np.float64)
