"""Pods: one vLLM replica with its GPUs, its lifecycle and what kube-state-metrics and dcgm-exporter see.

Lifecycle: starting (weights load for the cold start; the vLLM server is not listening, so its target
is not in file_sd; FB_USED grows as weights load) -> ready (takes traffic) -> draining (scale-down: no new
traffic, finishes what it has) -> gone. A failure (`fail`) kills the process: in-flight requests end with
"error", the vLLM target answers 503 (up == 0), XID 79 is reported and FB is released; a restart is a new
process (every counter back to 0, a new process_start_time_seconds) with a new cold start.

GPU telemetry (dcgm-exporter samples every `interval` seconds, §2.2): from the replica's busy, memory and
compute seconds over the window:
  GPU_UTIL = 100 x busy share; DRAM_ACTIVE = memory seconds x bandwidth efficiency / window (bytes moved
  over peak bandwidth); PIPE_TENSOR_ACTIVE = compute seconds x compute efficiency / window (FLOPs over peak);
  POWER = idle + (TDP - idle) x min(1, 0.25 busy + 0.45 DRAM + 0.45 tensor), idle = 10% of TDP;
  FB_USED = gpu_memory_utilization x HBM + CUDA context; NVLink bytes = TP all-reduce traffic,
  2 x layers x hidden x 2 bytes x 2 (TP-1)/TP per token.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

from fleetsim.metrics import VllmMetrics
from fleetsim.replica import Replica, Request
from monitor.plan.catalog import GPUSpec
from monitor.plan.model import ModelSpec, Tier

__all__ = ["GpuState", "NodePool", "Phase", "Pod"]

Phase = Literal["starting", "ready", "draining", "failed"]
MIB = 2**20
CUDA_CONTEXT_MIB = 512
XID_FALLEN_OFF_BUS = 79
_PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


@dataclass
class GpuState:
    """One GPU's identity (dcgm labels) and its latest sampled fields."""

    index: int
    uuid: str
    node: str
    values: dict[str, float] = field(default_factory=dict)
    energy_mj: float = 0.0
    nvlink_bytes: float = 0.0

    @property
    def pci_bus_id(self) -> str:
        return f"00000000:{_PCI_BUSES[self.index % len(_PCI_BUSES)]:02X}:00.0"


class NodePool:
    """GPU nodes of 8 GPUs per GPU type; a pod's GPUs sit on one node (tensor parallel over NVLink)."""

    GPUS_PER_NODE = 8

    def __init__(self) -> None:
        self.free: dict[str, list[int]] = {}
        self.kind: dict[str, str] = {}

    def allocate(self, gpu_type: str, count: int) -> tuple[str, list[int]]:
        for node, slots in self.free.items():
            if self.kind[node] == gpu_type and len(slots) >= count:
                taken, self.free[node] = slots[:count], slots[count:]
                return node, taken
        node = f"gpu-node-{len(self.free):02d}"
        self.kind[node] = gpu_type
        self.free[node] = list(range(count, self.GPUS_PER_NODE))
        return node, list(range(count))

    def release(self, node: str, indices: list[int]) -> None:
        self.free[node] = sorted([*self.free[node], *indices])


@dataclass
class Pod:
    name: str
    tier: Tier
    model: ModelSpec
    gpu_spec: GPUSpec
    replica: Replica
    created: float
    ready_at: float
    process_start: float
    gpus: list[GpuState]
    uid: str = ""
    phase: Phase = "starting"
    ready_time: float | None = None  # kube_pod_status_ready_time, once ready
    held_failed: bool = False  # failed by a scenario: stays down while the scenario lasts
    restart_at: float | None = None
    drain_deadline: float | None = None

    @property
    def metrics(self) -> VllmMetrics:
        return self.replica.metrics

    def become_ready(self, now: float) -> bool:
        """starting -> ready once the cold start is over; the vLLM server starts listening then."""
        if self.phase != "starting" or now < self.ready_at:
            return False
        self.phase, self.ready_time = "ready", self.ready_at
        self.replica.now = max(self.replica.now, self.ready_at)
        self.metrics.reset(self.process_start)
        return True

    def restart(self, now: float, cold_start: float) -> None:
        """A new process after a failure: counters from 0, a new process start, a new cold start."""
        self.phase, self.process_start, self.ready_at = "starting", now, now + cold_start
        self.restart_at, self.held_failed = None, False
        self.replica.restart(now)
        self.metrics.reset(now)

    def fail(self, now: float, restart_after: float | None) -> list[Request]:
        finished = self.replica.abort_all("error")
        self.phase, self.ready_time = "failed", None
        self.restart_at = None if restart_after is None else now + restart_after
        return finished

    def sample_gpus(self, now: float, window: float, bandwidth_eff: float, compute_eff: float) -> None:
        """Turn the replica's activity since the last sample into dcgm fields, then reset it."""
        act = self.replica.activity
        serving = self.phase in ("ready", "draining") and window > 0
        busy = min(1.0, act.busy / window) if serving else 0.0
        dram = min(1.0, act.memory * bandwidth_eff / window) if busy else 0.0
        tensor = min(1.0, act.compute * compute_eff / window) if busy else 0.0
        tdp = self.gpu_spec.power_watts
        power = 0.1 * tdp + 0.9 * tdp * min(1.0, 0.25 * busy + 0.45 * dram + 0.45 * tensor)
        tp = self.tier.tensor_parallel
        nvlink = act.tokens * 2 * self.model.layers * self.model.hidden_size * 2 * 2 * (tp - 1) / tp
        fb_used, fb_total, reserved = self._fb_mib(now)
        for g in self.gpus:
            g.energy_mj += power * window * 1000.0
            g.nvlink_bytes += nvlink
            g.values = {
                "DCGM_FI_DEV_SM_CLOCK": 345.0 if busy < 0.01 else 1980.0 - 300.0 * max(0.0, power / tdp - 0.85),
                "DCGM_FI_DEV_MEM_CLOCK": 2619.0,
                "DCGM_FI_DEV_GPU_TEMP": 30.0 + 45.0 * power / tdp,
                "DCGM_FI_DEV_POWER_USAGE": round(power, 3),
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": g.energy_mj,
                "DCGM_FI_DEV_GPU_UTIL": round(100.0 * busy),
                "DCGM_FI_DEV_XID_ERRORS": XID_FALLEN_OFF_BUS if self.phase == "failed" else 0.0,
                "DCGM_FI_DEV_FB_FREE": fb_total - reserved - fb_used,
                "DCGM_FI_DEV_FB_USED": fb_used,
                "DCGM_FI_DEV_FB_RESERVED": reserved,
                "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": g.nvlink_bytes,
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE": round(busy, 4),
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": round(tensor, 4),
                "DCGM_FI_PROF_DRAM_ACTIVE": round(dram, 4),
            }
        act.busy = act.memory = act.compute = act.tokens = 0.0

    def _fb_mib(self, now: float) -> tuple[float, float, float]:
        """(used, total, reserved) MiB per GPU: vLLM claims gpu_memory_utilization x HBM once loaded."""
        total = float(int(self.gpu_spec.hbm_bytes / MIB))
        reserved = float(int(total * 0.006))
        full = float(int(self.tier.gpu_memory_utilization * self.gpu_spec.hbm_bytes / MIB)) + CUDA_CONTEXT_MIB
        if self.phase == "failed":
            used = 0.0
        elif self.phase == "starting":
            loaded = (now - self.process_start) / max(self.ready_at - self.process_start, 1e-9)
            used = CUDA_CONTEXT_MIB + float(int((full - CUDA_CONTEXT_MIB) * min(max(loaded, 0.0), 1.0)))
        else:
            used = full
        used = min(used, total - reserved)
        return used, total, reserved


def pod_uid(seed: int, name: str) -> str:
    """Stable per pod name and seed, as a Kubernetes UID looks."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"fleetsim/{seed}/{name}"))


def gpu_uuid(seed: int, node: str, index: int) -> str:
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"fleetsim/{seed}/{node}/{index}"))
