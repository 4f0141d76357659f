"""What a path costs as it runs: tokens a per-token API would bill, GPUs a dedicated fleet holds.

Both are averages over a long window (a week by default): the serverless-against-dedicated question is one
of monthly volume, not of the last five minutes.
"""

from __future__ import annotations

from monitor.queries.fragments import dcgm
from monitor.queries.query import Query
from monitor.queries.traffic import GENERATION_TOKENS_RATE, PROMPT_TOKENS_RATE

__all__ = ["GPUS_MEAN", "QUERIES", "TOKENS_DONE", "TOKENS_RATE"]

TOKENS_RATE = Query(
    "vllm_billable_tokens", "rate", f"{PROMPT_TOKENS_RATE.template} + {GENERATION_TOKENS_RATE.template}",
    "tokens/s",
    "Prompt plus output tokens per second, cached prompt tokens included: the volume a per-token API bills.",
    window="7d", record=False,
)  # fmt: skip
# The pod-to-tier join of `fragments.dcgm_join`, taken at each step of the subquery instead of over the window,
# so a GPU counts only while its pod runs a replica of the tier. Devices as `gpu.GPU_COUNT` counts them: MIG
# slices report no GPU_UTIL, only GR_ENGINE_ACTIVE; `or` keeps a whole GPU reporting both once (set operators
# match on the labels without the metric name).
_GPUS_NOW = (
    f"count by ({{by}}) ({dcgm('(DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE)')}"
    " * on (namespace, pod) group_left ({by}) "
    'group by ({by:namespace,pod}) (vllm:num_requests_running{vsel:pod!=""}))'
)
GPUS_MEAN = Query(
    "DCGM_FI_DEV_GPU_UTIL", "gpus_mean", f"avg_over_time(({_GPUS_NOW})[{{window}}:{{step}}])", "GPUs",
    "GPUs allocated to the tier's replicas, averaged over the window: GPU-hours used per hour (a MIG slice "
    "counts as one device, as in the GPU count).",
    window="7d", step="30m", record=False,
)  # fmt: skip

_DONE = " + ".join(
    f"sum by ({{by}}) (increase({name}{{vsel}}[{{window}}]))"
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")
)
TOKENS_DONE = Query(
    "vllm_billable_tokens", "increase", _DONE, "tokens",
    "Prompt plus output tokens processed over the window: a batch job's progress since its run began.",
    window="1h", record=False,
)  # fmt: skip

QUERIES: tuple[Query, ...] = (TOKENS_RATE, GPUS_MEAN, TOKENS_DONE)
