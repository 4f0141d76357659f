"""The one prefix-hit definition sizing and fleetsim share, so a multi-tier plan's hit rate differs by
tier the same way in both.

The plan states a fleet-wide, token-weighted hit rate (or, without one, shared prefix / mean prompt).
Each call reuses min(S, L) + k x max(L - S, 0) of its L prompt tokens, capped at L - 1 (the last prompt
token is always computed), with S = shared_prefix_tokens (the system prompt and recurring retrieved
files, placed first) and k solved so the token-weighted hit rate over the plan's prompt distribution is
the plan's. When the shared prefix alone gives more than the stated rate, S is scaled down (k = 0).

A tier's hit rate is then the same rule over its routed band: E[reused | band] / E[L | band]. Long
prompts reuse the shared S and a fraction k of the rest, so a long-context tier sees a lower rate than
the fleet (2,000 shared tokens are 10% of a 20K prompt) and a short-prompt tier a higher one.
fleetsim draws each call's reusable prefix with `PrefixModel.cacheable`; sizing uses `PrefixModel.hit_rate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from monitor.plan.model import Plan
from monitor.sizing.shape import Band, LogNormal

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PrefixModel", "plan_prefix_hit_rate"]

_GRID = 4000


def plan_prefix_hit_rate(plan: Plan) -> float:
    """The stated hit rate, else shared prefix / mean prompt (1,200 / 2,000 = 0.6 in the seed)."""
    w = plan.workload
    if w.prefix_cache_hit_rate is not None:
        return w.prefix_cache_hit_rate
    mean_prompt = LogNormal.from_percentiles(w.prompt_tokens.p50, w.prompt_tokens.p95).mean
    return min(1.0, w.shared_prefix_tokens / mean_prompt)


@dataclass(frozen=True)
class PrefixModel:
    """Reusable prefix per call: min(S, L) + k x max(L - S, 0), capped at L - 1 (see module docstring)."""

    shared_tokens: float
    extra_fraction: float

    @classmethod
    def for_plan(cls, plan: Plan) -> PrefixModel:
        """Solved on the plan's own prompt distribution; a scenario changes lengths, not this reuse rule."""
        p = plan.workload.prompt_tokens
        prompts = LogNormal.from_percentiles(p.p50, p.p95)
        return _prefix_model(plan.workload.shared_prefix_tokens, plan_prefix_hit_rate(plan), prompts)

    def cacheable(self, prompt_tokens: np.ndarray) -> np.ndarray:
        import numpy as np  # where it computes: every command's --help loads this module (numpy ~0.1 s)

        s = self.shared_tokens
        reusable = np.minimum(prompt_tokens, s) + self.extra_fraction * np.maximum(prompt_tokens - s, 0)
        return np.minimum(np.floor(reusable), np.maximum(prompt_tokens - 1, 0)).astype(np.int64)

    def hit_rate(self, band: Band) -> float:
        """Token-weighted hit rate of the prompts in `band`: sum reused / sum prompt tokens."""
        lengths = band_lengths(band)
        total = float(lengths.sum())
        return float(self.cacheable(lengths).sum()) / total if total > 0 else 0.0


def band_lengths(band: Band, points: int = _GRID) -> np.ndarray:
    """Equally likely prompt lengths of a band (its quantiles at the midpoints of `points` slices)."""
    import numpy as np  # where it computes, as `cacheable`

    d = band.dist
    if d.sigma == 0 or band.probability <= 0:
        return np.full(1, max(1.0, round(d.median, 6)))  # exp(ln 2000) is 1999.9999999999998
    from scipy.special import ndtri  # scipy takes ~0.4 s to import; every command's --help loads this module

    lo, hi = d.cdf(band.low), d.cdf(band.high)
    q = lo + (hi - lo) * (np.arange(points) + 0.5) / points
    return np.exp(d.mu + d.sigma * ndtri(q))


@lru_cache(maxsize=64)
def _prefix_model(shared: float, hit_rate: float, prompts: LogNormal) -> PrefixModel:
    import numpy as np  # where it computes, as `cacheable`

    lengths = band_lengths(prompts.band(0.0, math.inf))
    mean = lengths.mean()
    base = np.minimum(lengths, shared).mean()
    if hit_rate * mean < base - 1e-9:
        # shrink S until min(S, L) alone gives the hit rate (bisection on a monotone function)
        lo, hi = 0.0, float(shared)
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.minimum(lengths, mid).mean() < hit_rate * mean else (lo, mid)
        return PrefixModel(shared_tokens=lo, extra_fraction=0.0)
    rest = np.maximum(lengths - shared, 0).mean()
    return PrefixModel(float(shared), min(1.0, (hit_rate * mean - base) / rest) if rest > 0 else 0.0)
