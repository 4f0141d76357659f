"""Prometheus text exposition (format 0.0.4) for every endpoint fleetsim serves, written by hand.

Why not prometheus_client's registry: one process serves hundreds of emulated replicas, each with its own
process_start_time and _created values, re-rendered at every scrape; pre-built line prefixes make that a
string join. The output matches prometheus_client 0.26's generate_latest() line for line (§1.1, §4):
HELP/TYPE per family, counters as `<name>_total` plus a `<name>_created` gauge family, histogram
`_bucket` (cumulative, `le` from floatToGoString, `+Inf` last) then `_count` then `_sum`, labels sorted
by name, values in Go-style float repr. dcgm-exporter keeps its own label order and prints integer
fields as integers (§2.2, §4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from prometheus_client.utils import floatToGoString

from fleetsim.metrics import (
    CACHE_CONFIG_HELP,
    DCGM_FIELDS,
    DCGM_LABELS,
    GATEWAY_FAMILIES,
    KSM_FAMILIES,
    V0_HIT_RATE,
    Family,
    Generation,
    VllmMetrics,
    families_for,
)

__all__ = [
    "CONTENT_TYPE",
    "VllmTemplate",
    "has_engine_label",
    "render_dcgm",
    "render_gateway",
    "render_ksm",
    "render_vllm",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DRIVER_VERSION = "550.90.07"


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(pairs: dict[str, str], order: Iterable[str] | None = None) -> str:
    keys = list(order) if order is not None else sorted(pairs)
    return "{" + ",".join(f'{k}="{_escape(pairs[k])}"' for k in keys if k in pairs) + "}" if keys else ""


def _header(name: str, kind: str, help_text: str) -> str:
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


@dataclass(frozen=True)
class _Series:
    family: Family
    header: str
    created_header: str
    value_prefixes: tuple[tuple[str | None, str], ...]  # (label value, "name{labels} ")
    created_prefixes: tuple[str, ...]
    bucket_prefixes: tuple[str, ...] = ()
    count_prefix: str = ""
    sum_prefix: str = ""


def has_engine_label(generation: Generation) -> bool:
    """V1 since #13923 labels every series with the engine index; fleetsim's legacy and v0 do not."""
    return generation in ("v1", "overlap")


class VllmTemplate:
    """Every line prefix of one engine's /metrics, built once per (model, generation, max_model_len, mode).

    `multiprocess` is vLLM with --api-server-count > 1 (PROMETHEUS_MULTIPROC_DIR): prometheus_client's
    MultiProcessCollector prints no `_created` series and no process_* metrics, and a histogram's `_sum`
    before its buckets.
    """

    def __init__(self, model_name: str, generation: Generation, max_model_len: int, multiprocess: bool = False):
        self.generation = generation
        self.multiprocess = multiprocess
        self.base = {"model_name": model_name} | ({"engine": "0"} if has_engine_label(generation) else {})
        self.series = tuple(
            self._series(f, name, max_model_len) for f in families_for(generation) for name in f.names(generation)
        )

    def _series(self, f: Family, name: str, max_model_len: int) -> _Series:
        stem = name.removesuffix("_total") if f.kind == "counter" else name
        header = _header(name, f.kind, f.help)
        with_created = f.kind != "gauge" and not self.multiprocess
        created_header = _header(f"{stem}_created", "gauge", f.help) if with_created else ""
        values = f.values_for(self.generation) if f.label else (None,)
        label_sets = [self.base | ({f.label: v} if f.label and v is not None else {}) for v in values]
        created = tuple(f"{stem}_created{_labels(ls)} " for ls in label_sets) if created_header else ()
        if f.kind != "histogram":
            prefixes = tuple((v, f"{name}{_labels(ls)} ") for v, ls in zip(values, label_sets, strict=True))
            return _Series(f, header, created_header, prefixes, created)
        bounds = [*map(floatToGoString, f.bucket_bounds(max_model_len, self.generation)), "+Inf"]
        buckets = tuple(f"{name}_bucket{_labels(self.base | {'le': le})} " for le in bounds)
        return _Series(
            f,
            header,
            created_header,
            (),
            created,
            buckets,
            f"{name}_count{_labels(self.base)} ",
            f"{name}_sum{_labels(self.base)} ",
        )

    def render(self, m: VllmMetrics, cache_config: dict[str, str], process_start: float) -> str:
        out: list[str] = [] if self.multiprocess else [
            _header("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds."),
            f"process_start_time_seconds {floatToGoString(process_start)}\n",
        ]  # fmt: skip
        created = floatToGoString(m.created_unix)
        for s in self.series:
            out.append(s.header)
            if s.family.kind == "histogram":
                cumulative = m.cumulative(s.family.key)
                total = f"{s.sum_prefix}{floatToGoString(m.sums[s.family.key])}\n"
                if self.multiprocess:
                    out.append(total)
                out.extend(f"{p}{floatToGoString(c)}\n" for p, c in zip(s.bucket_prefixes, cumulative, strict=True))
                out.append(f"{s.count_prefix}{floatToGoString(cumulative[-1])}\n")
                if not self.multiprocess:
                    out.append(total)
            else:
                out.extend(f"{p}{floatToGoString(self._value(m, s.family, v))}\n" for v, p in s.value_prefixes)
            if s.created_header:
                out.append(s.created_header)
                out.extend(f"{p}{created}\n" for p in s.created_prefixes)
        info = cache_config | ({"engine": "0"} if has_engine_label(self.generation) else {})
        out.append(_header("vllm:cache_config_info", "gauge", CACHE_CONFIG_HELP))
        out.append(f"vllm:cache_config_info{_labels(info)} 1.0\n")
        return "".join(out)

    def _value(self, m: VllmMetrics, f: Family, label: str | None) -> float:
        if f.key == V0_HIT_RATE:  # V0's CacheMetricData: hits over queries since the engine started
            queries = m.value("vllm:prefix_cache_queries")
            return m.value("vllm:prefix_cache_hits") / queries if queries else 0.0
        if label is None:
            return m.value(f.key)
        if f.label == "finished_reason" and self.generation != "v1" and label == "abort":
            return m.value(f.key, "abort") + m.value(f.key, "error")  # V0 had no "error" reason
        return m.value(f.key, label)


@lru_cache(maxsize=256)
def _template(model_name: str, generation: Generation, max_model_len: int, multiprocess: bool) -> VllmTemplate:
    return VllmTemplate(model_name, generation, max_model_len, multiprocess)


def render_vllm(
    m: VllmMetrics,
    model_name: str,
    generation: Generation,
    cache_config: dict[str, str],
    process_start: float,
    multiprocess: bool = False,
) -> str:
    """One vLLM engine's /metrics body."""
    return _template(model_name, generation, m.max_model_len, multiprocess).render(m, cache_config, process_start)


@dataclass(frozen=True)
class GpuView:
    """What dcgm-exporter knows of one GPU: identity labels and sampled field values."""

    labels: dict[str, str]
    values: dict[str, float]


def render_dcgm(gpus: list[GpuView]) -> str:
    """dcgm-exporter's /metrics: one HELP/TYPE per field, then a line per GPU, template label order."""
    out: list[str] = []
    for field in DCGM_FIELDS:
        rows = [(g.labels, g.values[field.name]) for g in gpus if field.name in g.values]
        if not rows:
            continue
        out.append(_header(field.name, field.kind, field.help))
        for labels, value in rows:
            text = str(int(value)) if field.integer else repr(round(value, 6))
            out.append(f"{field.name}{_labels(labels, DCGM_LABELS)} {text}\n")
    return "".join(out)


def dcgm_labels(
    gpu: int, uuid: str, pci_bus_id: str, model_name: str, hostname: str, pod: str, namespace: str
) -> dict[str, str]:
    return {
        "gpu": str(gpu),
        "UUID": uuid,
        "pci_bus_id": pci_bus_id,
        "device": f"nvidia{gpu}",
        "modelName": model_name,
        "Hostname": hostname,
        "DCGM_FI_DRIVER_VERSION": DRIVER_VERSION,
        "container": "vllm",
        "namespace": namespace,
        "pod": pod,
    }


@dataclass(frozen=True)
class PodView:
    """What kube-state-metrics knows of one pod."""

    namespace: str
    pod: str
    uid: str
    created: float
    ready: bool
    ready_time: float | None


def render_ksm(pods: list[PodView]) -> str:
    """kube_pod_created, kube_pod_status_ready{condition}, kube_pod_status_ready_time (when ready)."""
    (created_name, _, created_help), (ready_name, _, ready_help), (time_name, _, time_help) = KSM_FAMILIES
    out = [_header(created_name, "gauge", created_help)]
    out += [f"{created_name}{_ksm(p)} {floatToGoString(p.created)}\n" for p in pods]
    out.append(_header(ready_name, "gauge", ready_help))
    for p in pods:
        for condition, value in (("true", p.ready), ("false", not p.ready), ("unknown", False)):
            labels = {"namespace": p.namespace, "pod": p.pod, "uid": p.uid, "condition": condition}
            out.append(f"{ready_name}{_labels(labels)} {floatToGoString(float(value))}\n")
    out.append(_header(time_name, "gauge", time_help))
    out += [f"{time_name}{_ksm(p)} {floatToGoString(p.ready_time)}\n" for p in pods if p.ready and p.ready_time]
    return "".join(out)


def _ksm(p: PodView) -> str:
    return _labels({"namespace": p.namespace, "pod": p.pod, "uid": p.uid})


def render_gateway(counts: dict[str, tuple[float, float]], created: float) -> str:
    """gateway_user_requests_total{tier} and gateway_model_calls_total{tier}; counts = tier -> (users, calls)."""
    out: list[str] = []
    for position, (stem, kind, help_text) in enumerate(GATEWAY_FAMILIES):
        out.append(_header(f"{stem}_total", kind, help_text))
        out += [f"{stem}_total{_labels({'tier': t})} {floatToGoString(v[position])}\n" for t, v in counts.items()]
        out.append(_header(f"{stem}_created", "gauge", help_text))
        out += [f"{stem}_created{_labels({'tier': t})} {floatToGoString(created)}\n" for t in counts]
    return "".join(out)


def cache_config_labels(
    block_size: int, kv_dtype: str, gpu_memory_utilization: float, num_gpu_blocks: int, generation: Generation
) -> dict[str, str]:
    """vllm:cache_config_info labels: str() of CacheConfig fields (§1.5); the set differs by generation."""
    labels = {
        "block_size": str(block_size),
        "cache_dtype": "auto" if kv_dtype in ("bf16", "fp16") else kv_dtype,
        "calculate_kv_scales": "False",
        "enable_prefix_caching": "True",
        "gpu_memory_utilization": str(gpu_memory_utilization),
        "is_attention_free": "False",
        "num_cpu_blocks": "None",
        "num_gpu_blocks": str(num_gpu_blocks),
        "num_gpu_blocks_override": "None",
        "sliding_window": "None",
    }
    if generation in ("legacy", "v0"):
        return labels | {"cpu_offload_gb": "0", "swap_space": "4", "prefix_caching_hash_algo": "builtin"}
    return labels | {
        "prefix_caching_hash_algo": "sha256",
        "kv_cache_memory_bytes": "None",
        "kv_offloading_backend": "None",
        "kv_offloading_size": "None",
        "kv_sharing_fast_prefill": "False",
        "mamba_cache_dtype": "auto",
    }
