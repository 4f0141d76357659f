"""Demand as irregular as production: day-to-day level and shape, a trend, regime shifts, holidays; or a
real rate trace as the demand itself.

`Irregularity.multiplier(t)` scales the weekly profile. Every draw is a hash of (seed, day), like the
bursts, so the live emulator and the backfill see the same days. In log terms, for day d:

    log m(d) = level(d) + trend(d) + shift(d) + holiday(d),   and within the day the part of the profile
    above its night floor is scaled by exp(shape(d)) (a taller or flatter peak on the same night)

- level: AR(1) across days with sd `level_sd` and lag-one correlation `level_memory`, written as a
  truncated moving average of hashed innovations (30 days: memory^30 is negligible), so it needs no state;
- trend: a triangle wave of slope +-`trend_per_day` and period `trend_period_days` (growth, then decline:
  a trend over any two weeks, while a month-long backfill stays near the plan's level);
- shift: on a day with probability `shift_per_day`, a step of sd `shift_sd` that lasts 3 to 14 days;
- holiday: a business weekday with probability `holiday_per_day` runs at `holiday_level`.

Defaults, from the two real 14-day series (/work/shared/data/traces, daily means of ServeGen's rate and
the NAB load balancer's count): the sd of log daily means around their line is 0.145 and 0.198 (0.15
here); their lag-one autocorrelation 0.20 and 0.55 (0.4); the sd of log(daily peak / daily mean) 0.13
and 0.24 (0.15); their trends +4.4% and -0.9% a day (+-2% here, so months of backfill stay within a
plan's headroom); ServeGen's largest day-over-day step is x1.47 in 14 days (shifts: one in 14 days, sd
0.2). Holidays: about one business day a month.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["DEFAULT_IRREGULARITY", "Irregularity", "RateTrace", "rate_trace_demand"]

_DAY = 86_400.0
_MEMORY_DAYS = 30
_MASK64 = (1 << 64) - 1


def _uniform(seed: int, day: int, stream: int) -> float:
    """A uniform draw in [0, 1) from (seed, day, stream): splitmix64 of a mixed key."""
    z = (seed * 0x9E3779B97F4A7C15 + day * 0xBF58476D1CE4E5B9 + stream * 0x94D049BB133111EB) & _MASK64
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) / 2.0**64


def _normal(seed: int, day: int, stream: int) -> float:
    u = min(max(_uniform(seed, day, stream), 1e-12), 1.0 - 1e-12)
    return math.sqrt(2.0) * _erfinv(2.0 * u - 1.0)


def _erfinv(y: float) -> float:
    """Inverse error function (Winitzki's approximation refined by two Newton steps)."""
    a = 0.147
    ln = math.log(1.0 - y * y)
    first = 2.0 / (math.pi * a) + ln / 2.0
    x = math.copysign(math.sqrt(math.sqrt(first * first - ln / a) - first), y)
    for _ in range(2):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


@dataclass(frozen=True)
class Irregularity:
    """Day-to-day irregularity of demand (see the module docstring); all sizes are in log units."""

    level_sd: float = 0.15
    level_memory: float = 0.4
    shape_sd: float = 0.15
    trend_per_day: float = 0.02
    trend_period_days: float = 56.0
    shift_per_day: float = 1.0 / 14.0
    shift_sd: float = 0.2
    holiday_per_day: float = 1.0 / 30.0
    holiday_level: float = 0.35
    seed: int = 0

    def _level(self, day: int) -> float:
        phi = self.level_memory
        scale = self.level_sd * math.sqrt(max(1.0 - phi * phi, 0.0))
        return scale * sum(phi**k * _normal(self.seed, day - k, 1) for k in range(_MEMORY_DAYS))

    def _trend(self, day: int) -> float:
        period = self.trend_period_days
        phase = (day % period) / period  # 0..1: up for the first half, down for the second
        return self.trend_per_day * period / 2.0 * (1.0 - abs(2.0 * phase - 1.0)) - self.trend_per_day * period / 4.0

    def _shift(self, day: int) -> float:
        total = 0.0
        for start in range(day - 13, day + 1):
            if _uniform(self.seed, start, 2) < self.shift_per_day:
                lasts = 3 + int(_uniform(self.seed, start, 3) * 12)
                if day < start + lasts:
                    total += self.shift_sd * _normal(self.seed, start, 4)
        return total

    def day_log_level(self, day: int) -> float:
        """log of the whole day's multiplier (holidays aside): level + trend + shift."""
        return self._level(day) + self._trend(day) + self._shift(day)

    def is_holiday(self, day: int) -> bool:
        return _uniform(self.seed, day, 5) < self.holiday_per_day

    def shape_factor(self, day: int) -> float:
        """How much taller (> 1) or flatter (< 1) than the plan's the day's peak above the night runs."""
        return math.exp(self.shape_sd * _normal(self.seed, day, 6))

    def apply(self, t_unix: float, rate: float, night_rps: float, business_day: bool) -> float:
        """`rate` of the regular profile at t made irregular: shape above `night_rps`, then the day's level."""
        level, shape, holiday = _day_terms(self, math.floor(t_unix / _DAY))
        if business_day and holiday:
            level *= self.holiday_level
        return (min(rate, night_rps) + max(rate - night_rps, 0.0) * shape) * level


@lru_cache(maxsize=4096)
def _day_terms(irregularity: Irregularity, day: int) -> tuple[float, float, bool]:
    """(level multiplier, shape factor, holiday) of one day: 45 hashes, computed once per day."""
    return (
        math.exp(irregularity.day_log_level(day)),
        irregularity.shape_factor(day),
        irregularity.is_holiday(day),
    )


DEFAULT_IRREGULARITY = Irregularity()


@dataclass(frozen=True, eq=False)
class RateTrace:
    """A rate trace (requests/s on a fixed step) placed at `start_unix`, scaled by `scale`.

    Outside the trace the rate wraps around (a 14-day trace repeats), so any window can be emulated.
    """

    start_unix: float
    step_seconds: float
    rates: np.ndarray
    scale: float = 1.0

    def rate_at(self, t_unix: float) -> float:
        return float(self.rates_at(np.array([t_unix]))[0])

    def rates_at(self, t_unix: np.ndarray) -> np.ndarray:
        """Linear interpolation between the trace's steps (centres), wrapped over its length."""
        n = self.rates.size
        position = ((np.asarray(t_unix, dtype=float) - self.start_unix) / self.step_seconds) % n
        lower = np.floor(position).astype(np.int64)
        fraction = position - lower
        values = self.rates[lower] * (1.0 - fraction) + self.rates[(lower + 1) % n] * fraction
        return np.asarray(values * self.scale, dtype=np.float64)


def rate_trace_demand(
    timestamps_s: np.ndarray, rates: np.ndarray, *, start_unix: float, peak_rps: float | None = None
) -> RateTrace:
    """Real rate trace -> fleetsim demand: regular step from the median spacing, gaps (NaN) interpolated,
    placed at `start_unix`, scaled so its peak is `peak_rps` (a plan's peak) when given.

    This is the one function the replay and the emulator share for "a real trace as demand".
    """
    stamps = np.asarray(timestamps_s, dtype=float)
    values = np.asarray(rates, dtype=float)
    if stamps.size < 2 or stamps.size != values.size:
        raise ValueError(f"a rate trace needs >= 2 (timestamp, rate) pairs of equal length, got {stamps.size}")
    order = np.argsort(stamps)
    stamps, values = stamps[order], values[order]
    step = float(np.median(np.diff(stamps)))
    if not step > 0:
        raise ValueError("a rate trace needs increasing timestamps")
    grid = stamps[0] + step * np.arange(round((stamps[-1] - stamps[0]) / step) + 1)
    seen = np.isfinite(values)
    if seen.sum() < 2:
        raise ValueError("a rate trace needs at least two finite rates")
    on_grid = np.interp(grid, stamps[seen], np.maximum(values[seen], 0.0))
    peak = float(on_grid.max())
    if peak_rps is not None and not peak > 0:
        raise ValueError("a rate trace whose peak is 0 cannot be scaled to a plan's peak")
    scale = peak_rps / peak if peak_rps is not None else 1.0
    return RateTrace(start_unix, step, on_grid, scale)
