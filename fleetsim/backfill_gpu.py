"""dcgm-exporter fields per GPU per scrape step, from the aggregate replica's activity.

The formulas are fleetsim.pods.Pod.sample_gpus's, applied to arrays (busy, memory and compute seconds,
tokens per cell instead of per 30-second sample); the fields that do not depend on activity (frame
buffer, memory clock) are read from one real `sample_gpus` call per pod, so they cannot drift.
tests/fleetsim_backfill/test_gpu.py checks the array form against sample_gpus.
"""

from __future__ import annotations

import copy

import numpy as np

from fleetsim.pods import Pod

__all__ = ["ACTIVITY_FIELDS", "GpuWindow", "gpu_fields", "static_fields"]

ACTIVITY_FIELDS = (
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
)

GpuWindow = dict[str, np.ndarray]  # field -> (T,) values of one pod's GPUs (all GPUs of a pod read alike)


def static_fields(pod: Pod, at: float, failed: bool = False) -> dict[str, float]:
    """Fields independent of load (frame buffer, memory clock, XID), from Pod.sample_gpus on a copy of the
    pod, as it is or failed (replica-down: XID 79, frame buffer released)."""
    scratch = copy.deepcopy(pod)
    if failed:
        scratch.fail(at, None)
    scratch.sample_gpus(at, 1.0, 1.0, 1.0)
    values = scratch.gpus[0].values
    return {k: v for k, v in values.items() if k not in ACTIVITY_FIELDS}


def gpu_fields(
    pod: Pod,
    busy: np.ndarray,
    memory: np.ndarray,
    compute: np.ndarray,
    tokens: np.ndarray,
    step: float,
    energy_mj: float,
    nvlink_bytes: float,
) -> GpuWindow:
    """Activity-driven fields over one window of one pod (inputs are seconds / tokens per step); the two
    counters continue from `energy_mj` and `nvlink_bytes`."""
    eff = pod.replica.config.engine
    busy_share = np.minimum(1.0, busy / step)
    active = busy_share > 0
    dram = np.where(active, np.minimum(1.0, memory * eff.bandwidth_efficiency / step), 0.0)
    tensor = np.where(active, np.minimum(1.0, compute * eff.compute_efficiency / step), 0.0)
    tdp = pod.gpu_spec.power_watts
    power = 0.1 * tdp + 0.9 * tdp * np.minimum(1.0, 0.25 * busy_share + 0.45 * dram + 0.45 * tensor)
    tp = pod.tier.tensor_parallel
    per_token = 2 * pod.model.layers * pod.model.hidden_size * 2 * 2 * (tp - 1) / tp
    return {
        "DCGM_FI_DEV_SM_CLOCK": np.where(
            busy_share < 0.01, 345.0, 1980.0 - 300.0 * np.maximum(0.0, power / tdp - 0.85)
        ),
        "DCGM_FI_DEV_GPU_TEMP": 30.0 + 45.0 * power / tdp,
        "DCGM_FI_DEV_POWER_USAGE": np.round(power, 3),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": energy_mj + np.cumsum(power * step * 1000.0),
        "DCGM_FI_DEV_GPU_UTIL": np.round(100.0 * busy_share),
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": nvlink_bytes + np.cumsum(tokens * per_token),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": np.round(busy_share, 4),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": np.round(tensor, 4),
        "DCGM_FI_PROF_DRAM_ACTIVE": np.round(dram, 4),
    }
