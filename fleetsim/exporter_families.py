"""The families fleetsim emits beside vLLM's: dcgm-exporter's fields, kube-state-metrics' pod families and
the API gateway's counters (names, types, help texts, and dcgm-exporter's label order).

Apart from fleetsim.metrics because none of them changes with the vLLM generation, the axis that module is
organised around. `Kind` is declared here, below fleetsim.metrics, so the vLLM families can share it without
an import cycle; fleetsim.metrics re-exports everything here, so callers keep one import for the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DCGM_FIELDS", "DCGM_LABELS", "GATEWAY_FAMILIES", "KSM_FAMILIES", "DcgmField", "Kind"]

Kind = Literal["counter", "gauge", "histogram"]


# §2.1 / §4: dcgm-exporter fields fleetsim emits (name, type, help as in default-counters.csv, integer?).
@dataclass(frozen=True)
class DcgmField:
    name: str
    kind: Kind
    help: str
    integer: bool


DCGM_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    DcgmField("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", True),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
    DcgmField("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", True),
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    DcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", True),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer memory free (in MiB).", True),
    DcgmField("DCGM_FI_DEV_FB_USED", "gauge", "Frame buffer memory used (in MiB).", True),
    DcgmField("DCGM_FI_DEV_FB_RESERVED", "gauge", "Frame buffer memory reserved (in MiB).", True),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
        True,
    ),
    DcgmField("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", False),
    DcgmField("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", False),
    DcgmField(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        False,
    ),
)
# dcgm-exporter's label order (§2.2): fixed labels, driver label, then sorted k8s attributes.
DCGM_LABELS = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "DCGM_FI_DRIVER_VERSION",
    "container",
    "namespace",
    "pod",
)

# kube-state-metrics v2.8+ pod families (name, type, help).
KSM_FAMILIES: tuple[tuple[str, Kind, str], ...] = (
    ("kube_pod_created", "gauge", "Unix creation timestamp"),
    ("kube_pod_status_ready", "gauge", "Describes whether the pod is ready to serve requests."),
    ("kube_pod_status_ready_time", "gauge", "Readiness achieved time in unix timestamp for a pod."),
)

# The API gateway in front of the tiers: user requests vs model calls (tool-call fan-out).
GATEWAY_FAMILIES: tuple[tuple[str, Kind, str], ...] = (
    ("gateway_user_requests", "counter", "User requests received by the gateway, by the tier of the first call."),
    ("gateway_model_calls", "counter", "Model calls the gateway sent to a tier (tool calls included)."),
)
