"""What a tier's measurements mean on the engine it runs, said where a user reads them: pure, no I/O.

Three facts change how planwatch's numbers read, and all are said in the measurements' reasons:
- every replica count, the freshness check and the join of GPUs to tiers key on `vllm:num_requests_running`,
  so a tier without that series has none of them, and the reason says why (and what was found instead);
- under speculative decoding vLLM observes its ITL histogram once per output a request streams, and one
  speculative step streams 1 + the accepted draft tokens: ITL is then the time per step, not per token;
- GPU values join dcgm-exporter's series to a tier on (namespace, pod), so "no data" there has four causes a
  user fixes differently: no dcgm-exporter at all, vLLM targets without a pod label, GPUs labelled with other
  pods (the exporter's own when pod mapping is off or no workload holds them), or a field the GPUs do not report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from monitor.observe.model import Measurement

__all__ = ["GPU_FIELDS", "KEY_SERIES", "Pods", "absent_key_series", "explain_gpus", "gpus_unexplained",
           "speculative_decoding"]  # fmt: skip

KEY_SERIES = "vllm:num_requests_running"
_TPOT_FIELDS = ("tpot_p50", "tpot_p95", "tpot_p99")


def absent_key_series(selector: str, found_instead: str = "") -> str:
    """The reason every replica-keyed value of a tier is unknown when `KEY_SERIES` matches nothing."""
    reason = (
        f"no {KEY_SERIES} series for {selector} in the last 5 minutes: freshness, the replica count and the GPU "
        "join all key on it; check that the vLLM targets are scraped and carry the tier's labels"
    )
    return f"{reason}; {found_instead}" if found_instead else reason


def speculative_decoding(values: Mapping[str, Measurement], tokens_per_step: Measurement) -> dict[str, Measurement]:
    """`values` with the ITL and TPOT readings explained where the tier decodes speculatively."""
    out = dict(values)
    if tokens_per_step.value is None:
        return out
    per_step = f"{tokens_per_step.value:.2f}"
    itl = out.get("itl_p95")
    if itl is not None and itl.known:
        out["itl_p95"] = replace(itl, reason=(
            f"speculative decoding: ITL is observed once per streamed output of {per_step} tokens on average "
            "(time per step, not per token); TPOT is read per request"))  # fmt: skip
    for name in _TPOT_FIELDS:
        tpot = out.get(name)
        if tpot is not None and not tpot.known and tpot.reason.startswith("no observations"):
            out[name] = replace(tpot, reason=(
                "speculative decoding without the per-request TPOT histogram (vllm:request_time_per_output_token_"
                f"seconds, vLLM >= 0.11): ITL counts steps of {per_step} tokens, so it cannot stand in"))  # fmt: skip
    return out


# Each GPU field and the dcgm-exporter field it is read from.
GPU_FIELDS: dict[str, str] = {
    "gpu_utilization": "DCGM_FI_DEV_GPU_UTIL (or DCGM_FI_PROF_GR_ENGINE_ACTIVE)",
    "gpu_dram_active": "DCGM_FI_PROF_DRAM_ACTIVE",
    "gpu_memory_used_fraction": "DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE",
    "gpu_power_watts": "DCGM_FI_DEV_POWER_USAGE",
    "gpu_xid_errors": "DCGM_FI_DEV_XID_ERRORS",
}
_SHOWN = 3


@dataclass(frozen=True)
class Pods:
    """One side of the GPU join: (namespace, pod) -> how many series (GPUs, or replicas) carry it; "" where a
    series has no such label."""

    counts: Mapping[tuple[str, str], float]

    @classmethod
    def of(cls, rows: Sequence[tuple[Mapping[str, str], float]]) -> Pods:
        return cls({(labels.get("namespace", ""), labels.get("pod", "")): value for labels, value in rows})

    @property
    def total(self) -> int:
        return round(sum(self.counts.values()))

    def named(self) -> str:
        keys = sorted(self.counts)
        shown = ", ".join(f"{ns}/{pod}" if ns else pod for ns, pod in keys[:_SHOWN])
        return shown + (f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else "")


def _no_data(m: Measurement | None) -> bool:
    return m is not None and not m.known and m.reason.startswith("no data")


def gpus_unexplained(values: Mapping[str, Measurement]) -> bool:
    """Whether some GPU field of a tier is "no data" (and the join's two sides are worth reading)."""
    return any(_no_data(values.get(name)) for name in GPU_FIELDS)


def _join_reason(gpus: Pods, replicas: Pods, window: str) -> str:
    if gpus.total == 0:
        return (f"no data: Prometheus holds no dcgm-exporter series ({GPU_FIELDS['gpu_utilization']}) in the last "
                f"{window}: scrape dcgm-exporter to read GPU values")  # fmt: skip
    if not replicas.counts or all(pod == "" for _, pod in replicas.counts):
        return (
            "no data: the tier's vLLM targets carry no pod label, and GPUs join a tier on (namespace, pod); "
            "scrape vLLM through Kubernetes service discovery (or label its targets with their pod)"
        )
    return (f"no data: no GPU dcgm-exporter reports is labelled with a pod of the tier's replicas "
            f"({replicas.named()}): its {gpus.total} GPU(s) carry {gpus.named()}; GPUs join a tier on (namespace, "
            "pod), and a GPU labelled with the exporter's own pod is one its Kubernetes pod mapping did not assign "
            "(mapping off, or no workload holds the GPU)")  # fmt: skip


def explain_gpus(values: Mapping[str, Measurement], gpus: Pods, replicas: Pods) -> dict[str, Measurement]:
    """`values` with each "no data" GPU field saying why. No GPU value known: the join found no GPU of the tier
    (`gpus` is every GPU dcgm-exporter reported by its pod, `replicas` the tier's pods). Some known: the tier's
    GPUs do not report that field (MIG slices have no framebuffer; a custom counters CSV may drop XID)."""
    out = dict(values)
    joined = any(values[name].known for name in GPU_FIELDS if name in values)
    for name, field in GPU_FIELDS.items():
        m = values.get(name)
        if m is None or not _no_data(m):
            continue
        window = m.window or "window"
        reason = (f"no data: the tier's GPUs report no {field}, so it is unknown, not 0" if joined
                  else _join_reason(gpus, replicas, window))  # fmt: skip
        out[name] = replace(m, reason=reason)
    return out
