"""Which histogram buckets bracket a threshold: vLLM's bucket lists, old and new, and the bracket chosen.

A threshold (an SLO of 1.2 s) is rarely a bucket bound, so the count of observations at or below it is
interpolated linearly between the two bounds around it, as histogram_quantile does (observations spread
evenly inside a bucket; the first bucket starts at 0). PromQL can only read buckets that exist, so the
bounds come from the bucket lists vLLM is known to export (reference §1.3):

- TTFT and the per-token ITL/TPOT histograms were extended by vLLM #15202 (2025-04-07, ~v0.8.4). The list
  before it is a prefix of the current one, ending at 10 s (TTFT) and 2.5 s (TPOT). A threshold within the
  old list's range is bracketed by bounds both lists have, so replicas on either release are read the same.
  Above it the current list's bounds are used: replicas still on the old list have no series for the upper
  bound, so their model drops out of the ratio (neither good nor bad: unknown), and a model whose replicas
  mix both lists is read from its new replicas' upper bucket only (its bad share is overstated). Upgrade, or
  keep such thresholds within the old range.
- Token-count histograms (prompt and output lengths) use `build_1_2_5_buckets(max_model_len)`: the bounds
  depend on the tier's max_model_len. A threshold above the last finite bound cannot be interpolated: the
  count at it is the count at the last finite bound (everything in the +Inf bucket is taken to be above
  it), which is what `monitor.histogram.merged_quantile` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from monitor.histogram import Bracket, bracket
from monitor.sizing.buckets import ITL_BOUNDS, ITL_BOUNDS_BEFORE_15202, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202

__all__ = [
    "ITL_BOUNDS",
    "ITL_BOUNDS_BEFORE_15202",
    "TTFT_BOUNDS",
    "TTFT_BOUNDS_BEFORE_15202",
    "Bracket",
    "bracket",
    "latency_bracket",
]


def latency_bracket(threshold: float, current: Sequence[float], before_15202: Sequence[float]) -> Bracket:
    """Bounds both lists have when the threshold is within the old list's range, else the current list's.

    Raises ValueError above the current list's last bound: such an SLO cannot be read from the histogram.
    """
    chosen = bracket(threshold, before_15202 if threshold <= max(before_15202) else current)
    if chosen.beyond:
        raise ValueError(
            f"threshold {threshold:g} s is above the histogram's last bucket bound {max(current):g} s: "
            "the share of observations above it cannot be read from the buckets"
        )
    return chosen
