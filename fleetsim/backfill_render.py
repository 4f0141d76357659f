"""One window's values as series groups, in a fixed family order (each family is written as one block).

Value formats: counts and token totals are whole numbers; second sums and Unix times keep milliseconds;
ratios keep 4 decimals (the live exposition rounds DCGM ratios to 4 too).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from fleetsim.aggregate_series import TierWindow
from fleetsim.backfill_gpu import GpuWindow
from fleetsim.backfill_layout import DCGM_DECIMALS, FamilyGroup, TierLayout, constant, labelled, target_labels
from fleetsim.backfill_text import SeriesGroup
from fleetsim.fleet import NAMESPACE
from fleetsim.metrics import DCGM_FIELDS, GATEWAY_FAMILIES, KSM_FAMILIES
from fleetsim.pods import Pod

__all__ = ["dcgm_groups", "gateway_groups", "ksm_groups", "vllm_groups"]

_MS, _RATIO = 3, 4
# family blocks: vLLM families in template order, then process/info/up, dcgm fields, gateway, ksm
_VLLM_EXTRA, _DCGM, _GATEWAY, _KSM = 1000, 2000, 3000, 4000


def vllm_groups(
    layout: TierLayout, values: TierWindow, steps: int, process_start: np.ndarray, serving: np.ndarray
) -> Iterator[FamilyGroup]:
    """Every vLLM series of the tier's pods: families, `_created`, process start, cache config; a pod
    that is not `serving` (failed: its /metrics answers 503) has none of them, only `up` 0."""
    pods = len(layout.pods)
    extra = [
        FamilyGroup(
            _VLLM_EXTRA,
            SeriesGroup(layout.vllm_prefixes("process_start_time_seconds "), constant(process_start, steps), _MS),
        ),
        FamilyGroup(
            _VLLM_EXTRA + 1,
            SeriesGroup(
                [labelled("vllm:cache_config_info", layout.cache_info, t) for t in layout.vllm_targets],
                constant(np.ones(pods), steps),
            ),
        ),
    ]
    for order, series in enumerate(layout.template.series):
        for group in _family(layout, series, values, order, steps, process_start):
            yield from _serving_only(group, serving)
    for group in extra:
        yield from _serving_only(group, serving)
    up = [labelled("up", {}, t) for t in layout.vllm_targets]
    yield FamilyGroup(_VLLM_EXTRA + 2, SeriesGroup(up, constant(serving.astype(float), steps)))


def _serving_only(group: FamilyGroup, serving: np.ndarray) -> Iterator[FamilyGroup]:
    """The group's rows of serving pods (rows are pod-major, the same number per pod)."""
    if serving.all():
        yield group
        return
    if not serving.any():
        return
    keep = np.repeat(serving, len(group.group.prefixes) // serving.size)
    prefixes = [p for p, k in zip(group.group.prefixes, keep, strict=True) if k]
    yield FamilyGroup(group.order, SeriesGroup(prefixes, np.asarray(group.group.values)[keep], group.group.decimals))


def _family(
    layout: TierLayout, series: Any, values: TierWindow, order: int, steps: int, process_start: np.ndarray
) -> Iterator[FamilyGroup]:
    """One family of fleetsim.exposition's template (`series` is its per-family prefix record)."""
    family = series.family
    if family.kind == "histogram":
        yield from _histogram(layout, series, values, order, steps)
    for label, prefix in series.value_prefixes:
        if family.kind == "counter":
            rows, decimals = _counter(values, family.key, label, layout.generation), 0
        else:
            rows, decimals = _gauge(values, family.key, label, steps), (_RATIO if "perc" in family.key else 0)
        yield FamilyGroup(order, SeriesGroup(layout.vllm_prefixes(prefix), rows, decimals))
    for prefix in series.created_prefixes:
        yield FamilyGroup(order, SeriesGroup(layout.vllm_prefixes(prefix), constant(process_start, steps), _MS))


def _counter(values: TierWindow, key: str, label: str | None, generation: str) -> np.ndarray:
    if label is None:
        return values.counters[key]
    rows = values.counters[f"{key}|{label}"]
    if key == "vllm:request_success" and generation != "v1" and label == "abort":
        rows = rows + values.counters[f"{key}|error"]  # V0 had no "error" reason (as fleetsim.exposition)
    return rows


def _gauge(values: TierWindow, key: str, label: str | None, steps: int) -> np.ndarray:
    pods = values.gauges["vllm:num_requests_running"].shape[0]
    if key == "vllm:num_requests_waiting_by_reason":
        return values.gauges["vllm:num_requests_waiting"] if label == "capacity" else np.zeros((pods, steps))
    if key == "vllm:engine_sleep_state":
        return np.full((pods, steps), 1.0 if label == "awake" else 0.0)
    return values.gauges[key]


def _histogram(layout: TierLayout, series: Any, values: TierWindow, order: int, steps: int) -> Iterator[FamilyGroup]:
    key = series.family.key
    buckets = values.buckets[key]  # (pods, T, le)
    pods, _, width = buckets.shape
    per_pod = [layout.vllm_prefixes(p) for p in series.bucket_prefixes]  # [le][pod]
    prefixes = [per_pod[le][pod] for pod in range(pods) for le in range(width)]
    yield FamilyGroup(order, SeriesGroup(prefixes, buckets.transpose(0, 2, 1).reshape(pods * width, steps)))
    yield FamilyGroup(order, SeriesGroup(layout.vllm_prefixes(series.count_prefix), buckets[:, :, -1]))
    decimals = _MS if key.endswith("_seconds") else 0
    yield FamilyGroup(order, SeriesGroup(layout.vllm_prefixes(series.sum_prefix), values.sums[key], decimals))


def dcgm_groups(
    layout: TierLayout, gpus: Sequence[GpuWindow], statics: Sequence[dict[str, float]], steps: int
) -> Iterator[FamilyGroup]:
    """Every dcgm field per GPU (a pod's GPUs read alike), then `up` of each pod's dcgm-exporter target."""
    counts = layout.gpu_counts()
    for order, field in enumerate(DCGM_FIELDS):
        rows = []
        for pod_gpus, window, static in zip(counts, gpus, statics, strict=True):
            row = window[field.name] if field.name in window else np.full(steps, static[field.name])
            rows.extend([row] * pod_gpus)
        values = np.vstack(rows)
        yield FamilyGroup(
            _DCGM + order, SeriesGroup(layout.dcgm_prefixes(field.name), values, DCGM_DECIMALS[field.name])
        )
    up = [labelled("up", {}, t) for t in layout.dcgm_targets]
    yield FamilyGroup(_DCGM + len(DCGM_FIELDS), SeriesGroup(up, constant(np.ones(len(layout.pods)), steps)))


def gateway_groups(
    tiers: list[str], users: np.ndarray, calls: np.ndarray, created: float, instance: str, steps: int
) -> Iterator[FamilyGroup]:
    """gateway_user_requests_total / gateway_model_calls_total{tier} (+ _created) and the target's up."""
    target = target_labels("gateway", instance)
    for i, ((stem, _, _), rows) in enumerate(zip(GATEWAY_FAMILIES, (users, calls), strict=True)):
        totals = [labelled(f"{stem}_total", {"tier": t}, target) for t in tiers]
        stamps = [labelled(f"{stem}_created", {"tier": t}, target) for t in tiers]
        yield FamilyGroup(_GATEWAY + i, SeriesGroup(totals, rows))
        yield FamilyGroup(_GATEWAY + i, SeriesGroup(stamps, constant(np.full(len(tiers), created), steps), _MS))
    yield FamilyGroup(_GATEWAY + 2, SeriesGroup([labelled("up", {}, target)], np.ones((1, steps))))


def ksm_groups(pods: Sequence[Pod], ready: np.ndarray, instance: str, steps: int) -> Iterator[FamilyGroup]:
    """kube_pod_created, kube_pod_status_ready{condition}, kube_pod_status_ready_time of ready pods; up."""
    target = target_labels("kube-state-metrics", instance)
    (created_name, _, _), (ready_name, _, _), (time_name, _, _) = KSM_FAMILIES
    own = [{"namespace": NAMESPACE, "pod": p.name, "uid": p.uid} for p in pods]
    created = np.array([p.created for p in pods])
    yield FamilyGroup(
        _KSM, SeriesGroup([labelled(created_name, o, target) for o in own], constant(created, steps), _MS)
    )
    flags = ready.astype(float)
    for condition, value in (("true", flags), ("false", 1.0 - flags), ("unknown", np.zeros(len(pods)))):
        prefixes = [labelled(ready_name, o | {"condition": condition}, target) for o in own]
        yield FamilyGroup(_KSM + 1, SeriesGroup(prefixes, constant(value, steps)))
    timed = [(o, p.ready_time) for o, p, r in zip(own, pods, ready, strict=True) if p.ready_time is not None and r]
    if timed:
        prefixes = [labelled(time_name, o, target) for o, _ in timed]
        yield FamilyGroup(_KSM + 2, SeriesGroup(prefixes, constant(np.array([t for _, t in timed]), steps), _MS))
    yield FamilyGroup(_KSM + 3, SeriesGroup([labelled("up", {}, target)], np.ones((1, steps))))
