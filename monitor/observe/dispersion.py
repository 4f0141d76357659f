"""How much a tier's minute counts vary beyond Poisson's: the burst term the advice's minute margin adds.

The advice sizes a minute of mean rate r for its count at the availability's quantile. Poisson arrivals
give the count a variance of 60 r (a rate's r / 60); production's do not always. On the Azure LLM
inference traces of 2023 (`../shared/data/traces`, one hour each), the variance of a minute's count around
the 5-minute mean centred on it is 2.5 times the mean on the conversation trace and 180 times on the code
trace: clients that send many calls at once. Sized as Poisson, such a tier loses the minutes its bursts
land in however good the forecast of its mean.

The model: minute i's count n_i has mean m_i and variance phi m_i + alpha m_i^2, independently from minute
to minute. The first term is the count's noise (phi = 1 for Poisson; the 1-minute `rate()` Prometheus
extrapolates from a few scrapes adds to it, about s / (60 - s) at a scrape interval s), the second the
bursts, whose size grows with the traffic (alpha is their squared coefficient of variation: a minute's mean
rate times a factor of mean 1 and variance alpha). The advice adds only alpha to Poisson's count
(`CapacityTable.minute_rate`), so a coarse scrape interval does not read as bursts.

The estimate is two moment equations, each unbiased whatever the day's shape, since every product in them
multiplies counts of different minutes (independent, so the mean of the product is the product of means):
- s_i = (n_{i-1} - 2 n_i + n_{i+1})^2 / 6 has mean V_i = phi m_i + alpha m_i^2 (the second difference
  cancels a linear ramp; the three minutes' variances sum to 6 V_i);
- n_{i-1} n_{i+1} has mean m_i^2 (a ramp's slope enters squared, negligibly: a fitted level, a mean of the
  minutes around, read ramps as bursts, and its own noise hid a third of the bursts);
- L_i, the mean of the ten minutes 2 to 6 away on either side, has mean m_i and shares no minute with s_i,
  n_i or n_{i-1} n_{i+1}, so weighting by it keeps each mean:
      sum s = phi sum n + alpha sum n_{i-1} n_{i+1}
      sum s L = phi sum n L + alpha sum n_{i-1} n_{i+1} L
  The two tell phi from alpha because busier minutes weigh more in the second; a window whose level never
  moves cannot tell them apart, and gives no fit.
- alpha counts once it stands 3 standard errors above 0, the error taken with no bursts (s_i's variance
  2 V_i^2, times 1.94 for neighbouring s sharing minutes, V_i^2 read as phi^2 n_{i-1} n_{i+1}, phi at least
  1); below, and below 0, it is 0: a week of Poisson minutes fits alpha within about 1e-4 of 0 by chance,
  which is noise, not a margin.

Measured on simulated weeks (`tests/observe/test_dispersion.py`): Poisson minutes over a daily swing, an
hour-long morning ramp, 1-minute rates extrapolated from 45 s or 30 s of counts, all read as no bursts;
bursts of known alpha (10% of minutes at 3.5x, 30% at 2x) read within about 15% of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from monitor.observe.model import Measurement

__all__ = ["MIN_MINUTES", "REACH", "TERMS", "BurstFit", "burst_terms", "fit_bursts", "fit_of_sums", "overdispersion"]

# Minutes the fit needs. Its error is normal only over many minutes (s_i is a square, far from normal): at
# the start of a ServeGen replay (Poisson minutes), a fit over 67 minutes read alpha 0.26 at 3.0 standard errors,
# and the advice sized bursts that were not there. Six hours also span enough of a day's levels to tell phi
# from alpha.
MIN_MINUTES = 360
REACH = 6  # minutes either side a minute's terms read: final once the 6 after it are recorded
_SIGNIFICANT = 3.0  # standard errors alpha must stand above 0 to count
_SHARED = 1.0 + 2.0 * (16.0 + 1.0) / 36.0  # Var(sum s) over sum Var(s): second differences 1 and 2 apart share minutes
_SEPARABLE = 1e-3  # the equations' determinant over its scale below which the level did not move enough
TERMS = 8  # rows of `burst_terms`


@dataclass(frozen=True)
class BurstFit:
    """The fit of a minute count's variance, phi m + alpha m^2, over `minutes` minutes."""

    alpha: float  # the bursts' squared coefficient of variation, 0 unless it stands above its noise
    estimate: float  # alpha as fitted, before the test
    standard_error: float
    phi: float
    minutes: int


def burst_terms(counts: np.ndarray) -> np.ndarray:
    """(8, minutes): per minute, what the fit sums: 1, n, n_{i-1} n_{i+1}, s, n L, n_{i-1} n_{i+1} L, s L and
    n_{i-1} n_{i+1} L^2, 0 where a minute within `REACH` is unknown or outside the series. A minute's
    terms read only the minutes within `REACH` of it, so once those are recorded they never change (the
    replay keeps their running sums)."""
    n, size = counts, counts.size
    out = np.zeros((TERMS, size))
    inside = size - 2 * REACH
    if inside <= 0:
        return out

    def at(shift: int) -> np.ndarray:
        return n[REACH + shift : REACH + shift + inside]

    prev, cur, nxt = at(-1), at(0), at(1)
    s = (prev - 2.0 * cur + nxt) ** 2 / 6.0
    pair = prev * nxt
    level = sum(at(-k) + at(k) for k in range(2, REACH + 1)) / (2.0 * (REACH - 1))
    known = np.isfinite(s) & np.isfinite(level)
    rows = (np.ones(inside), cur, pair, s, cur * level, pair * level, s * level, pair * level * level)
    out[:, REACH : REACH + inside] = np.where(known, np.stack(rows), 0.0)
    return out


def fit_bursts(rates_per_second: Sequence[float | None] | np.ndarray) -> BurstFit | None:
    """The burst fit of consecutive 1-minute request rates (req/s; None or NaN where unknown), or None when
    fewer than `MIN_MINUTES` minutes count or the level never moved enough to tell the two terms apart."""
    rates = (
        rates_per_second
        if isinstance(rates_per_second, np.ndarray)
        else [math.nan if v is None else v for v in rates_per_second]
    )
    return fit_of_sums(burst_terms(60.0 * np.asarray(rates, dtype=float)).sum(axis=1))


def fit_of_sums(sums: np.ndarray) -> BurstFit | None:
    """The fit from the sums of `burst_terms` over a window's minutes: the two moment equations solved."""
    k, sn, spair, ss, snl, spairl, ssl, spairll = (float(v) for v in sums)
    if k < MIN_MINUTES:
        return None
    det = sn * spairl - snl * spair
    if not det > _SEPARABLE * sn * spairl:
        return None
    alpha, phi = (sn * ssl - snl * ss) / det, (ss * spairl - spair * ssl) / det
    noise = max(phi, 1.0) ** 2 * 2.0 * _SHARED  # Var(s_i) / m_i^2 with no bursts
    spread = sn * sn * spairll - 2.0 * sn * snl * spairl + snl * snl * spair  # sum of (sn L_i - snl)^2 m_i^2
    error = math.sqrt(max(noise * spread, 0.0)) / det
    return BurstFit(alpha if alpha > _SIGNIFICANT * error else 0.0, alpha, error, phi, round(k))


def overdispersion(fit: BurstFit | None, window: str) -> Measurement:
    """The observation of a fit over `window`: alpha, from the minutes it counted. No single query reproduces
    it (a fit over a week of the 1-minute arrivals, `ARRIVAL_RATE_1M`), so it carries none."""
    if fit is None:
        reason = f"no burst fit over {window}: under {MIN_MINUTES} minutes of demand, or a level that never moved"
        return Measurement.unknown(reason, "", window)
    return Measurement(fit.alpha, "", window, fit.minutes)
