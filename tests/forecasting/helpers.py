"""Builders of synthetic series with known answers, shared by the forecasting tests."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from forecasting import Series, TrafficShape, synthetic_traffic

STEP = 300.0
DAY = 288
WEEK = 7 * DAY


def traffic(
    days: float,
    *,
    seed: int = 0,
    level_noise: bool = False,
    poisson: bool = True,
    bursts: bool = False,
    weekend_fraction: float = 0.3,
    growth_per_week: float = 0.0,
    peak_rps: float = 40.0,
    start: datetime | None = None,
    timezone: str = "Europe/Paris",
) -> Series:
    """Synthetic LLM traffic from Monday 2024-04-01 local midnight; every realism switch explicit."""
    shape = TrafficShape(
        peak_rps=peak_rps,
        daily_level_sigma=0.04 if level_noise else 0.0,
        bursts_per_week=2.0 if bursts else 0.0,
        rate_window_seconds=60.0 if poisson else 1e9,
        weekend_fraction=weekend_fraction,
        growth_per_week=growth_per_week,
    )
    return synthetic_traffic(days, start=start, timezone=timezone, shape=shape, seed=seed)


def split(series: Series, history_steps: int) -> tuple[Series, np.ndarray]:
    """(the first `history_steps` points as a Series, the values after them)."""
    head = Series(series.timestamps_s[:history_steps], series.values[:history_steps], series.name)
    return head, np.asarray(series.values[history_steps:])


def with_values(series: Series, values: np.ndarray) -> Series:
    return Series(series.timestamps_s, values, series.name)


def mae(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.abs(np.asarray(a) - np.asarray(b))))
