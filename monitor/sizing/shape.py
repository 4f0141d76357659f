"""Length distributions from the two numbers discovery gives (p50, p95), and what routing does to them.

A log-normal is fitted to each p50/p95 pair: mu = ln(p50), sigma = (ln p95 - ln p50) / z95 with
z95 = 1.6449. Routing by prompt length cuts the distribution into bands; each tier sees the band's
conditional distribution, whose mean and p95 differ a lot from the fleet's (long prompts go together).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["Z95", "Band", "LogNormal"]

_STD = NormalDist()
Z95 = _STD.inv_cdf(0.95)


@dataclass(frozen=True)
class LogNormal:
    """ln X ~ Normal(mu, sigma). sigma == 0 is a point mass at exp(mu) (every request the same length)."""

    mu: float
    sigma: float

    @classmethod
    def from_percentiles(cls, p50: float, p95: float) -> LogNormal:
        """mu = ln p50; sigma = ln(p95 / p50) / 1.6449."""
        return cls(mu=math.log(p50), sigma=math.log(p95 / p50) / Z95)

    @property
    def median(self) -> float:
        return math.exp(self.mu)

    @property
    def mean(self) -> float:
        """exp(mu + sigma^2 / 2)."""
        return math.exp(self.mu + self.sigma**2 / 2)

    def cdf(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if math.isinf(x):
            return 1.0
        if self.sigma == 0:
            return 1.0 if x >= self.median else 0.0
        return _STD.cdf((math.log(x) - self.mu) / self.sigma)

    def quantile(self, q: float) -> float:
        if self.sigma == 0:
            return self.median
        return math.exp(self.mu + self.sigma * _STD.inv_cdf(min(max(q, 1e-12), 1 - 1e-12)))

    def band(self, low: float, high: float) -> Band:
        return Band(self, low, high)


@dataclass(frozen=True)
class Band:
    """The distribution restricted to [low, high): the lengths one routed tier receives."""

    dist: LogNormal
    low: float
    high: float

    def cdf(self, x: float) -> float:
        """P(X <= x | low <= X < high)."""
        mass = self.probability
        if mass <= 0:
            return math.nan
        if self.dist.sigma == 0:
            return 1.0 if x >= self.dist.median else 0.0
        clipped = min(max(x, self.low), self.high)
        return (self.dist.cdf(clipped) - self.dist.cdf(self.low)) / mass

    @property
    def probability(self) -> float:
        """P(low <= X < high)."""
        if self.dist.sigma == 0:
            return 1.0 if self.low <= self.dist.median < self.high else 0.0
        return self.dist.cdf(self.high) - self.dist.cdf(self.low)

    def quantile(self, q: float) -> float:
        """F^-1(F(low) + q (F(high) - F(low))): a percentile of the band's own traffic."""
        if self.dist.sigma == 0:
            return self.dist.median
        lo, hi = self.dist.cdf(self.low), self.dist.cdf(self.high)
        return self.dist.quantile(lo + q * (hi - lo))

    @property
    def mean(self) -> float:
        """E[X | low <= X < high] = exp(mu + s^2/2) [Phi(b - s) - Phi(a - s)] / [Phi(b) - Phi(a)],
        with a, b the standardised log bounds."""
        d = self.dist
        if d.sigma == 0:
            return d.median
        a = _z(self.low, d)
        b = _z(self.high, d)
        mass = _STD.cdf(b) - _STD.cdf(a)
        if mass <= 0:
            return min(max(d.median, self.low), self.high)
        return d.mean * (_STD.cdf(b - d.sigma) - _STD.cdf(a - d.sigma)) / mass


def _z(x: float, d: LogNormal) -> float:
    if x <= 0:
        return -math.inf
    if math.isinf(x):
        return math.inf
    return (math.log(x) - d.mu) / d.sigma
