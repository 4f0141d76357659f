"""GPU signals from dcgm-exporter, joined to tiers through the pod each GPU is allocated to.

dcgm-exporter is a node daemon: its series carry the workload's `pod`/`namespace` (or `exported_pod`/
`exported_namespace` when scraped with honor_labels false) but not the tier, so every query here maps GPUs
to tiers through `fragments.pod_tier()`. Units as exported: GPU_UTIL is a percentage (0-100), PROF_* fields
are ratios (0-1), FB_* are MiB, power is W. `DCGM_FI_DEV_XID_ERRORS` holds the *last* XID code, not a count,
so "a GPU had an XID" is `changes(...) > 0`. dcgm-exporter samples every 30 s by default: use windows of a
minute or more.

MIG: every slice is a series of its own (labels `GPU_I_ID`, `GPU_I_PROFILE`), and a pod given a slice sees that
series only. Slices report no GPU_UTIL, so utilization there is `DCGM_FI_PROF_GR_ENGINE_ACTIVE` x 100 (the same
share of time the graphics engine is busy, finer grained) and devices are counted from whichever of the two
fields they report; H100 slices report no framebuffer fields either, so memory is judged on the devices that
report FB_USED/FB_FREE and is "no data" on a tier of such slices only. Device-level fields a slice repeats
(power) are the whole GPU's: power is taken once per physical GPU before the tier's mean.
"""

from __future__ import annotations

from monitor.queries.fragments import dcgm, dcgm_join, zero_if_known
from monitor.queries.query import Query

__all__ = [
    "DRAM_ACTIVE_MEAN",
    "GPU_COUNT",
    "GPU_MEMORY_USED_RATIO",
    "GPU_PODS",
    "GPU_POWER_MEAN",
    "GPU_UTIL_MEAN",
    "QUERIES",
    "TIER_PODS",
    "XID_BY_GPU",
    "XID_GPUS",
]


def _avg(field: str) -> str:
    return f"avg by ({{by}}) ({dcgm_join(f'avg_over_time({field}[{{window}}])')})"


# Per device, GPU_UTIL where it is reported, else (MIG slices) the graphics engine's active ratio in percent.
_UTIL = ("avg_over_time(DCGM_FI_DEV_GPU_UTIL[{window}])"
         " or 100 * avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[{window}])")  # fmt: skip
GPU_UTIL_MEAN = Query(
    "DCGM_FI_DEV_GPU_UTIL", "mean", f"avg by ({{by}}) ({dcgm_join(f'({_UTIL})')})", "percent",
    "Mean GPU utilization of the tier's GPUs, 0-100 (coarse: share of time a kernel ran); on MIG slices, which "
    "report no GPU_UTIL, 100 x DCGM_FI_PROF_GR_ENGINE_ACTIVE.",
)  # fmt: skip
DRAM_ACTIVE_MEAN = Query(
    "DCGM_FI_PROF_DRAM_ACTIVE", "mean", _avg("DCGM_FI_PROF_DRAM_ACTIVE"), "ratio",
    "Mean HBM bandwidth activity (0-1) of the tier's GPUs: decode is memory-bound, so this tracks decode load.",
)  # fmt: skip
# Power is a physical GPU's, repeated on each of its MIG slices: one value per (instance, hostname, gpu index)
# first, so a GPU holding three of the tier's slices weighs as one GPU, not three. Not the UUID: issue pastes
# show it masked, and the index is the physical GPU's on every slice.
_POWER_PER_GPU = (f"max by ({{by:instance,hostname,gpu}}) "
                  f"({dcgm_join('avg_over_time(DCGM_FI_DEV_POWER_USAGE[{window}])')})")  # fmt: skip
GPU_POWER_MEAN = Query(
    "DCGM_FI_DEV_POWER_USAGE", "mean", f"avg by ({{by}}) ({_POWER_PER_GPU})", "watts",
    "Mean power draw per physical GPU of the tier; a GPU whose MIG slices the tier holds counts once, with the "
    "whole GPU's draw (shared with whatever else runs on its other slices).",
)  # fmt: skip
_FB = (
    "avg_over_time(DCGM_FI_DEV_FB_USED[{window}]) / (avg_over_time(DCGM_FI_DEV_FB_USED[{window}])"
    " + avg_over_time(DCGM_FI_DEV_FB_FREE[{window}]))"
)
GPU_MEMORY_USED_RATIO = Query(
    "DCGM_FI_DEV_FB_USED", "used_ratio_max", f"max by ({{by}}) ({dcgm_join(f'({_FB})')})", "ratio",
    "Highest framebuffer share in use, FB_USED / (FB_USED + FB_FREE), of any GPU of the tier (FB_RESERVED, "
    "exported since dcgm-exporter 4.3.1, is left out of the denominator so older exporters compare).",
)  # fmt: skip
# max_over_time, not last_over_time: the latter keeps the metric name, and a GPU reporting both fields would
# then be two series.
_DEVICES = "(max_over_time(DCGM_FI_DEV_GPU_UTIL[{window}]) or max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[{window}]))"
_GPUS = dcgm_join(_DEVICES)
GPU_COUNT = Query(
    "DCGM_FI_DEV_GPU_UTIL", "gpus", f"count by ({{by}}) ({_GPUS})", "GPUs",
    "GPUs allocated to the tier's pods that reported in the window; a MIG slice counts as one device.",
)  # fmt: skip
# 0 only where the tier's GPUs report the XID field: an exporter whose counters leave it out (it is in the
# default set, but a custom CSV may drop it) says nothing about XID errors.
_XID_REPORTED = dcgm_join("max_over_time(DCGM_FI_DEV_XID_ERRORS[{window}])")
XID_GPUS = Query(
    "DCGM_FI_DEV_XID_ERRORS", "gpus_changed",
    zero_if_known(f"count by ({{by}}) ({dcgm_join('changes(DCGM_FI_DEV_XID_ERRORS[{window}]) > 0')})",
                  _XID_REPORTED),
    "GPUs",
    "GPUs of the tier whose last-XID value changed in the window (a new XID error); 0 where the tier's GPUs "
    "report the field, unknown where they do not.",
)  # fmt: skip
XID_BY_GPU = Query(
    "DCGM_FI_DEV_XID_ERRORS", "changes",
    f"max by ({{by:hostname,gpu,pod}}) ({dcgm_join('changes(DCGM_FI_DEV_XID_ERRORS[{window}]) > 0')})",
    "changes", "Evidence: which GPU (hostname, gpu index, pod) changed its XID in the window, and how often.",
    group_by=("hostname", "gpu", "pod"), record=False,
)  # fmt: skip

# Why a tier's GPU values are "no data": the two sides of the join, read only then (`monitor.observe.caveats`),
# so neither is in the catalog's QUERIES (no recording rule, no tier value). GPU_PODS is fleet-wide, whatever
# selector renders it: every GPU dcgm-exporter reported, counted by the pod it is labelled with (the exporter's
# own pod when no workload holds it). TIER_PODS: the tier's vLLM replicas by pod, `pod` empty where the targets
# carry none.
GPU_PODS = Query(
    "DCGM_FI_DEV_GPU_UTIL", "gpus_by_pod",
    f"count by (namespace, pod) ({dcgm(_DEVICES)})",
    "GPUs", "Every GPU dcgm-exporter reported in the window, by the namespace and pod it is labelled with.",
    group_by=("namespace", "pod"), record=False,
)  # fmt: skip
TIER_PODS = Query(
    "vllm_num_requests_running", "replicas_by_pod",
    "count by (namespace, pod) (last_over_time(vllm:num_requests_running{vsel}[{window}]))",
    "replicas", "The tier's vLLM replicas by namespace and pod: the key GPUs join on.",
    group_by=("namespace", "pod"), record=False,
)  # fmt: skip

QUERIES: tuple[Query, ...] = (
    GPU_UTIL_MEAN, DRAM_ACTIVE_MEAN, GPU_POWER_MEAN, GPU_MEMORY_USED_RATIO, GPU_COUNT, XID_GPUS, XID_BY_GPU,
)  # fmt: skip
