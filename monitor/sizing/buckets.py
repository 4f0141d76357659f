"""What vLLM's histograms can see: its token-count buckets, and a distribution as histogram_quantile reads it.

vLLM counts prompt and output lengths in 1-2-5 buckets up to max_model_len (1, 2, 5, 10, ..., 20000, 50000).
histogram_quantile interpolates linearly inside a bucket, so a plan value and an observed quantile can only
be compared like with like: the plan's distribution pushed through the same buckets and the same
interpolation (`monitor.histogram.quantile_of_distribution`). A plan of exactly 300 output tokens reads as 485
(the 95th percentile of a 200-500 bucket), and so does production that matches it.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = [
    "ITL_BOUNDS",
    "ITL_BOUNDS_BEFORE_15202",
    "TTFT_BOUNDS",
    "TTFT_BOUNDS_BEFORE_15202",
    "build_1_2_5_buckets",
]

# vLLM's latency bucket lists, current and before vLLM #15202 (which extended them; see monitor.rules.buckets).
TTFT_BOUNDS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
TTFT_BOUNDS_BEFORE_15202: tuple[float, ...] = tuple(b for b in TTFT_BOUNDS if b <= 10.0)
ITL_BOUNDS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
ITL_BOUNDS_BEFORE_15202: tuple[float, ...] = tuple(b for b in ITL_BOUNDS if b <= 2.5)


@lru_cache(maxsize=64)
def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    """1, 2, 5, 10, 20, 50, ... up to max_value: vLLM's buckets for token counts (`build_1_2_5_buckets`).
    Remembered: drift asks for the same few every evaluation."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(buckets)
            buckets.append(float(value))
        exponent += 1
