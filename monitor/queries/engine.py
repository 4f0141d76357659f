"""Engine state and replicas: KV cache, preemptions, prefix cache, queues, batches, readiness, cold start.

Replica = one (`job`, `instance`, `pod`, `ReplicaId`) exporting vLLM engine series for the tier; its engines
(`engine` label, V1 data parallel) are summed. `pod` is part of the identity because several replicas may share
one listener under different metrics paths (fleetsim does); `ReplicaId` because Ray Serve exports every replica
of a node through the node's one metrics agent. Where a label is absent it is simply empty.
V0 has no `engine` label and nothing here requires it.

Readiness and cold start come from kube-state-metrics, the signal Kubernetes itself acts on, joined to the
tier through `namespace`/`pod`: ready = `kube_pod_status_ready{condition="true"} == 1`; cold start =
`kube_pod_status_ready_time - kube_pod_created` of the pods created inside the window (creation to first
ready, which covers scheduling, image pull, weight load, profiling and CUDA graph capture). vLLM itself has
no readiness metric and serves /metrics only once the engine is up, so `up` alone cannot tell "starting"
from "down". fleetsim emits the same kube-state-metrics series.
"""

from __future__ import annotations

from monitor.queries.fragments import ksm, pod_tier, rate_either, zero_if_known
from monitor.queries.query import Query

__all__ = [
    "BATCH_PER_REPLICA",
    "COLD_START_P95",
    "DATA_AGE",
    "KV_USAGE_MAX",
    "KV_USAGE_MEAN",
    "PREEMPTION_RATE",
    "PREFIX_CACHE_HITS_RATE",
    "PREFIX_CACHE_HIT_RATE_V0",
    "PREFIX_CACHE_HIT_RATIO",
    "PREFIX_CACHE_QUERIES_RATE",
    "QUERIES",
    "REPLICAS_DOWN",
    "REPLICAS_READY",
    "REPLICAS_UP",
    "RUNNING",
    "SPEC_DECODE_TOKENS_PER_STEP",
    "WAITING",
]

_KV_NEW, _KV_OLD = "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"
KV_USAGE_MEAN = Query(
    "vllm_kv_cache_usage_perc", "mean", f"avg by ({{by}}) ({rate_either(_KV_NEW, _KV_OLD, 'avg_over_time')})",
    "ratio", "Mean KV-cache block occupancy (0-1) over engines and the window; V0/old name as fallback.",
)  # fmt: skip
KV_USAGE_MAX = Query(
    "vllm_kv_cache_usage_perc", "max", f"max by ({{by}}) ({rate_either(_KV_NEW, _KV_OLD, 'max_over_time')})",
    "ratio", "Highest KV-cache block occupancy (0-1) of any engine in the window.",
)  # fmt: skip
PREEMPTION_RATE = Query(
    "vllm_num_preemptions", "rate", "sum by ({by}) (rate(vllm:num_preemptions_total{vsel}[{window}]))",
    "preemptions/s", "Requests preempted (KV cache ran out) per second.",
)  # fmt: skip
_HITS = f"sum by ({{by}}) ({rate_either('vllm:prefix_cache_hits_total', 'vllm:gpu_prefix_cache_hits_total')})"
_LOOKUPS = f"sum by ({{by}}) ({rate_either('vllm:prefix_cache_queries_total', 'vllm:gpu_prefix_cache_queries_total')})"
PREFIX_CACHE_HITS_RATE = Query(
    "vllm_prefix_cache_hits", "rate", _HITS, "tokens/s", "Prompt tokens served from the prefix cache per second.",
)  # fmt: skip
PREFIX_CACHE_QUERIES_RATE = Query(
    "vllm_prefix_cache_queries", "rate", _LOOKUPS, "tokens/s",
    "Prompt tokens looked up in the prefix cache per second (the hit ratio's denominator).",
)  # fmt: skip
PREFIX_CACHE_HIT_RATE_V0 = Query(
    "vllm_gpu_prefix_cache_hit_rate", "mean",
    "avg by ({by}) (avg_over_time(vllm:gpu_prefix_cache_hit_rate{vsel}[{window}]) >= 0)", "ratio",
    "V0 engines' only prefix-cache signal (removed with V0's metrics, #18837): a gauge of the hit rate in "
    "blocks since the engine started (vLLM's CacheMetricData never resets), not the window's. V0 reports -1 "
    "when prefix caching is off: no data, not a rate.",
    record=False,
)  # fmt: skip
PREFIX_CACHE_HIT_RATIO = Query(
    "vllm_prefix_cache_hits", "ratio", f"({_HITS} / {_LOOKUPS} or {PREFIX_CACHE_HIT_RATE_V0.template})", "ratio",
    "Prefix-cache hit rate in tokens. The old gpu_prefix_cache_* counters counted blocks before vLLM #18003 "
    "(~0.9.0): the ratio is about the same in blocks, but a tier mixing such replicas with token-counting "
    "ones weighs them unevenly. A tier whose engines have no counters (V0) reads V0's hit-rate gauge, which "
    "is the rate since each engine started; where some replicas have counters, only those count.",
)  # fmt: skip
RUNNING = Query(
    "vllm_num_requests_running", "sum", "sum by ({by}) (vllm:num_requests_running{vsel})", "requests",
    "Requests in the running batches of the tier now.", window=None,
)  # fmt: skip
WAITING = Query(
    "vllm_num_requests_waiting", "sum",
    'sum by ({by}) (sum without (reason) (vllm:num_requests_waiting_by_reason{vsel:reason="capacity"})'
    " or vllm:num_requests_waiting{vsel})",
    "requests",
    "Requests waiting for capacity now: num_requests_waiting_by_reason{reason=\"capacity\"} where vLLM has "
    "it (since 2026-04 num_requests_waiting also counts deferred requests), else num_requests_waiting.",
    window=None,
)  # fmt: skip
BATCH_PER_REPLICA = Query(
    "vllm_num_requests_running_per_replica", "mean",
    "avg by ({by}) (sum by ({by:job,instance,pod,ReplicaId})"
    " (avg_over_time(vllm:num_requests_running{vsel}[{window}])))",
    "requests", "Mean running batch per replica over the window.",
)  # fmt: skip

_REPLICAS = "group by ({by:job,instance,pod,ReplicaId}) (last_over_time(vllm:num_requests_running{vsel}[{window}]))"
REPLICAS_UP = Query(
    "vllm_replicas_up", "count",
    zero_if_known(f"count by ({{by}}) ({_REPLICAS} and on (job, instance, pod) (up == 1))", _REPLICAS),
    "replicas", "Replicas (targets that exported vLLM engine series in the window) whose scrape is up now.",
)  # fmt: skip
REPLICAS_DOWN = Query(
    "vllm_replicas_down", "count",
    zero_if_known(f"count by ({{by}}) ({_REPLICAS} and on (job, instance, pod) (up == 0))", _REPLICAS),
    "replicas", "Replicas that exported vLLM engine series in the window and whose scrape fails now.",
)  # fmt: skip
_KSM_READY = ksm('kube_pod_status_ready{{condition="true"}}')
_TIER_PODS = f"* on (namespace, pod) group_left ({{by}}) {pod_tier()}"
REPLICAS_READY = Query(
    "kube_pod_status_ready", "count",
    zero_if_known(f"count by ({{by}}) (({_KSM_READY} == 1) {_TIER_PODS})", f"{_KSM_READY} {_TIER_PODS}"),
    "replicas",
    "Pods of the tier that Kubernetes reports ready (kube-state-metrics), joined by namespace/pod (exported_pod "
    "and exported_namespace too). 0 only where kube-state-metrics reports the tier's pods; without it the result "
    "is empty and planwatch counts the replicas up instead.",
)  # fmt: skip
COLD_START_P95 = Query(
    "kube_pod_cold_start_seconds", "p95",
    f"quantile by ({{by}}) (0.95, (({ksm('last_over_time(kube_pod_status_ready_time[{window}])')}"
    f" - {ksm('last_over_time(kube_pod_created[{window}])')})"
    f" unless on (namespace, pod) {ksm('kube_pod_created offset {window}')}) {_TIER_PODS})",
    "seconds",
    "95th percentile creation-to-ready time of the tier's pods created within the window (kube-state-metrics "
    "kube_pod_status_ready_time - kube_pod_created); empty when no pod started.",
    window="1h",
)  # fmt: skip
SPEC_DECODE_TOKENS_PER_STEP = Query(
    "vllm_spec_decode_tokens_per_step", "mean",
    "1 + sum by ({by}) (rate(vllm:spec_decode_num_accepted_tokens_total{vsel}[{window}]))"
    " / sum by ({by}) (rate(vllm:spec_decode_num_drafts_total{vsel}[{window}]))",
    "tokens",
    "Speculative decoding's mean acceptance length: tokens one decode step of a request emits (1 + accepted "
    "draft tokens per draft). Only engines started with --speculative-config export vllm:spec_decode_*; there "
    "the ITL histogram observes once per streamed output, i.e. per step, not per token.",
    record=False,
)  # fmt: skip
DATA_AGE = Query(
    "vllm_sample_age_seconds", "min", "min by ({by}) (time() - timestamp(vllm:num_requests_running{vsel}))",
    "seconds",
    "Age of the tier's freshest vLLM sample at evaluation time. Instant results are stamped with the "
    "evaluation time, so this is how staleness shows (remote stores, a Prometheus restart without "
    "staleness markers).",
    window=None, record=False,
)  # fmt: skip

QUERIES: tuple[Query, ...] = (
    KV_USAGE_MEAN, KV_USAGE_MAX, PREEMPTION_RATE, PREFIX_CACHE_HITS_RATE, PREFIX_CACHE_QUERIES_RATE,
    PREFIX_CACHE_HIT_RATE_V0, PREFIX_CACHE_HIT_RATIO, RUNNING, WAITING, BATCH_PER_REPLICA,
    REPLICAS_UP, REPLICAS_DOWN, REPLICAS_READY, COLD_START_P95, SPEC_DECODE_TOKENS_PER_STEP, DATA_AGE,
)  # fmt: skip
