"""Latency SLO inputs: TTFT, time per output token, queue time, and bucket vectors for threshold checks.

ITL is `vllm:inter_token_latency_seconds` (vLLM >= 0.11) or, before it and until 0.15,
`vllm:time_per_output_token_seconds`: both are observed once per output a request streams after its first
(one per token, except under speculative decoding, where an output carries every token a step accepted) and
share bucket bounds, so one may stand in for the other. `vllm:request_time_per_output_token_seconds` is a
per-*request* mean (one observation per request) and is deliberately not used as a fallback.

Fraction of requests over a threshold (the SLO burn input): a threshold such as 1.2 s is rarely a bucket
bound, so the `*_BUCKETS` queries return the per-`le` rates (`sum by (le, model_name)`) and
`monitor.histogram.fraction_over` interpolates inside the bucket, as histogram_quantile does.
"""

from __future__ import annotations

from monitor.queries.fragments import histogram_quantile, rate_either
from monitor.queries.query import Query

__all__ = [
    "ITL_BUCKETS",
    "ITL_MEAN",
    "ITL_P50",
    "ITL_P95",
    "ITL_P99",
    "QUERIES",
    "QUEUE_TIME_BUCKETS",
    "QUEUE_TIME_P95",
    "TPOT_BUCKETS",
    "TPOT_P50",
    "TPOT_P95",
    "TPOT_P99",
    "TTFT_BUCKETS",
    "TTFT_P50",
    "TTFT_P95",
    "TTFT_P99",
]

_TTFT = "rate(vllm:time_to_first_token_seconds_bucket{vsel}[{window}])"
_ITL = rate_either("vllm:inter_token_latency_seconds_bucket", "vllm:time_per_output_token_seconds_bucket")
_QUEUE = "rate(vllm:request_queue_time_seconds_bucket{vsel}[{window}])"
# TPOT as SLOs mean it: one value per request, (e2e - TTFT) / (output tokens - 1). vLLM records it since
# #24015 (2025-09); on older engines the per-token ITL stands in, series by series, and its tail is heavier
# (a step that carries a prefill chunk delays every token in it), so the fallback errs on the safe side.
# Not under speculative decoding: vLLM observes ITL once per output a request streams
# (IterationStats.update_from_output in vllm/v1/metrics/stats.py), and a speculative step streams
# 1 + accepted draft tokens at once, so there ITL is the time per step. An engine exporting the spec-decode
# counters without the per-request histogram has no TPOT: unknown, not a multiple of it.
_SPEC_DECODING = "group by (job, instance, pod) (vllm:spec_decode_num_draft_tokens_total{vsel})"
_TPOT = (
    "rate(vllm:request_time_per_output_token_seconds_bucket{vsel}[{window}])"
    f" or (({_ITL}) unless on (job, instance, pod) {_SPEC_DECODING})"
)
_PER_MODEL = ("model_name",)


def _quantile(metric: str, q: int, buckets: str, what: str) -> Query:
    return Query(
        metric, f"p{q}", histogram_quantile(q / 100, buckets), "seconds",
        f"{q}th percentile {what} (linear interpolation inside the bucket).", group_by=_PER_MODEL,
    )  # fmt: skip


TTFT_P50 = _quantile("vllm_time_to_first_token_seconds", 50, _TTFT, "time to first token")
TTFT_P95 = _quantile("vllm_time_to_first_token_seconds", 95, _TTFT, "time to first token")
TTFT_P99 = _quantile("vllm_time_to_first_token_seconds", 99, _TTFT, "time to first token")
ITL_P50 = _quantile("vllm_inter_token_latency_seconds", 50, _ITL, "time per output token (inter-token)")
ITL_P95 = _quantile("vllm_inter_token_latency_seconds", 95, _ITL, "time per output token (inter-token)")
ITL_P99 = _quantile("vllm_inter_token_latency_seconds", 99, _ITL, "time per output token (inter-token)")
QUEUE_TIME_P95 = _quantile("vllm_request_queue_time_seconds", 95, _QUEUE, "time a request waited in the queue")

TPOT_P50 = _quantile("vllm_request_time_per_output_token_seconds", 50, _TPOT, "time per output token per request")
TPOT_P95 = _quantile("vllm_request_time_per_output_token_seconds", 95, _TPOT, "time per output token per request")
TPOT_P99 = _quantile("vllm_request_time_per_output_token_seconds", 99, _TPOT, "time per output token per request")
TPOT_BUCKETS = Query(
    "vllm_request_time_per_output_token_seconds_bucket", "rate", f"sum by ({{by:le,model_name}}) ({_TPOT})",
    "requests/s",
    "Per-bucket rates of per-request TPOT (ITL per token where the engine predates it); interpolate for the "
    "share of requests over the TPOT SLO.",
    group_by=("le", "model_name"),
)  # fmt: skip
ITL_MEAN = Query(
    "vllm_inter_token_latency_seconds", "mean",
    "sum by ({by}) (" + rate_either("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum")
    + ") / sum by ({by}) ("
    + rate_either("vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count") + ")",
    "seconds", "Mean time per output token over all tokens (exact: _sum / _count).",
)  # fmt: skip
TTFT_BUCKETS = Query(
    "vllm_time_to_first_token_seconds_bucket", "rate", f"sum by ({{by:le,model_name}}) ({_TTFT})", "requests/s",
    "Per-bucket TTFT observation rates (cumulative, by le); interpolate to get the share over a threshold.",
    group_by=("le", "model_name"),
)  # fmt: skip
QUEUE_TIME_BUCKETS = Query(
    "vllm_request_queue_time_seconds_bucket", "rate", f"sum by ({{by:le,model_name}}) ({_QUEUE})", "requests/s",
    "Per-bucket queue-time observation rates (cumulative, by le): quantiles over any window are derived from it.",
    group_by=("le", "model_name"),
)  # fmt: skip
ITL_BUCKETS = Query(
    "vllm_inter_token_latency_seconds_bucket", "rate", f"sum by ({{by:le,model_name}}) ({_ITL})", "tokens/s",
    "Per-bucket inter-token latency observation rates (cumulative, by le); one observation per token.",
    group_by=("le", "model_name"),
)  # fmt: skip

QUERIES: tuple[Query, ...] = (
    TTFT_P50, TTFT_P95, TTFT_P99, ITL_P50, ITL_P95, ITL_P99, ITL_MEAN, QUEUE_TIME_P95, QUEUE_TIME_BUCKETS, TTFT_BUCKETS,
    ITL_BUCKETS,
    TPOT_P50, TPOT_P95, TPOT_P99, TPOT_BUCKETS,
)  # fmt: skip
