"""What vLLM's histograms can see: its token-count buckets, and a distribution as histogram_quantile reads it.

vLLM counts prompt and output lengths in 1-2-5 buckets up to max_model_len (1, 2, 5, 10, ..., 20000, 50000).
histogram_quantile interpolates linearly inside a bucket, so a plan value and an observed quantile can only
be compared like with like: the plan's distribution pushed through the same buckets and the same
interpolation (`monitor.histogram.quantile_of_distribution`). A plan of exactly 300 output tokens reads as 485
(the 95th percentile of a 200-500 bucket), and so does production that matches it.
"""

from __future__ import annotations

__all__ = ["build_1_2_5_buckets"]


def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    """1, 2, 5, 10, 20, 50, ... up to max_value: vLLM's buckets for token counts (`build_1_2_5_buckets`)."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(buckets)
            buckets.append(float(value))
        exponent += 1
