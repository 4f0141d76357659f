"""Split-conformal quantiles: the order statistics that bound the next error (shared by the interval models)."""

from __future__ import annotations

import math

import numpy as np

from forecasting.series import FloatArray

__all__ = ["QUANTILES", "Four", "conformal_quantiles", "four"]

QUANTILES = (0.025, 0.10, 0.90, 0.975)
Four = tuple[float, float, float, float]


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
        min(n, math.ceil((n + 1) * p - 1e-9)) if p > 0.5 else max(1, math.floor((n + 1) * p + 1e-9)) for p in QUANTILES
    ]
    return np.asarray(ordered[np.array(ranks) - 1], dtype=np.float64)


def four(q: FloatArray) -> Four:
    return float(q[0]), float(q[1]), float(q[2]), float(q[3])
