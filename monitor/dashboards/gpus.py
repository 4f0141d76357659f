"""GPUs: dcgm-exporter's fields per tier, through the catalog's join of each GPU to the pod it serves."""

from __future__ import annotations

from monitor import queries as q
from monitor.dashboards.grafana import Dashboard, Panel, Row, Series

__all__ = ["dashboard"]


def _load() -> Row:
    return Row("Load", (
        Panel("GPU utilization", "Mean DCGM_FI_DEV_GPU_UTIL of the tier's GPUs (0-100: share of time a kernel "
              "ran; coarse, a busy GPU can still have headroom).",
              (Series(q.GPU_UTIL_MEAN),), unit="percent", min=0, max=100),
        Panel("HBM bandwidth activity", "Mean DCGM_FI_PROF_DRAM_ACTIVE of the tier's GPUs (0-1). Decode is "
              "memory-bound, so this follows decode load.",
              (Series(q.DRAM_ACTIVE_MEAN),), unit="percentunit", min=0, max=1),
    ))  # fmt: skip


def _memory_power() -> Row:
    return Row("Memory and power", (
        Panel("Framebuffer in use (fullest GPU)", "FB_USED / (FB_USED + FB_FREE) of the tier's fullest GPU. vLLM "
              "preallocates its KV cache, so this sits near gpu_memory_utilization; KV occupancy is on Plan vs "
              "production.", (Series(q.GPU_MEMORY_USED_RATIO),), unit="percentunit", min=0, max=1),
        Panel("Power per GPU", "Mean DCGM_FI_DEV_POWER_USAGE of the tier's GPUs.",
              (Series(q.GPU_POWER_MEAN),), unit="watt", min=0),
    ))  # fmt: skip


def _health() -> Row:
    return Row("Health", (
        Panel("GPUs with a new XID error", "GPUs of the tier whose last-XID value changed in the window (a new "
              "XID error); 0 where the tier has GPUs. DCGM_FI_DEV_XID_ERRORS holds the last XID code, not a count.",
              (Series(q.XID_GPUS),), unit="none", min=0, width=8),
        Panel("GPUs reporting", "GPUs allocated to the tier's pods that reported in the window.",
              (Series(q.GPU_COUNT),), unit="none", min=0, width=8),
        Panel("XID errors by GPU", "Which GPU (node, index, pod) changed its XID in the window, and how often.",
              (Series(q.XID_BY_GPU, ""),), kind="table", width=8,
              columns={"tier": "tier", "hostname": "node", "gpu": "gpu", "pod": "pod", "Value": "XID changes"}),
    ))  # fmt: skip


def dashboard() -> Dashboard:
    return Dashboard(
        uid="planwatch-gpus",
        title="planwatch / GPUs",
        description="dcgm-exporter per tier, each GPU joined to the tier of the pod it is allocated to. Generated "
        "by `python -m monitor.dashboards` from monitor/queries; do not edit by hand.",
        tier_values="vllm:num_requests_running",
        rows=(_load(), _memory_power(), _health()),
    )
