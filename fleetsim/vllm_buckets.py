"""vLLM's histogram bucket bounds, per era, as vLLM itself declares them (reference §1.3).

Upstream's numbers only: which family uses which set, and which generation serves the older sets, is
fleetsim.metrics' business. They sit apart because they are checked line by line against
vllm/v1/metrics/loggers.py (PrometheusStatLogger) and vllm/engine/metrics.py rather than against the family
table, and fleetsim.metrics re-exports them so callers keep one import for the catalog.
"""

from __future__ import annotations

__all__ = [
    "ITERATION_TOKEN_BUCKETS",
    "LATENCY_BUCKETS",
    "OLD_ITERATION_TOKEN_BUCKETS",
    "OLD_LATENCY_BUCKETS",
    "OLD_TPOT_BUCKETS",
    "OLD_TTFT_BUCKETS",
    "PARAMS_N_BUCKETS",
    "TPOT_BUCKETS",
    "TTFT_BUCKETS",
    "V0_BUCKETS",
    "build_1_2_5_buckets",
]

# Written out here rather than derived, so that fleetsim reproduces what vLLM serves independently of the
# monitor's reading of it. §1.3, current sets (after #15202 / #17033):
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0)  # fmt: skip
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                   240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
ITERATION_TOKEN_BUCKETS = (1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
# §1.3 "Before": the V0 sets until #15202 (2025-04-07) stopped at 10 s / 2.5 s / 60 s; iteration tokens were
# bucketed at V0's CUDA-graph capture sizes (1, 2, 4, then multiples of 8 to 256) until #17033.
OLD_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
OLD_TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
OLD_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)
OLD_ITERATION_TOKEN_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 40.0, 48.0, 56.0, 64.0, 72.0, 80.0, 88.0,
                               96.0, 104.0, 112.0, 120.0, 128.0, 136.0, 144.0, 152.0, 160.0, 168.0, 176.0, 184.0,
                               192.0, 200.0, 208.0, 216.0, 224.0, 232.0, 240.0, 248.0, 256.0)  # fmt: skip
# Keyed by the current set, so a family declares only today's bounds and the v0 generation looks up its own.
V0_BUCKETS = {TTFT_BUCKETS: OLD_TTFT_BUCKETS, TPOT_BUCKETS: OLD_TPOT_BUCKETS, LATENCY_BUCKETS: OLD_LATENCY_BUCKETS,
              ITERATION_TOKEN_BUCKETS: OLD_ITERATION_TOKEN_BUCKETS}  # fmt: skip
PARAMS_N_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0)


def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, ... while <= max_value (the token-count histograms).

    vLLM's own function, reproduced here so the simulator does not borrow the monitor's copy."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(buckets)
            buckets.append(float(value))
        exponent += 1
