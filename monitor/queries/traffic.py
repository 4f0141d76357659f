"""Demand and request shape: request rates, errors, token lengths, throughput, gateway fan-out.

Request counts come from `vllm:request_success_total`, which counts every *finished* request under a
`finished_reason` label (stop, length, abort, error, repetition; the set grows across releases), so no
reason list is hard-coded except the two that mean failure.
"""

from __future__ import annotations

from monitor.queries.fragments import histogram_quantile
from monitor.queries.query import Query

__all__ = [
    "ARRIVAL_RATE_1M",
    "CALLS_PER_USER_REQUEST",
    "DEMAND_RATE",
    "ERROR_RATE",
    "ERROR_RATIO",
    "GATEWAY_CALLS_RATE",
    "GATEWAY_USER_REQUESTS_RATE",
    "GENERATION_TOKENS_PER_REPLICA",
    "GENERATION_TOKENS_RATE",
    "OUTPUT_TOKENS_BUCKETS",
    "OUTPUT_TOKENS_MEAN",
    "OUTPUT_TOKENS_P50",
    "OUTPUT_TOKENS_P95",
    "PEAK_REQUEST_RATE",
    "PROMPT_TOKENS_BUCKETS",
    "PROMPT_TOKENS_MEAN",
    "PROMPT_TOKENS_P50",
    "PROMPT_TOKENS_P95",
    "PROMPT_TOKENS_RATE",
    "QUERIES",
    "REQUEST_RATE",
    "REQUEST_RATE_1M",
    "REQUEST_RATE_PER_REPLICA",
]

_FINISHED = "sum by ({by}) (rate(vllm:request_success_total{vsel}[{window}]))"
# Zero (not "no data") where the tier finished requests but exports no error/abort series: vLLM pre-creates
# every reason, other exporters may create them on first use.
_FAILED = (
    'sum by ({by}) (rate(vllm:request_success_total{vsel:finished_reason=~"error|abort"}[{window}]))'
    f" or 0 * {_FINISHED}"
)
# Queue growth: the capacity queue where vLLM reports it (>= 2026-04), else num_requests_waiting.
_QUEUE_GROWTH = (
    'sum by ({by}) (sum without (reason) (deriv(vllm:num_requests_waiting_by_reason{vsel:reason="capacity"}'
    "[{window}])) or deriv(vllm:num_requests_waiting{vsel}[{window}]))"
)

REQUEST_RATE = Query(
    "vllm_request_success", "rate", _FINISHED, "requests/s",
    "Finished requests per second, every finished_reason (what the fleet served).",
)  # fmt: skip
ERROR_RATE = Query(
    "vllm_request_error_or_abort", "rate", _FAILED, "requests/s",
    "Requests finished with reason error or abort, per second.",
)  # fmt: skip
ERROR_RATIO = Query(
    "vllm_request_error_or_abort", "ratio", f"({_FAILED}) / {_FINISHED}", "ratio",
    "Share of finished requests that errored or were aborted; NaN (unknown) when nothing finished.",
)  # fmt: skip
DEMAND_RATE = Query(
    "vllm_request_demand", "rate", f"{_FINISHED} + {_QUEUE_GROWTH}", "requests/s",
    "Arrival estimate: finished requests per second plus the growth of the capacity queue (deriv of "
    "waiting requests). Served rate alone hides demand that piles up in the queue.",
)  # fmt: skip
PEAK_REQUEST_RATE = Query(
    "vllm_request_success", "max_rate1m",
    "max_over_time((sum by ({by}) (rate(vllm:request_success_total{vsel}[{step}])))[{window}:{step}])",
    "requests/s", "Highest request rate over `step`-long slices (1m) within the window: the observed peak.",
    window="1h", step="1m",
)  # fmt: skip


def _tokens(histogram: str, q: float) -> str:
    return histogram_quantile(q, f"rate({histogram}_bucket{{vsel}}[{{window}}])")


def _mean(histogram: str) -> str:
    return (
        f"sum by ({{by}}) (rate({histogram}_sum{{vsel}}[{{window}}]))"
        f" / sum by ({{by}}) (rate({histogram}_count{{vsel}}[{{window}}]))"
    )


_PROMPT, _OUTPUT = "vllm:request_prompt_tokens", "vllm:request_generation_tokens"
_PER_MODEL = ("model_name",)
PROMPT_TOKENS_P50 = Query(
    "vllm_request_prompt_tokens", "p50", _tokens(_PROMPT, 0.5), "tokens",
    "Median prompt length of finished requests (interpolated in 1-2-5 buckets).", group_by=_PER_MODEL,
)  # fmt: skip
PROMPT_TOKENS_P95 = Query(
    "vllm_request_prompt_tokens", "p95", _tokens(_PROMPT, 0.95), "tokens",
    "95th percentile prompt length of finished requests.", group_by=_PER_MODEL,
)  # fmt: skip
OUTPUT_TOKENS_P50 = Query(
    "vllm_request_generation_tokens", "p50", _tokens(_OUTPUT, 0.5), "tokens",
    "Median output length of finished requests.", group_by=_PER_MODEL,
)  # fmt: skip
OUTPUT_TOKENS_P95 = Query(
    "vllm_request_generation_tokens", "p95", _tokens(_OUTPUT, 0.95), "tokens",
    "95th percentile output length of finished requests.", group_by=_PER_MODEL,
)  # fmt: skip
PROMPT_TOKENS_BUCKETS = Query(
    "vllm_request_prompt_tokens_bucket", "rate",
    f"sum by ({{by:le,model_name}}) (rate({_PROMPT}_bucket{{vsel}}[{{window}}]))", "requests/s",
    "Per-bucket prompt-length observation rates (cumulative, by le and model): the fleet view merges tiers "
    "whose bucket bounds differ (max_model_len) in Python instead of summing mismatched buckets.",
    group_by=("le", "model_name"),
)  # fmt: skip
OUTPUT_TOKENS_BUCKETS = Query(
    "vllm_request_generation_tokens_bucket", "rate",
    f"sum by ({{by:le,model_name}}) (rate({_OUTPUT}_bucket{{vsel}}[{{window}}]))", "requests/s",
    "Per-bucket output-length observation rates (cumulative, by le and model), for the fleet view.",
    group_by=("le", "model_name"),
)  # fmt: skip
PROMPT_TOKENS_MEAN = Query(
    "vllm_request_prompt_tokens", "mean", _mean(_PROMPT), "tokens",
    "Mean prompt length of finished requests (exact: _sum / _count).",
)  # fmt: skip
OUTPUT_TOKENS_MEAN = Query(
    "vllm_request_generation_tokens", "mean", _mean(_OUTPUT), "tokens",
    "Mean output length of finished requests (exact: _sum / _count).",
)  # fmt: skip
PROMPT_TOKENS_RATE = Query(
    "vllm_prompt_tokens", "rate", "sum by ({by}) (rate(vllm:prompt_tokens_total{vsel}[{window}]))", "tokens/s",
    "Prompt tokens processed per second, cached ones included.",
)  # fmt: skip
GENERATION_TOKENS_RATE = Query(
    "vllm_generation_tokens", "rate", "sum by ({by}) (rate(vllm:generation_tokens_total{vsel}[{window}]))",
    "tokens/s", "Output tokens generated per second by the tier.",
)  # fmt: skip
GENERATION_TOKENS_PER_REPLICA = Query(
    "vllm_generation_tokens_per_replica", "rate",
    "avg by ({by}) (sum by ({by:job,instance,pod,ReplicaId}) (rate(vllm:generation_tokens_total{vsel}[{window}])))",
    "tokens/s", "Output tokens per second per replica (job, instance, pod); its engines are summed.",
)  # fmt: skip
REQUEST_RATE_PER_REPLICA = Query(
    "vllm_request_success_per_replica", "rate",
    "avg by ({by}) (sum by ({by:job,instance,pod,ReplicaId}) (rate(vllm:request_success_total{vsel}[{window}])))",
    "requests/s",
    "Finished requests per second per replica (job, instance, pod), every finished_reason; its engines are "
    "summed. The load one replica carries, to hold against the plan's sized requests/s per replica.",
    record=False,
)  # fmt: skip
_CALLS = "sum by ({by}) (rate(gateway_model_calls_total{sel}[{window}]))"
_USER_REQUESTS = "sum by ({by}) (rate(gateway_user_requests_total{sel}[{window}]))"
GATEWAY_CALLS_RATE = Query(
    "gateway_model_calls", "rate", _CALLS, "calls/s", "Model calls per second made by the API gateway for the tier.",
)  # fmt: skip
GATEWAY_USER_REQUESTS_RATE = Query(
    "gateway_user_requests", "rate", _USER_REQUESTS, "requests/s",
    "User requests per second at the API gateway for the tier (before any agent fan-out).",
)  # fmt: skip
CALLS_PER_USER_REQUEST = Query(
    "gateway_model_calls_per_user_request", "ratio", f"{_CALLS} / {_USER_REQUESTS}", "calls/request",
    "Model calls per user request at the API gateway (agent fan-out). Needs the gateway counters "
    "gateway_user_requests_total and gateway_model_calls_total, both labelled with the tier.",
)  # fmt: skip
# The 1-minute rate as a series of its own: the fleet's burst peak is the highest *simultaneous* sum of the
# tiers' 1-minute rates, which no per-tier maximum can give.
REQUEST_RATE_1M = REQUEST_RATE.with_window("1m")
ARRIVAL_RATE_1M = Query(
    "vllm_request_arrival", "rate",
    f"{_FINISHED} + {_QUEUE_GROWTH} + sum by ({{by}}) (deriv(vllm:num_requests_running{{vsel}}[{{window}}]))",
    "requests/s",
    "Arrivals minute by minute: finished requests plus the growth of the waiting and the running requests. Over "
    "a minute the running batch's swings matter (completions come in bunches when prompts are long), which the "
    "queue's growth alone reads as bursts; the bursts the advice's minute margin sizes are fitted on this.",
    window="1m",
)  # fmt: skip

QUERIES: tuple[Query, ...] = (
    REQUEST_RATE, ERROR_RATE, ERROR_RATIO, DEMAND_RATE, PEAK_REQUEST_RATE,
    PROMPT_TOKENS_P50, PROMPT_TOKENS_P95, OUTPUT_TOKENS_P50, OUTPUT_TOKENS_P95,
    PROMPT_TOKENS_BUCKETS, OUTPUT_TOKENS_BUCKETS,
    PROMPT_TOKENS_MEAN, OUTPUT_TOKENS_MEAN, PROMPT_TOKENS_RATE, GENERATION_TOKENS_RATE,
    GENERATION_TOKENS_PER_REPLICA, REQUEST_RATE_PER_REPLICA, GATEWAY_CALLS_RATE, GATEWAY_USER_REQUESTS_RATE,
    CALLS_PER_USER_REQUEST, REQUEST_RATE_1M, ARRIVAL_RATE_1M,
)  # fmt: skip
