"""Built-in hardware catalog and numeric formats: the facts a plan can lean on without restating them.

Peak figures are the vendors' dense (no sparsity) numbers for SXM parts; a plan may override any field
under `gpus:` (for example a PCIe part, a different clock, or a measured bandwidth). The tensor-parallel
link is NVLink 4 on SXM parts (450 GB/s per direction, an all-reduce of a decode step's activations in
about 10 us) and PCIe without it (Gen5 x16: 64 GB/s; L40S Gen4: 32 GB/s; about 25 us through the host).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BUILTIN_GPUS", "DType", "GPUSpec"]


class DType(StrEnum):
    """Numeric formats for weights and KV cache."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"

    @property
    def bytes(self) -> float:
        """Bytes per element: 2 for 16-bit, 1 for 8-bit, 0.5 for 4-bit."""
        return {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}[self.value]

    @property
    def compute_format(self) -> str:
        """The tensor-core format matmuls run in: 8-bit weights use 8-bit math, int4 is dequantized to 16-bit."""
        return "fp8" if self in (DType.FP8, DType.INT8) else "bf16"


class GPUSpec(BaseModel):
    """One accelerator: memory, bandwidth and dense peak throughput per format."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    hbm_bytes: float = Field(gt=0, description="HBM capacity in bytes (decimal: 80 GB = 80e9).")
    hbm_bandwidth_bytes_per_second: float = Field(gt=0, description="Peak HBM bandwidth, bytes/s.")
    bf16_flops: float = Field(gt=0, description="Dense BF16 tensor-core peak, FLOP/s.")
    fp8_flops: float = Field(gt=0, description="Dense FP8/INT8 tensor-core peak, FLOP/s.")
    dcgm_model_name: str = Field(default="", description="modelName label dcgm-exporter reports.")
    power_watts: float = Field(default=700.0, gt=0, description="Board power limit (TDP), W.")
    link_bandwidth_bytes_per_second: float = Field(
        default=64e9, gt=0, description="GPU-to-GPU bandwidth per direction for tensor parallelism, bytes/s."
    )
    allreduce_latency_seconds: float = Field(
        default=25e-6, ge=0, description="Latency of one small all-reduce across the replica's GPUs, s."
    )

    def peak_flops(self, compute_format: str) -> float:
        return self.fp8_flops if compute_format == "fp8" else self.bf16_flops


BUILTIN_GPUS: dict[str, GPUSpec] = {
    "H100-SXM-80GB": GPUSpec(
        hbm_bytes=80e9,
        hbm_bandwidth_bytes_per_second=3.35e12,
        bf16_flops=989e12,
        fp8_flops=1979e12,
        dcgm_model_name="NVIDIA H100 80GB HBM3",
        power_watts=700.0,
        link_bandwidth_bytes_per_second=450e9,
        allreduce_latency_seconds=10e-6,
    ),
    "H200-141GB": GPUSpec(
        hbm_bytes=141e9,
        hbm_bandwidth_bytes_per_second=4.8e12,
        bf16_flops=989e12,
        fp8_flops=1979e12,
        dcgm_model_name="NVIDIA H200",
        power_watts=700.0,
        link_bandwidth_bytes_per_second=450e9,
        allreduce_latency_seconds=10e-6,
    ),
    "H100-PCIe-80GB": GPUSpec(
        hbm_bytes=80e9,
        hbm_bandwidth_bytes_per_second=2.0e12,
        bf16_flops=756e12,
        fp8_flops=1513e12,
        dcgm_model_name="NVIDIA H100 PCIe",
        power_watts=350.0,
    ),
    "L40S-48GB": GPUSpec(
        hbm_bytes=48e9,
        hbm_bandwidth_bytes_per_second=0.864e12,
        bf16_flops=362e12,
        fp8_flops=733e12,
        dcgm_model_name="NVIDIA L40S",
        power_watts=350.0,
        link_bandwidth_bytes_per_second=32e9,
    ),
}
