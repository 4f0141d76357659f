"""Synthetic LLM-serving demand, for tests, benchmarks and demos.

Real request traffic to an internal LLM endpoint follows office life: quiet nights, a morning ramp
that starts around 08:00 local time, a business-hours plateau with a lunch dip, an evening tail, and
weekends at about 30% of a weekday. On top of that: day-to-day level variation, slow growth, Poisson
noise on the counted requests and occasional bursts (a batch job, a demo). This module imitates all of
that deterministically from a seed, so known answers can be asserted.

The value of each point is the request rate in req/s measured over `rate_window_seconds` (as a
Prometheus `rate(x[1m])` sampled every step would be): counts ~ Poisson(rate x window) / window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
from numpy.typing import NDArray

from forecasting.series import Series

__all__ = ["TrafficShape", "daily_profile", "synthetic_traffic"]

_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class TrafficShape:
    """Parameters of the synthetic traffic; rates in req/s, times as local hours (float)."""

    peak_rps: float = 40.0
    night_fraction: float = 0.06
    ramp_start_hour: float = 8.0
    ramp_hours: float = 1.5
    evening_start_hour: float = 17.5
    evening_hours: float = 3.0
    lunch_hour: float = 12.75
    lunch_depth: float = 0.18
    weekend_fraction: float = 0.30
    daily_level_sigma: float = 0.04
    growth_per_week: float = 0.01
    bursts_per_week: float = 2.0
    burst_gain: float = 0.5
    rate_window_seconds: float = 60.0


def _smoothstep(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """0 below 0, 1 above 1, and a smooth cubic in between (a realistic ramp shape)."""
    c = np.clip(x, 0.0, 1.0)
    return c * c * (3.0 - 2.0 * c)


def daily_profile(local_hours: NDArray[np.float64], shape: TrafficShape) -> NDArray[np.float64]:
    """Weekday demand as a fraction of the peak, for local clock hours in [0, 24).

    profile = night + (1 - night) x ramp_up(h) x (1 - ramp_down(h)) x (1 - lunch_dip(h))
    """
    up = _smoothstep((local_hours - shape.ramp_start_hour) / shape.ramp_hours)
    down = _smoothstep((local_hours - shape.evening_start_hour) / shape.evening_hours)
    lunch = shape.lunch_depth * np.exp(-0.5 * ((local_hours - shape.lunch_hour) / 0.45) ** 2)
    day = up * (1.0 - down) * (1.0 - lunch)
    return shape.night_fraction + (1.0 - shape.night_fraction) * day


def _local_calendar(
    timestamps_s: NDArray[np.float64], tz: ZoneInfo
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Local clock hour, weekday (Mon=0) and local day index for each timestamp."""
    hours = np.empty(timestamps_s.size)
    weekdays = np.empty(timestamps_s.size, dtype=np.int64)
    days = np.empty(timestamps_s.size, dtype=np.int64)
    for i, ts in enumerate(timestamps_s):
        local = datetime.fromtimestamp(float(ts), tz)
        hours[i] = local.hour + local.minute / 60.0 + local.second / 3600.0
        weekdays[i] = local.weekday()
        days[i] = local.toordinal()
    return hours, weekdays, days - days.min()


def _bursts(timestamps_s: NDArray[np.float64], shape: TrafficShape, rng: np.random.Generator) -> NDArray[np.float64]:
    """Multiplicative burst factor: a few 10-40 minute surges, placed uniformly at random."""
    factor = np.ones(timestamps_s.size)
    span_s = float(timestamps_s[-1] - timestamps_s[0]) if timestamps_s.size > 1 else 0.0
    n_bursts = rng.poisson(shape.bursts_per_week * span_s / (7 * _SECONDS_PER_DAY))
    for _ in range(n_bursts):
        start = timestamps_s[0] + rng.uniform(0.0, span_s)
        length_s = rng.uniform(600.0, 2400.0)
        gain = shape.burst_gain * rng.uniform(0.5, 1.0)
        inside = (timestamps_s >= start) & (timestamps_s < start + length_s)
        factor[inside] += gain
    return factor


def synthetic_traffic(
    days: float,
    *,
    step_seconds: float = 300.0,
    start: datetime | None = None,
    timezone: str = "Europe/Paris",
    shape: TrafficShape | None = None,
    seed: int = 0,
    name: str = "synthetic",
) -> Series:
    """A regular series of `days` of LLM request rate (req/s) starting at local midnight of `start`.

    `start` defaults to Monday 2024-04-01 00:00 in `timezone` (no DST change in the following months).
    """
    shape = shape or TrafficShape()
    tz = ZoneInfo(timezone)
    begin = (start or datetime(2024, 4, 1)).replace(tzinfo=tz)
    n = round(days * _SECONDS_PER_DAY / step_seconds)
    timestamps_s = begin.timestamp() + step_seconds * np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(seed)

    hours, weekdays, day_index = _local_calendar(timestamps_s, tz)
    base = daily_profile(hours, shape)
    weekend = weekdays >= 5
    base[weekend] = shape.night_fraction + (base[weekend] - shape.night_fraction) * shape.weekend_fraction
    daily_level = np.exp(rng.normal(0.0, shape.daily_level_sigma, size=int(day_index.max()) + 1))
    growth = 1.0 + shape.growth_per_week * (timestamps_s - timestamps_s[0]) / (7 * _SECONDS_PER_DAY)
    rate = shape.peak_rps * base * daily_level[day_index] * growth * _bursts(timestamps_s, shape, rng)

    window = shape.rate_window_seconds
    values = rng.poisson(rate * window) / window
    return Series(timestamps_s=timestamps_s, values=values.astype(np.float64), name=name)
