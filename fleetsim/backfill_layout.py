"""Which series a backfill writes, named exactly as Prometheus stores what it scrapes from `fleetsim serve`.

A stored series = the exporter's labels (fleetsim.exposition builds them; the vLLM prefixes are taken
from its `VllmTemplate`, so names, `le` strings and label sets cannot drift) + the target labels the live
file_sd gives each target (fleetsim.server.fleet_targets):

    vllm, dcgm-exporter   job, instance, tier, pod, namespace
    gateway, kube-state-metrics   job, instance

`instance` is the address the live emulator listens on (`fleetsim serve --listen`, default
127.0.0.1:9400): every target shares it and only the metrics path differs, so backfill must be told the
same address for history and live series to be one series. With honor_labels false (Prometheus's
default, and fleetsim.promstack's), an exposed label that a target label also sets is stored as
`exported_<name>`: dcgm-exporter's own `pod` and `namespace` become `exported_pod` / `exported_namespace`.
`up` is written for every target too (1, or 0 for a failed pod), as Prometheus records it per scrape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fleetsim.backfill_text import SeriesGroup
from fleetsim.exposition import VllmTemplate, cache_config_labels, dcgm_labels, has_engine_label
from fleetsim.fleet import NAMESPACE
from fleetsim.metrics import DCGM_FIELDS, Generation
from fleetsim.pods import Pod
from fleetsim.replica import BLOCK_SIZE

__all__ = [
    "DCGM_DECIMALS",
    "DEFAULT_INSTANCE",
    "FamilyGroup",
    "TierLayout",
    "constant",
    "labelled",
    "target_labels",
]

DEFAULT_INSTANCE = "127.0.0.1:9400"
_SECONDS_DECIMALS, _RATIO_DECIMALS = 3, 4


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def labelled(name: str, exposed: Mapping[str, str], target: Mapping[str, str]) -> bytes:
    """`name{labels}` as stored: target labels win, a clashing exposed label becomes exported_<name>."""
    merged = {(f"exported_{k}" if k in target else k): v for k, v in exposed.items()} | dict(target)
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(merged.items()))
    return f"{name}{{{body}}}".encode()


def target_labels(job: str, instance: str, pod: Pod | None = None) -> dict[str, str]:
    labels = {"job": job, "instance": instance}
    if pod is not None:
        labels |= {"tier": pod.tier.name, "pod": pod.name, "namespace": NAMESPACE}
    return labels


def _with_target(prefix: str, target: Mapping[str, str]) -> bytes:
    """Add target labels to an exposition line prefix 'name{a="b"} ' (exposed vLLM labels never clash)."""
    head = prefix.rstrip()
    extra = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(target.items()))
    if head.endswith("}"):
        return f"{head[:-1]},{extra}}}".encode()
    return f"{head}{{{extra}}}".encode()


@dataclass(frozen=True)
class FamilyGroup:
    """A group to render, with its position in the family order (families are written contiguously)."""

    order: int
    group: SeriesGroup


class TierLayout:
    """The series of one tier's pods: vLLM per pod, dcgm per GPU."""

    def __init__(self, pods: list[Pod], generation: Generation, instance: str) -> None:
        self.pods = pods
        self.generation = generation
        first = pods[0]
        self.max_model_len = first.replica.config.max_model_len
        self.template = VllmTemplate(first.model.served_name or first.tier.model, generation, self.max_model_len)
        self.vllm_targets = [target_labels("vllm", instance, p) for p in pods]
        self.dcgm_targets = [target_labels("dcgm-exporter", instance, p) for p in pods]
        config = first.replica.config
        self.cache_info = cache_config_labels(
            BLOCK_SIZE,
            first.tier.kv_cache_dtype.value,
            first.tier.gpu_memory_utilization,
            config.num_gpu_blocks,
            generation,
        ) | ({"engine": "0"} if has_engine_label(generation) else {})

    def vllm_prefixes(self, prefix: str) -> list[bytes]:
        return [_with_target(prefix, t) for t in self.vllm_targets]

    def dcgm_prefixes(self, field: str) -> list[bytes]:
        out = []
        for pod, target in zip(self.pods, self.dcgm_targets, strict=True):
            model = pod.gpu_spec.dcgm_model_name or pod.tier.gpu
            for g in pod.gpus:
                exposed = dcgm_labels(g.index, g.uuid, g.pci_bus_id, model, g.node, pod.name, NAMESPACE)
                out.append(labelled(field, exposed, target))
        return out

    def gpu_counts(self) -> list[int]:
        return [len(p.gpus) for p in self.pods]


def constant(values: np.ndarray, steps: int) -> np.ndarray:
    """(S,) per-series constants as an (S, T) view."""
    return np.broadcast_to(np.asarray(values, dtype=float)[:, None], (values.size, steps))


DCGM_DECIMALS = {f.name: (0 if f.integer else _RATIO_DECIMALS) for f in DCGM_FIELDS} | {
    "DCGM_FI_DEV_POWER_USAGE": _SECONDS_DECIMALS,
    "DCGM_FI_DEV_GPU_TEMP": _SECONDS_DECIMALS,
    "DCGM_FI_DEV_SM_CLOCK": _SECONDS_DECIMALS,
}
