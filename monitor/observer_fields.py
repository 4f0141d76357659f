"""What the observer reads per tier, as data: each observation field's catalog query and window, the histograms
and the quantiles derived from them, the recorded form of each field (`monitor.queries.recorded`), and which
gates apply to which field. `monitor.observer` runs them; `queries_per_tier` counts them.
"""

from __future__ import annotations

from monitor import queries as q
from monitor.queries.cost import GPUS_MEAN, TOKENS_RATE
from monitor.queries.query import Query
from monitor.queries.recorded import Recorded

__all__ = [
    "BURN_WINDOWS",
    "FIELDS",
    "HISTOGRAMS",
    "NEEDS_A_REPLICA_UP",
    "NOT_STALENESS_GATED",
    "NOW_WINDOW",
    "OVER_HISTORY",
    "PER_REQUEST",
    "RECORDED",
    "queries_per_tier",
]

# Burn windows judged by planwatch itself: the page pairs of the SRE policy (1h/5m, 6h/30m). The ticket
# pairs (1d/2h, 3d/6h) run as Prometheus rules (`rules/`), where long windows are cheap.
BURN_WINDOWS = ("5m", "30m", "1h", "6h")

# The window of the rates the advice sizes "now" on: the check window (an hour by default) is right for
# judging quantiles and drift, but its mean lags a ramp by half of it (a ServeGen morning read 2.6 req/s at an
# hour's mean while 4.6 arrived, and the scale-up came 15 minutes late); 5 minutes is the range `rate()` is
# conventionally read over (four scrapes and more) and the demand history's step.
NOW_WINDOW = "5m"

# Observation field -> (catalog query, which window: "window" = the check window, "long" = the long window,
# else that window itself).
FIELDS: dict[str, tuple[Query, str]] = {
    "request_rate": (q.REQUEST_RATE, "window"),
    "demand_rate": (q.DEMAND_RATE, "window"),
    "request_rate_now": (q.REQUEST_RATE, NOW_WINDOW),
    "demand_rate_now": (q.DEMAND_RATE, NOW_WINDOW),
    "peak_rate": (q.PEAK_REQUEST_RATE.with_window("1h", step="5m"), "long"),
    "average_rate": (q.REQUEST_RATE, "long"),
    "prefix_hit_rate": (q.PREFIX_CACHE_HIT_RATIO, "window"),
    "kv_occupancy_mean": (q.KV_USAGE_MEAN, "window"),
    "kv_occupancy_max": (q.KV_USAGE_MAX, "window"),
    "preemption_rate": (q.PREEMPTION_RATE, "window"),
    "running": (q.RUNNING, "window"),
    "waiting": (q.WAITING, "window"),
    "output_tokens_per_second_per_replica": (q.GENERATION_TOKENS_PER_REPLICA, "window"),
    "prompt_tokens_rate": (q.PROMPT_TOKENS_RATE, "window"),
    "batch_per_replica": (q.BATCH_PER_REPLICA, "window"),
    "error_ratio": (q.ERROR_RATIO, "window"),
    "replicas_up": (q.REPLICAS_UP, "window"),
    "replicas_ready": (q.REPLICAS_READY, "window"),
    "cold_start_p95": (q.COLD_START_P95, "long"),
    "calls_per_request": (q.CALLS_PER_USER_REQUEST, "window"),
    "gpu_utilization": (q.GPU_UTIL_MEAN, "window"),
    "gpu_dram_active": (q.DRAM_ACTIVE_MEAN, "window"),
    "gpu_memory_used_fraction": (q.GPU_MEMORY_USED_RATIO, "window"),
    "gpu_power_watts": (q.GPU_POWER_MEAN, "window"),
    "gpu_xid_errors": (q.XID_GPUS, "window"),
    "tokens_rate_long": (TOKENS_RATE, "long"),
    "gpus_mean_long": (GPUS_MEAN, "long"),
}
# Histogram -> (bucket-vector query, {observation field: (quantile, the quantile's own catalog query)}).
HISTOGRAMS: dict[str, tuple[Query, dict[str, tuple[float, Query]]]] = {
    "ttft": (q.TTFT_BUCKETS, {"ttft_p50": (0.5, q.TTFT_P50), "ttft_p95": (0.95, q.TTFT_P95),
                              "ttft_p99": (0.99, q.TTFT_P99)}),
    "tpot": (q.TPOT_BUCKETS, {"tpot_p50": (0.5, q.TPOT_P50), "tpot_p95": (0.95, q.TPOT_P95),
                              "tpot_p99": (0.99, q.TPOT_P99)}),
    "itl": (q.ITL_BUCKETS, {"itl_p95": (0.95, q.ITL_P95)}),
    "prompt": (q.PROMPT_TOKENS_BUCKETS, {"prompt_p50": (0.5, q.PROMPT_TOKENS_P50),
                                         "prompt_p95": (0.95, q.PROMPT_TOKENS_P95)}),
    "output": (q.OUTPUT_TOKENS_BUCKETS, {"output_p50": (0.5, q.OUTPUT_TOKENS_P50),
                                         "output_p95": (0.95, q.OUTPUT_TOKENS_P95)}),
    "queue": (q.QUEUE_TIME_BUCKETS, {"queue_time_p95": (0.95, q.QUEUE_TIME_P95)}),
}  # fmt: skip
# Observation field -> how it is read from recorded series (monitor.queries.recorded). The long-window
# readings differ from their raw queries in one way each: the peak is the highest 5-minute rate (the raw
# query's slices are 5 minutes too), and cold start is the slowest hour's p95 (the rule's own window),
# which errs on the early side for scale-up lead times. Running and waiting requests are read raw: an
# instant sum costs one sample per replica, and a recorded one would lag a rule interval behind the queue.
RECORDED: dict[str, Recorded] = {
    "request_rate": Recorded(q.REQUEST_RATE),
    "demand_rate": Recorded(q.DEMAND_RATE),
    "request_rate_now": Recorded(q.REQUEST_RATE),
    "demand_rate_now": Recorded(q.DEMAND_RATE),
    "peak_rate": Recorded(q.REQUEST_RATE, "max"),
    "average_rate": Recorded(q.REQUEST_RATE),
    "prefix_hit_rate": Recorded(
        q.PREFIX_CACHE_HITS_RATE, per=q.PREFIX_CACHE_QUERIES_RATE, fallback=q.PREFIX_CACHE_HIT_RATE_V0
    ),
    "kv_occupancy_mean": Recorded(q.KV_USAGE_MEAN),
    "kv_occupancy_max": Recorded(q.KV_USAGE_MAX, "max"),
    "preemption_rate": Recorded(q.PREEMPTION_RATE),
    "output_tokens_per_second_per_replica": Recorded(q.GENERATION_TOKENS_PER_REPLICA),
    "prompt_tokens_rate": Recorded(q.PROMPT_TOKENS_RATE),
    "batch_per_replica": Recorded(q.BATCH_PER_REPLICA),
    "error_ratio": Recorded(q.ERROR_RATE, per=q.REQUEST_RATE),
    "replicas_up": Recorded(q.REPLICAS_UP, "last"),
    "replicas_ready": Recorded(q.REPLICAS_READY, "last"),
    "cold_start_p95": Recorded(q.COLD_START_P95, "max"),
    "calls_per_request": Recorded(q.GATEWAY_CALLS_RATE, per=q.GATEWAY_USER_REQUESTS_RATE),
    "gpu_utilization": Recorded(q.GPU_UTIL_MEAN),
    "gpu_dram_active": Recorded(q.DRAM_ACTIVE_MEAN),
    "gpu_memory_used_fraction": Recorded(q.GPU_MEMORY_USED_RATIO, "max"),
    "gpu_power_watts": Recorded(q.GPU_POWER_MEAN),
    "gpu_xid_errors": Recorded(q.XID_GPUS, "max"),
}
# Rates and ratios that read 0 over a dead fleet: unknown when no replica is up.
NEEDS_A_REPLICA_UP = {"request_rate", "demand_rate", "request_rate_now", "demand_rate_now",
                       "output_tokens_per_second_per_replica", "batch_per_replica",
                       "error_ratio", "preemption_rate", "running", "waiting", "prompt_tokens_rate"}  # fmt: skip
# Statistics over finished requests in the window: judged only with enough requests behind them.
PER_REQUEST = ("prompt_p50", "prompt_p95", "output_p50", "output_p95", "ttft_p50", "ttft_p95", "ttft_p99",
                "tpot_p50", "tpot_p95", "tpot_p99", "itl_p95", "queue_time_p95", "error_ratio",
                "prefix_hit_rate")  # fmt: skip
# Statistics of the long window's history: unknown where the history covers too little of it.
OVER_HISTORY = ("peak_rate", "average_rate")
# Facts about the fleet's state or about history, not fresh engine samples: not gated on staleness.
NOT_STALENESS_GATED = {"replicas_up", "replicas_ready", "cold_start_p95", "peak_rate", "average_rate",
                        "tokens_rate_long", "gpus_mean_long"}  # fmt: skip


def queries_per_tier(burn_windows: tuple[str, ...] = BURN_WINDOWS, window: str = "1h", probes: bool = True) -> int:
    """Fixed per tier, whatever the replica count: instant fields, data age, speculative decoding, one bucket vector per
    histogram and window (TTFT and TPOT also per burn window), error ratio per burn window, the two
    request-rate histories of the fleet view, and (unless the recording rules are switched off) the two
    probes that tell whether the tier's recorded series are fresh and how far back they reach."""
    slo_windows = len({window, *burn_windows})
    fixed = len(FIELDS) + 2 + (len(HISTOGRAMS) - 2) + 2 * slo_windows + len(burn_windows) + 2
    return fixed + (2 if probes else 0)
