"""What ran and what happened to it: engine configuration, GPU models, and the failure events the capstone's
measurement plan asks to recognise in history (a replica down, a 100K-token request).

`vllm:cache_config_info` carries no `model_name` (so `{sel}`, not `{vsel}`) and its label set changes between
releases: it is read whole and its labels named by the reader. dcgm-exporter's `modelName` names the GPU.
"""

from __future__ import annotations

from monitor.queries.fragments import dcgm, pod_tier, zero_if_known
from monitor.queries.query import Query

__all__ = ["ENGINE_CONFIG", "GPUS_NOW", "GPU_MODELS", "PROMPTS_OVER_100K", "QUERIES", "REPLICAS_DOWN_MAX"]

ENGINE_CONFIG = Query(
    "vllm_cache_config_info", "last", "last_over_time(vllm:cache_config_info{sel}[{window}])", "info",
    "The engine's CacheConfig as labels (cache_dtype, block_size, enable_prefix_caching, ...), one series per "
    "engine: what was measured, written down with the results.",
    window="7d", group_by=("job", "instance", "engine"), record=False,
)  # fmt: skip
GPU_MODELS = Query(
    "DCGM_FI_DEV_GPU_UTIL", "models",
    f"count by ({{by:modelName}}) ({dcgm('last_over_time(DCGM_FI_DEV_GPU_UTIL[{window}])')} * on (namespace, pod) "
    f"group_left ({{by}}) {pod_tier()})",
    "GPUs", "GPUs of the tier by dcgm-exporter's modelName (the hardware a measurement was taken on).",
    window="7d", group_by=("modelName",), record=False,
)  # fmt: skip
GPUS_NOW = Query(
    "DCGM_FI_DEV_GPU_UTIL", "gpus_now",
    f"count by ({{by}}) ({dcgm('DCGM_FI_DEV_GPU_UTIL')} * on (namespace, pod) group_left ({{by}}) "
    'group by ({by:namespace,pod}) (vllm:num_requests_running{vsel:pod!=""}))',
    "GPUs", "GPUs allocated to the tier's running replicas at this instant (for range queries: GPUs per step).",
    window=None, record=False,
)  # fmt: skip
# `le` as floatToGoString writes it: "100000.0" from the Python client, "100000" from Go exporters.
_OVER = "sum by ({by}) (increase(vllm:request_prompt_tokens_bucket{vsel:le=%s}[{window}]))"
_OVER_100K = " - ".join(_OVER % le for le in ('"+Inf"', '~"100000(\\\\.0)?"'))
PROMPTS_OVER_100K = Query(
    "vllm_request_prompt_tokens", "over_100k", _OVER_100K, "requests",
    "Requests whose prompt exceeded 100,000 tokens in the window (the +Inf bucket less the 100000 bucket); no "
    "data where the tier's buckets stop below 100000 (max_model_len under 100K: such a prompt is refused).",
    window="7d", record=False,
)  # fmt: skip
_DOWN_NOW = (
    "count by ({by}) (group by ({by:job,instance,pod}) (last_over_time(vllm:num_requests_running{vsel}[10m])) "
    "and on (job, instance, pod) (up == 0))"
)
REPLICAS_DOWN_MAX = Query(
    "vllm_replicas_down", "max",
    zero_if_known(f"max_over_time(({_DOWN_NOW})[{{window}}:{{step}}])",
                  "group by ({by:job,instance,pod}) (last_over_time(vllm:num_requests_running{vsel}[{window}]))"),
    "replicas",
    "Most replicas down at once over the window (a scrape failing for a replica that exported vLLM series).",
    window="7d", step="5m", record=False,
)  # fmt: skip

QUERIES: tuple[Query, ...] = (ENGINE_CONFIG, GPU_MODELS, GPUS_NOW, PROMPTS_OVER_100K, REPLICAS_DOWN_MAX)
